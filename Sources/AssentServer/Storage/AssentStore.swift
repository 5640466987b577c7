import AssentCrypto
import AssentModel
import Foundation

/// Everything the server persists. All shared state lives here, never in process memory, so several server
/// processes can share one PostgreSQL database.
///
/// Security state changes are single conditional statements: ``updateActivation(_:expectedVersion:)`` only
/// succeeds if nobody changed the row since it was read, so concurrent requests cannot both win.
public protocol AssentStore: SchemaStore, ApplicationStore, ApplicationVersionStore, OperatorStore,
    OperatorPasskeyStore,
    OperatorPhoneStore,
    ActivationStore, ReplayGuard,
    APIKeyStore,
    OperationStore, ApplicationPushStore, ApplicationBrandingStore, ApplicationWebhookStore,
    ApplicationRateLimitStore, OutboxStore,
    DeviceEventStore, RateLimitStore, PushRegistrationStore, PushDeliveryStore, AuditStore, AuditChainStore,
    OpenIDStore, TFAStore,
    PasskeyStore,
    BackupCodeStore, NoticeStore, WebStore,
    ConsoleStore, KeyRingStore, RADIUSClientStore
{
    /// Creates or upgrades the schema. Safe to run from several processes at once.
    /// - Throws: ``SchemaNewerThanServer`` when a newer server migrated the database.
    func migrate() async throws
    /// Closes connections.
    func shutdown() async throws
    /// Runs `body` against a store whose writes become durable together, with one commit, when `body` returns.
    /// PostgreSQL: one transaction, and a thrown error undoes every write. SQLite: every write is durable when it
    /// returns (group commit), so `body` gets this store and what it wrote before a thrown error stays.
    func inOneCommit<T: Sendable>(_ body: (any AssentStore) async throws -> T) async throws -> T

    /// Deletes expired temporary keys and replay-guard entries.
    func purgeExpired(before: Millis) async throws
}

/// The schema's version, as readiness reports it.
public protocol SchemaStore: Sendable {
    /// Where the schema stands against this build's migrations (reads the applied versions; throws when the
    /// database cannot be reached).
    func schemaState() async throws -> SchemaState
}

/// The one outbox of every delivery channel (webhooks, push, CIBA callbacks, codes).
public protocol OutboxStore: Sendable {
    /// Leases up to `limit` messages of `channels` that are due at `now` and not leased by another process to
    /// `owner` until `until`, in one statement, and returns them oldest first. Concurrent callers never get the
    /// same message.
    func claimOutboxItems(channels: [OutboxChannel], owner: String, now: Millis, until: Millis, limit: Int)
        async throws -> [OutboxItem]
    /// Records an attempt of a message `owner` leased: delivered, to be retried, or abandoned.
    func recordOutboxAttempt(id: Int64, owner: String, attempts: Int, result: OutboxAttempt, now: Millis)
        async throws
    /// Gives up `owner`'s leases of messages still pending (a process stopping), so another process may deliver them
    /// at once instead of after the lease; returns how many.
    @discardableResult
    func releaseOutboxLeases(owner: String) async throws -> Int
    /// Deletes delivered and abandoned messages finished before `before`, and the undelivered messages of
    /// `undeliverable` channels (no sender configured) recorded before it.
    func purgeOutbox(before: Millis, undeliverable: [OutboxChannel]) async throws
    /// Every message about `subject`, oldest first (for tests and diagnostics: no index serves it, so it reads the
    /// whole outbox).
    func outboxItems(subject: String) async throws -> [OutboxItem]
    /// The messages still to deliver, per channel that has any: how many, and when the oldest was recorded (for
    /// `/metrics`; the state index serves it).
    func outboxBacklog() async throws -> [OutboxBacklog]
}

/// A channel's messages still to deliver.
public struct OutboxBacklog: Sendable, Equatable {
    public var channel: OutboxChannel
    public var pending: Int
    /// When the oldest of them was recorded.
    public var oldest: Millis
}

/// The device event log the live streams read.
public protocol DeviceEventStore: Sendable {
    /// The user's device events after `after` (oldest first).
    func deviceEvents(userId: String, after: Int64, limit: Int) async throws -> [DeviceEventRecord]
    /// The newest device event's id (0 when there is none): where a new stream starts.
    func latestDeviceEventId() async throws -> Int64
    /// Deletes device events recorded before `before`.
    func purgeDeviceEvents(before: Millis) async throws
    /// Whether other processes' device events are announced (``listenForDeviceEvents(_:)``): PostgreSQL.
    var announcesDeviceEvents: Bool { get }
    /// Calls `onUser` with the user of every device event any process writes, until cancelled; returns at once
    /// where the database cannot announce them (SQLite: one process, which announces its own writes).
    func listenForDeviceEvents(_ onUser: @escaping @Sendable (String) -> Void) async throws
}

/// The one rate limiter's counters.
public protocol RateLimitStore: Sendable {
    /// Counts one hit of `key` at `now` in its open window, or opens a window of `window` milliseconds at 1 when
    /// none is open; returns the count and when the window ends.
    func hitRateLimit(key: String, now: Millis, window: Millis) async throws -> (count: Int, windowEnd: Millis)
    /// The hits of `key` in the window that is open at `now`, if any.
    func rateLimit(key: String, now: Millis) async throws -> (count: Int, windowEnd: Millis)?
    /// Deletes the counters of windows that ended before `before`.
    func purgeRateLimits(before: Millis) async throws
    /// Deletes the counter `key` and every counter whose key starts with `prefix`; returns how many there were.
    func clearRateLimits(key: String, prefix: String) async throws -> Int
}

/// Push registrations of activations.
public protocol PushRegistrationStore: Sendable {
    /// Stores the activation's push registration, replacing an earlier one.
    func putPushRegistration(_ registration: PushRegistrationRecord) async throws
    /// The activation's push registration.
    func pushRegistration(activationId: String) async throws -> PushRegistrationRecord?
    /// Deletes the activation's registration if it is still the one registered at `registeredAt` (a device that
    /// registered a new token meanwhile keeps it); returns whether one was deleted.
    func deletePushRegistration(activationId: String, registeredAt: Millis) async throws -> Bool
}
