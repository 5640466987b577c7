import AssentModel
import Foundation
import Hummingbird
import Prometheus

/// `GET /metrics`: the Prometheus exposition. Besides what the server counts as it goes (requests, push attempts,
/// rate-limit refusals, witness failures), each scrape reads what only the database knows: whether this server is
/// ready, the outbox's backlog per channel and the audit chain's unsealed tail. Series an alert reads are there from
/// the first scrape, at 0, so that a rule over them has something to compare. `deploy/grafana` and
/// `deploy/prometheus` read these names; `MonitoringTests` holds them to what this answers.
struct MetricsController {
    let registry: PrometheusCollectorRegistry
    let schema: any SchemaStore
    let outbox: any OutboxStore
    let audit: any AuditChainStore
    let clock: WallClock
    let drain: DrainState

    /// Every channel of the one outbox, reported even when empty.
    static let channels: [OutboxChannel] = [.webhook, .push, .email, .phone, .ciba, .logout, .notice]

    init(
        registry: PrometheusCollectorRegistry, schema: any SchemaStore, outbox: any OutboxStore,
        audit: any AuditChainStore, clock: WallClock, drain: DrainState
    ) {
        (self.registry, self.schema, self.outbox, self.audit, self.clock) = (registry, schema, outbox, audit, clock)
        self.drain = drain
        for service in PushPlatform.allCases {
            for outcome in PushDeliveryRecord.Outcome.allCases {
                _ = registry.makeCounter(
                    descriptor: PushSender.attempts,
                    labels: [("service", service.rawValue), ("outcome", outcome.rawValue)])
            }
        }
        for scope in [TFAAccountService.failureScope, "operator.account"] {
            _ = registry.makeCounter(descriptor: RateLimiter.slowed, labels: [("scope", scope)])
        }
        for kind in ["file", "syslog", "webhook"] {
            _ = registry.makeCounter(descriptor: AuditChainService.witnessFailures, labels: [("witness", kind)])
        }
    }

    func addRoutes(to router: Router<AssentRequestContext>) {
        router.get("metrics", use: metrics)
    }

    @Sendable func metrics(_ request: Request, context: AssentRequestContext) async throws -> Response {
        await refresh()
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
            body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
    }

    /// Reads the database's part: readiness as `/health/ready` judges it, the outbox's backlog, the audit chain.
    /// A part the database does not answer keeps its last value; `assent_ready` says it is down.
    func refresh() async {
        let state = try? await schema.schemaState()
        let ready = Readiness(schema: state, draining: drain.isStopping).isReady
        registry.makeGauge(descriptor: Self.ready).set(ready ? 1.0 : 0.0)
        let now = clock.millis
        if let backlog = try? await outbox.outboxBacklog() {
            let byChannel = Dictionary(backlog.map { ($0.channel, $0) }, uniquingKeysWith: { first, _ in first })
            for channel in Set(Self.channels).union(byChannel.keys) {
                let labels = [("channel", channel.rawValue)]
                let entry = byChannel[channel]
                registry.makeGauge(descriptor: Self.outboxPending, labels: labels).set(Double(entry?.pending ?? 0))
                registry.makeGauge(descriptor: Self.outboxOldest, labels: labels).set(
                    entry.map { Double(max(0, now - $0.oldest)) / 1000 } ?? 0)
            }
        }
        if let unsealed = try? await audit.unsealedAuditCount() {
            registry.makeGauge(descriptor: Self.auditUnsealed).set(Double(unsealed))
        }
        if let checkpoint = try? await audit.latestAuditCheckpoint() {
            registry.makeGauge(descriptor: Self.auditCheckpointAge).set(Double(max(0, now - checkpoint.at)) / 1000)
        }
    }

    static var ready: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "assent", metricName: "ready", unitName: "",
            helpText: "1 when this server should get traffic (database up, schema current, not draining), else 0.")
    }
    static var outboxPending: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "assent", subsystem: "outbox", metricName: "pending", unitName: "messages",
            helpText: "Messages still to deliver, by channel.")
    }
    static var outboxOldest: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "assent", subsystem: "outbox", metricName: "oldest_pending_age", unitName: "seconds",
            helpText: "Age of the oldest message still to deliver, by channel (0 when none is).")
    }
    static var auditUnsealed: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "assent", subsystem: "audit", metricName: "unsealed", unitName: "events",
            helpText: "Audit events not yet sealed into the hash chain.")
    }
    static var auditCheckpointAge: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "assent", subsystem: "audit", metricName: "last_checkpoint_age", unitName: "seconds",
            helpText: "Time since the newest signed audit checkpoint (absent before the first).")
    }
}
