import AssentCrypto
import Foundation
import Logging
import Synchronization

/// What every service shares: the store, the limits, the clock and the logger.
public struct ServerEnvironment: Sendable {
    public var store: any AssentStore
    public var policy: SecurityPolicy
    public var logger: Logger
    /// The current time; tests move it.
    public var now: @Sendable () -> Date
    /// Where operation status changes are delivered, if anywhere.
    public var webhook: WebhookSettings?
    /// The push services notifications go through, if any.
    public var push: PushSettings?
    /// The limits of guessable endpoints.
    public var rateLimits = RateLimits()
    /// The reverse proxies whose `X-Forwarded-For` names the client the per-address limits count (none by default).
    public var trustedProxies = TrustedProxies()
    /// The OpenID provider (issuer, token lifetimes, CIBA limits).
    public var openID = OpenIDSettings()
    /// Two-factor login (lifetimes, tries, password hashing).
    public var tfa = TFASettings()
    /// How the outbox (webhooks, pushes) retries.
    public var outbox = OutboxPolicy()
    /// Wakes this process's outbox dispatcher after a write that added messages.
    public let outboxWakeup = Wakeup()
    /// Wakes this process's live event streams of a user.
    public let events = EventHub()
    /// How often a live stream sends a heartbeat and re-checks its token (default 15 s).
    public var streamHeartbeat: Duration = .seconds(15)
    /// Applications read so far, by key (immutable records, so safe to keep per process).
    let applications = ApplicationCache()
    /// Inside ``inOneCommit(_:)``: the changes to announce once the commit is done.
    private var announcements: Announcements?

    public init(
        store: any AssentStore, policy: SecurityPolicy = .default, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }, webhook: WebhookSettings? = nil, push: PushSettings? = nil
    ) {
        self.store = store
        self.policy = policy
        self.logger = logger
        self.now = now
        self.webhook = webhook
        self.push = push
    }

    var nowMillis: Millis { now().millis }

    /// Runs `body` with an environment whose store writes commit once, together, when `body` returns (see
    /// ``AssentStore/inOneCommit(_:)``); status changes it announces reach the outbox dispatcher and live streams
    /// after that commit, so nobody reads the state before it. Inside another such call, `body` joins it.
    func inOneCommit<T: Sendable>(_ body: (ServerEnvironment) async throws -> T) async throws -> T {
        if announcements != nil { return try await body(self) }
        let pending = Announcements()
        let value = try await store.inOneCommit { store in
            var scoped = self
            scoped.store = store
            scoped.announcements = pending
            return try await body(scoped)
        }
        for userId in pending.all { announceChange(userId: userId) }
        return value
    }

    /// A status change was written with its outbox messages: wakes the dispatcher and the user's live streams
    /// (after the commit, inside ``inOneCommit(_:)``).
    func announceChange(userId: String?) {
        if let announcements {
            announcements.add(userId)
            return
        }
        outboxWakeup.signal()
        if let userId { events.publish(userId: userId) }
    }

    /// Appends an audit event; a failure to audit is logged, never hidden.
    func audit(
        _ type: AuditEventType, activation: ActivationRecord? = nil, userId: String? = nil, actor: String,
        _ detail: String
    )
        async
    {
        let event = AuditEvent(
            id: nil, at: nowMillis, type: type.rawValue, activationId: activation?.id,
            userId: userId ?? activation?.userId,
            actor: actor, detail: detail)
        do {
            try await store.appendAudit(event)
        } catch {
            logger.error(
                "audit write failed",
                metadata: ["audit.type": "\(type.rawValue)", "error": "\(String(reflecting: error))"])
        }
    }

    /// Reads the activation, applies `change`, and writes it back if nobody changed it meanwhile; retries on a
    /// collision with fresh data. `change` returns the result, or throws to abort without writing.
    func updateActivation<Result: Sendable>(
        id: String, _ change: (inout ActivationRecord) throws -> Result
    ) async throws -> (ActivationRecord, Result) {
        for _ in 0..<32 {
            guard var activation = try await store.activation(id: id) else {
                throw AssentServerError.activationNotFound()
            }
            let version = activation.version
            let result = try change(&activation)
            activation.updatedAt = nowMillis
            if try await store.updateActivation(activation, expectedVersion: version) {
                activation.version = version + 1
                return (activation, result)
            }
        }
        throw AssentServerError.conflict()
    }
}

/// Changes written inside one commit, announced after it.
private final class Announcements: Sendable {
    private let users = Mutex<[String?]>([])

    func add(_ userId: String?) { users.withLock { $0.append(userId) } }

    var all: [String?] { users.withLock { $0 } }
}
