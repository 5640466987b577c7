import Foundation
import Logging
import Synchronization

/// The time every service reads; tests move it.
public struct WallClock: Sendable {
    public let now: @Sendable () -> Date

    public init(_ now: @escaping @Sendable () -> Date = { Date() }) { self.now = now }

    /// Now, in milliseconds since 1970.
    var millis: Millis { now().millis }
}

/// Appends audit events; a failure to audit is logged, never hidden.
struct Auditor: Sendable {
    let store: any AuditStore
    let clock: WallClock
    let logger: Logger

    /// Appends an event about `application` (by default the activation's; `nil`: the organisation's own action).
    func callAsFunction(
        _ type: AuditEventType, activation: ActivationRecord? = nil, userId: String? = nil,
        application: String? = nil, actor: String, _ detail: String
    ) async {
        let event = AuditEvent(
            id: nil, at: clock.millis, type: type.rawValue, activationId: activation?.id,
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

    /// The same auditor writing through `store` (a commit's).
    func writing(to store: any AuditStore) -> Auditor { Auditor(store: store, clock: clock, logger: logger) }
}

/// Tells this process's outbox dispatcher and the user's live streams that a status change was written with its
/// outbox messages; inside a commit (``Committer``), once the commit is done, so nobody reads the state before it.
struct Announcer: Sendable {
    let outboxWakeup: Wakeup
    let events: EventHub
    /// Inside a commit: the users whose changes wait for it.
    fileprivate var pending: PendingAnnouncements?

    init(outboxWakeup: Wakeup, events: EventHub) {
        self.outboxWakeup = outboxWakeup
        self.events = events
    }

    var inCommit: Bool { pending != nil }

    func changed(userId: String?) {
        if let pending {
            pending.add(userId)
            return
        }
        outboxWakeup.signal()
        if let userId { events.publish(userId: userId) }
    }

    /// An announcer that holds what it is told until ``release()``.
    fileprivate func holding() -> Announcer {
        var held = self
        held.pending = PendingAnnouncements()
        return held
    }

    /// Announces what was held.
    fileprivate func release() {
        guard let pending else { return }
        var direct = self
        direct.pending = nil
        for userId in pending.all { direct.changed(userId: userId) }
    }
}

/// Changes written inside one commit, announced after it.
private final class PendingAnnouncements: Sendable {
    private let users = Mutex<[String?]>([])

    func add(_ userId: String?) { users.withLock { $0.append(userId) } }

    var all: [String?] { users.withLock { $0 } }
}

/// Runs a workflow whose writes commit together (``AssentStore/inOneCommit(_:)``): the body gets `Service` rebuilt
/// over the commit's store, with an announcer that holds the status changes until the commit is done. Inside another
/// commit, the body joins it.
struct Committer<Service: Sendable>: Sendable {
    private let store: any AssentStore
    private let announcer: Announcer
    private let build: @Sendable (any AssentStore, Announcer) -> Service

    /// `build` makes the service over a store and an announcer: the composition root's recipe for it.
    init(
        store: any AssentStore, announcer: Announcer,
        build: @escaping @Sendable (any AssentStore, Announcer) -> Service
    ) {
        self.store = store
        self.announcer = announcer
        self.build = build
    }

    func callAsFunction<T: Sendable>(_ body: (Service) async throws -> T) async throws -> T {
        if announcer.inCommit { return try await body(build(store, announcer)) }
        let held = announcer.holding()
        let build = build
        let value = try await store.inOneCommit { store in try await body(build(store, held)) }
        held.release()
        return value
    }
}

extension ActivationStore {
    /// Reads the activation, applies `change`, and writes it back if nobody changed it meanwhile; retries on a
    /// collision with fresh data. `change` returns the result, or throws to abort without writing.
    func updateActivation<Result: Sendable>(
        id: String, at clock: WallClock, _ change: (inout ActivationRecord) throws -> Result
    ) async throws -> (ActivationRecord, Result) {
        for _ in 0..<32 {
            guard var activation = try await activation(id: id) else {
                throw AssentServerError.activationNotFound()
            }
            let version = activation.version
            let result = try change(&activation)
            activation.updatedAt = clock.millis
            if try await updateActivation(activation, expectedVersion: version) {
                activation.version = version + 1
                return (activation, result)
            }
        }
        throw AssentServerError.conflict()
    }
}
