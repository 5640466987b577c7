import AssentCrypto
import Foundation
import Hummingbird
import Logging
import Prometheus
import ServiceLifecycle
import UnixSignals

/// Builds the Assent HTTP application over a store: device endpoints, operator API, health and metrics.
public enum AssentServerApplication {
    /// The router with every route and middleware; tests use it directly.
    public static func router(environment: ServerEnvironment, registry: PrometheusCollectorRegistry)
        -> Router<AssentRequestContext>
    {
        router(Services(environment), environment, registry: registry)
    }

    /// The router over the composition root's services; `environment` gives the settings the routes read.
    static func router(
        _ services: Services, _ environment: ServerEnvironment, registry: PrometheusCollectorRegistry
    ) -> Router<AssentRequestContext> {
        let s = services
        let router = Router(context: AssentRequestContext.self)
        let known = KnownRoutes()
        router.add(middleware: RequestIDMiddleware(proxies: environment.trustedProxies))
        if environment.traceRequests { router.add(middleware: RequestSpanMiddleware()) }
        router.add(middleware: ConnectionDrainMiddleware(drain: environment.drain))
        router.add(middleware: MetricsMiddleware(registry: registry))
        router.add(
            middleware: ErrorMiddleware(routes: known) {
                (try? await s.applications.defaultApplication().name) ?? "Assent"
            })
        router.add(middleware: ClientAddressMiddleware(proxies: environment.trustedProxies))
        router.add(middleware: LanguageMiddleware())
        HealthController(schema: environment.store, drain: environment.drain).addRoutes(to: router)
        MetricsController(
            registry: registry, schema: environment.store, outbox: environment.store, audit: environment.store,
            clock: s.clock, drain: environment.drain
        ).addRoutes(to: router)
        // Each API answers failures in its own dialect (ErrorDialect); pages and the routes above use the plain one.
        func api(_ dialect: ErrorDialect) -> APIRoutes { APIRoutes(dialect, on: router, known: known) }
        PowerAuthController(service: s.powerAuth).addRoutes(to: api(.powerAuth))
        DeviceController(
            policy: environment.policy, applications: s.applications, powerAuth: s.powerAuth,
            activations: s.activations
        ).addRoutes(to: api(.plain))
        MobileTokenController(clock: s.clock, operations: s.operations, tokens: s.tokens, powerAuth: s.powerAuth)
            .addRoutes(to: api(.mobileToken))
        PushController(
            registrations: s.pushRegistrations, tokens: s.tokens, powerAuth: s.powerAuth, deliveries: s.pushDeliveries
        ).addRoutes(to: api(.mobileToken))
        EventStreamController(
            tokens: s.tokens, store: environment.store, events: environment.events,
            heartbeat: environment.streamHeartbeat
        ).addRoutes(to: api(.mobileToken))
        OperatorAPI(services: s).addRoutes(to: api(.plain))
        TFAController(
            clock: s.clock, flows: s.tfa, totp: s.totp, codes: s.codes, push: s.pushFactor, passkey: s.passkeyFactor,
            backup: s.backupCodes
        ).addRoutes(to: api(.plain))
        OpenIDController(
            openID: environment.openID, clients: s.clients, ciba: s.ciba, authorization: s.authorizations,
            userInfo: s.userInfo, keys: s.signingKeys
        ).addRoutes(to: api(.oauth))
        WebPages.shared.addRoutes(to: router)
        BrandAssetController(branding: s.branding).addRoutes(to: router)
        let loginPages = LoginPages(s, environment)
        loginPages.addRoutes(to: router)
        AccountPages(login: loginPages, account: s.account, webPush: environment.push?.webPush != nil)
            .addRoutes(to: router)
        ApprovalPages(
            clock: s.clock, openID: environment.openID, events: environment.events, branding: s.branding,
            links: s.links, applications: s.applications, activations: s.activations
        ).addRoutes(to: router)
        BrowserApprovalPages(approvers: s.approvers, branding: s.branding).addRoutes(to: router)
        ConsolePages(s, environment).addRoutes(to: router)
        known.set(router.routes.map { ($0.method.rawValue, "\($0.path)") })
        return router
    }

    /// The application listening on `host:port`, with the background sweeper and the outbox dispatcher (for the
    /// configured webhook and push services) as services.
    /// - Throws: a configuration error when the push settings cannot be used.
    public static func application(
        environment: ServerEnvironment, host: String, port: Int,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws -> some ApplicationProtocol {
        let registry = environment.metrics
        let built = Services(environment)
        var services: [any Service] = [Sweeper(services: built, environment: environment)]
        if environment.store.announcesDeviceEvents {
            services.append(
                EventFanOut(store: environment.store, events: environment.events, logger: environment.logger))
        }
        let senders = try outboxSenders(built, environment)
        services.append(
            OutboxDispatcher(
                store: environment.store, clock: built.clock, logger: environment.logger,
                wakeup: environment.outboxWakeup, senders: senders, policy: environment.outbox))
        return Application(
            router: router(built, environment, registry: registry),
            configuration: .init(address: .hostname(host, port: port), serverName: "Assent"),
            services: services,
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? port
                environment.openID.listening.set(host: host, port: bound)
                await onServerRunning(bound)
            },
            logger: environment.logger
        )
    }
}

extension AssentServerApplication {
    /// Runs `app` until SIGTERM or SIGINT, then drains for `drainFor` — still serving, readiness 503, every answer
    /// with `Connection: close` (``DrainState``) — and stops it gracefully: the listener closes, every event stream
    /// (console, waiting and login pages, device streams) ends at once with a clean close, requests in flight
    /// finish, the outbox gives up its leases; each step is logged. A second signal ends the drain at once.
    public static func serve(
        _ app: some ApplicationProtocol, alongside: [any Service] = [], logger: Logger,
        drain: DrainState = DrainState(),
        drainFor: Duration = .zero
    ) async throws {
        let started = ContinuousClock.now
        // A service group shuts its services down last to first: the notice first, then the application, then the
        // services alongside it (the span exporter sends the last requests' spans).
        let group = ServiceGroup(
            configuration: .init(
                services: alongside + [app, ShutdownNotice(logger: logger)], gracefulShutdownSignals: [],
                logger: logger))
        let signals = Task {
            var draining: Task<Void, Never>?
            for await _ in await UnixSignalsSequence(trapping: .sigterm, .sigint) {
                guard draining == nil, drainFor > .zero else {
                    draining?.cancel()
                    await group.triggerGracefulShutdown()
                    return
                }
                drain.begin()
                logger.notice(
                    "draining: serving with Connection: close and readiness 503 before the listener closes",
                    metadata: ["drain.seconds": "\(drainFor.components.seconds)"])
                draining = Task {
                    try? await Task.sleep(for: drainFor)
                    await group.triggerGracefulShutdown()
                }
            }
        }
        defer { signals.cancel() }
        try await group.run()
        logger.notice("stopped", metadata: ["uptime.seconds": "\((ContinuousClock.now - started).components.seconds)"])
    }

    /// Logs the start of a graceful shutdown, the moment it begins.
    struct ShutdownNotice: Service {
        let logger: Logger

        func run() async throws {
            // Cancelled instead (the group failed): nothing graceful to announce.
            guard (try? await gracefulShutdown()) != nil else { return }
            logger.notice("shutting down: closing the listener and live streams, finishing requests in flight")
        }
    }

    /// The outbox channels this server delivers: CIBA callbacks and back-channel logouts, and the webhook and push
    /// where configured.
    static func outboxSenders(_ services: Services, _ environment: ServerEnvironment) throws -> [any OutboxSender] {
        let e = environment
        let clock = services.clock
        let post = CallbackPost(egress: e.egress)
        var senders: [any OutboxSender] = [
            CIBASender(store: e.store, clock: clock, service: services.ciba, post: post),
            LogoutSender(store: e.store, clock: clock, openID: e.openID, keys: services.signingKeys, post: post),
        ]
        // Always: an application's own webhook can be set at any time, in any server process.
        senders.append(
            WebhookSender(
                store: e.store, clock: clock, egress: e.egress, webhook: e.webhook, webhooks: services.webhooks))
        // Always: an application's own push credentials can be set at any time, in any server process.
        senders.append(
            try PushSender(
                store: e.store, clock: clock, audit: services.audit, logger: e.logger, metrics: e.metrics,
                egress: e.egress, push: e.push, applicationPush: services.applicationPush, approvers: services.approvers
            ))
        let codes = PendingCode.Reader(store: e.store, clock: clock, issuer: e.tfa.totpIssuer)
        if let mail = e.tfa.mail {
            senders.append(EmailCodeSender(codes: codes, clock: clock, client: SMTPClient(settings: mail)))
            senders.append(NoticeSender(clock: clock, client: SMTPClient(settings: mail)))
        }
        if let gateway = e.tfa.phoneGateway {
            senders.append(PhoneCodeSender(codes: codes, clock: clock, egress: e.egress, settings: gateway))
        }
        return senders
    }
}

/// Every few seconds expires overdue operations and removes activations whose code expired unused; once a minute
/// deletes expired temporary keys, replay-guard
/// entries and rate-limit windows, expired two-factor flows, codes, remembered devices and web sessions, and outbox messages
/// finished (or never deliverable, without a sender for their channel), CIBA requests and retired signing keys more
/// than a day old.
struct Sweeper: Service {
    let services: Services
    /// The whole store (the sweep purges every feature's rows) and the settings it reads.
    let environment: ServerEnvironment
    var interval: Duration = .seconds(5)

    /// The sweep, the audit sealer and the key ring's keeper run side by side in this one service, so a graceful
    /// stop waits for one service rather than three in turn.
    func run() async throws {
        let environment = environment
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await sweep() }
                group.addTask { [services] in await AuditSealer(chain: services.auditChain).run() }
                group.addTask {
                    await KeyRingKeeper(
                        store: environment.store, logger: environment.logger, interval: environment.keyRingInterval
                    ).run()
                }
            }
        }
    }

    /// Until cancelled: expiries every `interval`, purges once a minute.
    func sweep() async {
        let environment = environment
        let operations = services.operations
        let activations = services.activations
        let interval = interval
        var lastPurge = ContinuousClock.now - .seconds(60)
        while !Task.isCancelled {
            do {
                try await operations.expireOverdue()
                try await activations.expireUnusedCodes()
                if ContinuousClock.now - lastPurge >= .seconds(60) {
                    lastPurge = .now
                    let now = services.clock.millis
                    try await environment.store.purgeExpired(before: now)
                    var undeliverable: [OutboxChannel] = []
                    if environment.webhook == nil,
                        try await !services.webhooks.anyApplicationHasWebhook()
                    {
                        undeliverable.append(.webhook)
                    }
                    if environment.push?.isEmpty ?? true,
                        try await !services.applicationPush.anyApplicationHasCredentials()
                    {
                        undeliverable.append(.push)
                    }
                    if environment.tfa.mail == nil { undeliverable.append(contentsOf: [.email, .notice]) }
                    if environment.tfa.phoneGateway == nil { undeliverable.append(.phone) }
                    try await environment.store.purgeOutbox(
                        before: now - 86_400_000, undeliverable: undeliverable)
                    try await environment.store.purgeDeviceEvents(before: now - 86_400_000)
                    try await environment.store.purgeRateLimits(before: now)
                    try await environment.store.purgeOpenID(before: now - 86_400_000)
                    try await environment.store.purgeTFA(before: now)
                    try await environment.store.purgePasskeyChallenges(before: now)
                    try await environment.store.purgeWebSessions(before: now)
                    try await services.signingKeys.purge()
                    let retention = environment.push?.traceRetention ?? PushSettings.defaultTraceRetention
                    try await environment.store.purgePushDeliveries(
                        before: now - Int64(retention.components.seconds) * 1000)
                    // Last: on PostgreSQL it may wait for a partition's lock.
                    let upkeep = try await environment.store.keepOperations(
                        now: now,
                        removingCreatedBefore: environment.policy.operationRetention.map { now - Millis($0) * 1000 })
                    if upkeep.partitionsDropped + upkeep.rowsDeleted > 0 {
                        environment.logger.notice(
                            "operations past their retention removed",
                            metadata: [
                                "partitions": "\(upkeep.partitionsDropped)", "rows": "\(upkeep.rowsDeleted)",
                            ])
                    }
                }
            } catch {
                environment.logger.warning("sweep failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await Task.sleep(for: interval)
        }
    }
}
