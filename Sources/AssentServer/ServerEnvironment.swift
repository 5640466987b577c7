import AssentCrypto
import Foundation
import Logging
import Prometheus
import Synchronization

/// What every service shares: the store, the limits, the clock and the logger.
///
/// A value whose fields live in one shared, immutable box: services hold an environment each and are made per
/// request, so a copy is one reference (the fields are ≈ 1.2 KB with some thirty references, which every copy
/// retained and every async frame holding a service carried). Setting a field puts the changed fields in a new box.
public struct ServerEnvironment: Sendable {
    private struct Values: Sendable {
        var store: any AssentStore
        var policy: SecurityPolicy
        var logger: Logger
        var now: @Sendable () -> Date
        var webhook: WebhookSettings?
        var push: PushSettings?
        var rateLimits = RateLimits()
        var trustedProxies = TrustedProxies()
        var egress = Egress()
        var openID = OpenIDSettings()
        var tfa = TFASettings()
        var outbox = OutboxPolicy()
        var audit = AuditSettings()
        var consoleAPIKeySignIn = false
        var consoleSessions = ConsoleSessionSettings()
        let outboxWakeup = Wakeup()
        let events = EventHub()
        var streamHeartbeat: Duration = .seconds(15)
        var keyRingInterval: Duration = .seconds(5)
        let applications = ApplicationCache()
        var announcements: Announcements?
        let metrics = PrometheusCollectorRegistry()
        let auditSealing = TryLock()
    }

    private final class Box: Sendable {
        let values: Values
        init(_ values: Values) { self.values = values }
    }

    private var box: Box

    /// Changes fields: a new box, so that copies made before keep theirs.
    private mutating func change(_ body: (inout Values) -> Void) {
        var values = box.values
        body(&values)
        box = Box(values)
    }

    public var store: any AssentStore {
        get { box.values.store }
        set { change { $0.store = newValue } }
    }
    public var policy: SecurityPolicy {
        get { box.values.policy }
        set { change { $0.policy = newValue } }
    }
    public var logger: Logger {
        get { box.values.logger }
        set { change { $0.logger = newValue } }
    }
    /// The current time; tests move it.
    public var now: @Sendable () -> Date {
        get { box.values.now }
        set { change { $0.now = newValue } }
    }
    /// How the server reaches URLs others chose (Web Push endpoints, webhooks, callbacks): the only way it does.
    public var egress: Egress {
        get { box.values.egress }
        set { change { $0.egress = newValue } }
    }
    /// Where operation status changes are delivered, if anywhere.
    public var webhook: WebhookSettings? {
        get { box.values.webhook }
        set { change { $0.webhook = newValue } }
    }
    /// How the audit chain is sealed, signed and kept.
    public var audit: AuditSettings {
        get { box.values.audit }
        set { change { $0.audit = newValue } }
    }
    /// Held while this process seals the audit chain.
    var auditSealing: TryLock { box.values.auditSealing }
    /// The process's metrics, served at `/metrics`.
    public var metrics: PrometheusCollectorRegistry { box.values.metrics }
    /// The push services notifications go through, if any.
    public var push: PushSettings? {
        get { box.values.push }
        set { change { $0.push = newValue } }
    }
    /// The limits of guessable endpoints.
    public var rateLimits: RateLimits {
        get { box.values.rateLimits }
        set { change { $0.rateLimits = newValue } }
    }
    /// The reverse proxies whose `X-Forwarded-For` names the client the per-address limits count (none by default).
    public var trustedProxies: TrustedProxies {
        get { box.values.trustedProxies }
        set { change { $0.trustedProxies = newValue } }
    }
    /// The OpenID provider (issuer, token lifetimes, CIBA limits).
    public var openID: OpenIDSettings {
        get { box.values.openID }
        set { change { $0.openID = newValue } }
    }
    /// Whether the console also takes an operator API key at sign-in (break-glass; operator accounts otherwise).
    public var consoleAPIKeySignIn: Bool {
        get { box.values.consoleAPIKeySignIn }
        set { change { $0.consoleAPIKeySignIn = newValue } }
    }
    /// How long a console session lasts: idle, and at most.
    public var consoleSessions: ConsoleSessionSettings {
        get { box.values.consoleSessions }
        set { change { $0.consoleSessions = newValue } }
    }
    /// Two-factor login (lifetimes, tries, password hashing).
    public var tfa: TFASettings {
        get { box.values.tfa }
        set { change { $0.tfa = newValue } }
    }
    /// How the outbox (webhooks, pushes) retries.
    public var outbox: OutboxPolicy {
        get { box.values.outbox }
        set { change { $0.outbox = newValue } }
    }
    /// Wakes this process's outbox dispatcher after a write that added messages.
    public var outboxWakeup: Wakeup { box.values.outboxWakeup }
    /// Wakes this process's live event streams of a user.
    public var events: EventHub { box.values.events }
    /// How often a live stream sends a heartbeat and re-checks its token (default 15 s).
    public var streamHeartbeat: Duration {
        get { box.values.streamHeartbeat }
        set { change { $0.streamHeartbeat = newValue } }
    }
    /// How often this process re-reads a file key ring, seals with the key the database names and reports the keys
    /// it holds (default 5 s).
    public var keyRingInterval: Duration {
        get { box.values.keyRingInterval }
        set { change { $0.keyRingInterval = newValue } }
    }
    /// Applications read so far, by key (immutable records, so safe to keep per process).
    var applications: ApplicationCache { box.values.applications }
    /// Inside ``inOneCommit(_:)``: the changes to announce once the commit is done.
    private var announcements: Announcements? {
        get { box.values.announcements }
        set { change { $0.announcements = newValue } }
    }

    public init(
        store: any AssentStore, policy: SecurityPolicy = .default, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }, webhook: WebhookSettings? = nil, push: PushSettings? = nil
    ) {
        box = Box(Values(store: store, policy: policy, logger: logger, now: now, webhook: webhook, push: push))
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
            scoped.change {
                $0.store = store
                $0.announcements = pending
            }
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

    /// Appends an audit event about `application` (by default the activation's; `nil`: the organisation's own
    /// action); a failure to audit is logged, never hidden.
    func audit(
        _ type: AuditEventType, activation: ActivationRecord? = nil, userId: String? = nil,
        application: String? = nil, actor: String, _ detail: String
    )
        async
    {
        let event = AuditEvent(
            id: nil, at: nowMillis, type: type.rawValue, activationId: activation?.id,
            userId: userId ?? activation?.userId, actor: actor, detail: detail,
            applicationId: application ?? activation?.applicationId)
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

/// A lock that is taken or not, never waited for.
final class TryLock: Sendable {
    private let held = Mutex(false)

    /// Takes the lock; `false` when it is held.
    func tryAcquire() -> Bool {
        held.withLock { held in
            guard !held else { return false }
            held = true
            return true
        }
    }

    func release() { held.withLock { $0 = false } }
}
