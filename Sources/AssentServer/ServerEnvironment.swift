import AssentCrypto
import Foundation
import Logging
import Prometheus
import Synchronization

/// The server's configuration and its process-wide parts: the store, the settings, the clock, the logger, the
/// outbox's wakeup and the event hub. The composition root (``Services``, the router, the background services)
/// reads it to build every service once with exactly what that service uses; no service holds it.
///
/// A value whose fields live in one shared, immutable box, so a copy is one reference; setting a field puts the
/// changed fields in a new box (tests change a copy's settings).
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
        var traceRequests = false
        var consoleSessions = ConsoleSessionSettings()
        let outboxWakeup = Wakeup()
        let events = EventHub()
        let drain = DrainState()
        var streamHeartbeat: Duration = .seconds(15)
        var keyRingInterval: Duration = .seconds(5)
        let applications = ApplicationCache()
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
    /// Whether each request is served in a span of its own (the tracer is bootstrapped: `serve --otlp-endpoint`).
    public var traceRequests: Bool {
        get { box.values.traceRequests }
        set { change { $0.traceRequests = newValue } }
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
    /// Whether this process drains before it stops (readiness 503, `Connection: close` on every answer).
    public var drain: DrainState { box.values.drain }
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

    public init(
        store: any AssentStore, policy: SecurityPolicy = .default, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }, webhook: WebhookSettings? = nil, push: PushSettings? = nil
    ) {
        box = Box(Values(store: store, policy: policy, logger: logger, now: now, webhook: webhook, push: push))
    }

    /// Now, in milliseconds since 1970 (tests write rows with it).
    var nowMillis: Millis { now().millis }
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
