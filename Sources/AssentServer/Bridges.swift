import Foundation

// Temporary: services not yet built by the composition root make the converted ones from an environment.
extension ServerEnvironment {
    var clock: WallClock { WallClock(now) }
    var auditor: Auditor { Auditor(store: store, clock: clock, logger: logger) }
    var announcer: Announcer { Announcer(outboxWakeup: outboxWakeup, events: events) }
}

extension SigningKeyService {
    public init(environment e: ServerEnvironment) {
        self.init(store: e.store, clock: e.clock, audit: e.auditor, openID: e.openID)
    }
}
extension APIKeyService {
    public init(environment e: ServerEnvironment) { self.init(store: e.store, clock: e.clock, audit: e.auditor) }
}
extension ApplicationVersionService {
    public init(environment e: ServerEnvironment) {
        self.init(store: e.store, clock: e.clock, audit: e.auditor, cache: e.applications)
    }
}
extension ApplicationService {
    public init(environment e: ServerEnvironment) {
        self.init(
            store: e.store, clock: e.clock, audit: e.auditor, cache: e.applications,
            versions: ApplicationVersionService(environment: e))
    }
}
extension ApplicationBrandingService {
    public init(environment e: ServerEnvironment) { self.init(store: e.store, clock: e.clock, audit: e.auditor) }
}
extension ApplicationWebhookService {
    public init(environment e: ServerEnvironment) {
        self.init(
            store: e.store, clock: e.clock, audit: e.auditor, egress: e.egress, webhook: e.webhook,
            cache: e.applications)
    }
}
extension ApplicationRateLimitService {
    public init(environment e: ServerEnvironment) {
        self.init(store: e.store, clock: e.clock, audit: e.auditor, rateLimits: e.rateLimits)
    }
}
extension ApplicationPushService {
    public init(environment e: ServerEnvironment) {
        self.init(
            store: e.store, clock: e.clock, audit: e.auditor, push: e.push, cache: e.applications,
            applications: ApplicationService(environment: e))
    }
}
extension OperationTemplateService {
    public init(environment e: ServerEnvironment) { self.init(store: e.store, clock: e.clock, audit: e.auditor) }
}
extension GrantRevocation {
    init(environment e: ServerEnvironment) { self.init(store: e.store, clock: e.clock, audit: e.auditor) }
}
extension RateLimiter {
    init(environment e: ServerEnvironment) {
        self.init(store: e.store, clock: e.clock, logger: e.logger, metrics: e.metrics, rateLimits: e.rateLimits)
    }
}
extension TokenAuthenticator {
    public init(environment e: ServerEnvironment) { self.init(store: e.store, clock: e.clock, policy: e.policy) }
}
extension AuditService {
    public init(environment e: ServerEnvironment) { self.init(store: e.store) }
}
extension UserInfoService {
    init(environment e: ServerEnvironment) { self.init(store: e.store) }
}
extension ConsoleService {
    init(environment e: ServerEnvironment) { self.init(store: e.store) }
}
extension ActivationService {
    public init(environment e: ServerEnvironment) {
        self.init(store: e.store, clock: e.clock, audit: e.auditor, logger: e.logger, policy: e.policy)
    }
}
extension PowerAuthService {
    public init(environment e: ServerEnvironment) {
        self = Services.operations(over: e.store, announcer: e.announcer, e).powerAuth
    }
}
extension OperationService {
    public init(environment e: ServerEnvironment) {
        self = Services.operations(over: e.store, announcer: e.announcer, e)
    }
}
