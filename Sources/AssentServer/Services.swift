import Foundation
import Logging

/// The composition root: every service built once, in the order they depend on each other, each given exactly
/// what it uses — its narrow store, the clock, the auditor, the settings it reads and the services it calls — so
/// its initializer is the list of its dependencies. Controllers and pages take the services they call from here.
///
/// Only an approval is built again, over one commit's store (``Committer``): ``operations(over:announcer:_:)`` is
/// the one recipe for both.
public final class Services: Sendable {
    let clock: WallClock
    let audit: Auditor
    let announcer: Announcer
    /// Where the pages' sessions live.
    let webStore: any WebStore

    public let signingKeys: SigningKeyService
    public let apiKeys: APIKeyService
    public let versions: ApplicationVersionService
    public let applications: ApplicationService
    public let branding: ApplicationBrandingService
    public let webhooks: ApplicationWebhookService
    public let applicationLimits: ApplicationRateLimitService
    public let applicationPush: ApplicationPushService
    public let templates: OperationTemplateService
    let grants: GrantRevocation
    let limiter: RateLimiter
    public let tokens: TokenAuthenticator
    public let auditTrail: AuditService
    let userInfo: UserInfoService
    let console: ConsoleService
    public let activations: ActivationService
    public let powerAuth: PowerAuthService
    public let operations: OperationService
    let tfaTokens: TFATokens
    let tfa: TFAService
    let totp: TOTPFactor
    let backupCodes: BackupCodeFactor
    let codes: CodeFactor
    let pushFactor: PushFactor
    /// VPNs' and hosts' sign-ins (FreeRADIUS, PAM) on top of two-factor login.
    let access: AccessService
    public let radiusClients: RADIUSClientService
    let passkeys: PasskeyService
    let passkeyFactor: PasskeyFactor
    public let accounts: TFAAccountService
    public let ciba: CIBAService
    public let clients: ClientService
    let authorizations: AuthorizationService
    let operators: OperatorService
    let operatorPasskeys: OperatorPasskeys
    let operatorPhones: OperatorPhones
    public let auditChain: AuditChainService
    let notices: AccountNotices
    let links: ApprovalLinks
    let approvers: BrowserApprovers
    let account: AccountService
    public let pushDeliveries: PushDeliveryService
    let pushRegistrations: PushRegistrationService

    public init(_ environment: ServerEnvironment) {
        let e = environment
        let store = e.store
        let clock = WallClock(e.now)
        let audit = Auditor(store: store, clock: clock, logger: e.logger)
        let announcer = Announcer(outboxWakeup: e.outboxWakeup, events: e.events)
        self.clock = clock
        self.audit = audit
        self.announcer = announcer
        webStore = store

        // The approval's services first: the others share them rather than build their own.
        let operations = Self.operations(over: store, announcer: announcer, e)
        self.operations = operations
        powerAuth = operations.powerAuth
        limiter = operations.limiter
        templates = operations.templates
        applicationLimits = operations.applicationLimits
        let applications = operations.powerAuth.applications
        self.applications = applications
        versions = applications.versions

        signingKeys = SigningKeyService(store: store, clock: clock, audit: audit, openID: e.openID)
        apiKeys = APIKeyService(store: store, clock: clock, audit: audit)
        branding = ApplicationBrandingService(store: store, clock: clock, audit: audit)
        webhooks = ApplicationWebhookService(
            store: store, clock: clock, audit: audit, egress: e.egress, webhook: e.webhook, cache: e.applications)
        applicationPush = ApplicationPushService(
            store: store, clock: clock, audit: audit, push: e.push, cache: e.applications, applications: applications)
        grants = GrantRevocation(store: store, clock: clock, audit: audit)
        tokens = TokenAuthenticator(store: store, clock: clock, policy: e.policy)
        auditTrail = AuditService(store: store)
        userInfo = UserInfoService(store: store)
        console = ConsoleService(store: store)
        activations = ActivationService(
            store: store, clock: clock, audit: audit, logger: e.logger, policy: e.policy)

        tfaTokens = TFATokens(clock: clock, openID: e.openID, keys: signingKeys)
        tfa = TFAService(
            store: store, clock: clock, audit: audit, tfa: e.tfa, applicationLimits: applicationLimits,
            applications: applications, tokens: tfaTokens, limiter: limiter)
        totp = TOTPFactor(flows: tfa, store: store, clock: clock, audit: audit, tfa: e.tfa)
        backupCodes = BackupCodeFactor(flows: tfa, store: store, clock: clock, audit: audit)
        codes = CodeFactor(
            flows: tfa, store: store, clock: clock, audit: audit, tfa: e.tfa, outboxWakeup: e.outboxWakeup,
            applicationLimits: applicationLimits)
        pushFactor = PushFactor(flows: tfa, operations: operations, store: store, clock: clock, tfa: e.tfa)
        access = AccessService(
            flows: tfa, totp: totp, backup: backupCodes, push: pushFactor, store: store, clock: clock)
        radiusClients = RADIUSClientService(store: store, clock: clock, audit: audit, applications: applications)
        passkeys = PasskeyService(store: store, clock: clock, audit: audit, openID: e.openID, tfa: e.tfa, flows: tfa)
        passkeyFactor = PasskeyFactor(
            passkeys: passkeys, store: store, audit: audit, applicationLimits: applicationLimits)
        accounts = TFAAccountService(store: store, clock: clock, audit: audit, tfa: e.tfa, grants: grants)
        ciba = CIBAService(
            store: store, clock: clock, audit: audit, openID: e.openID, keys: signingKeys, operations: operations)
        clients = ClientService(
            store: store, clock: clock, audit: audit, openID: e.openID, egress: e.egress, limiter: limiter)
        authorizations = AuthorizationService(
            store: store, clock: clock, audit: audit, openID: e.openID, grants: grants, keys: signingKeys)
        operators = OperatorService(
            store: store, clock: clock, audit: audit, openID: e.openID, tfa: e.tfa, limiter: limiter)
        operatorPasskeys = OperatorPasskeys(store: store, clock: clock, audit: audit, openID: e.openID)
        operatorPhones = OperatorPhones(store: store, audit: audit, operations: operations, applications: applications)
        auditChain = AuditChainService(
            store: store, clock: clock, audit: audit, logger: e.logger, metrics: e.metrics, egress: e.egress,
            settings: e.audit, sealing: e.auditSealing,
            commit: Committer(store: store, announcer: announcer) { store, _ in store })
        notices = AccountNotices(store: store, clock: clock, logger: e.logger, tfa: e.tfa)
        links = ApprovalLinks(clock: clock, openID: e.openID, keys: signingKeys, operations: operations)
        approvers = BrowserApprovers(
            store: store, clock: clock, audit: audit, openID: e.openID, egress: e.egress, push: e.push, flows: tfa,
            links: links, passkeys: passkeys, operations: operations)
        account = AccountService(
            store: store, clock: clock, audit: audit, tfa: e.tfa, flows: tfa, grants: grants,
            applicationLimits: applicationLimits, limiter: limiter, accounts: accounts, passkeys: passkeys,
            backup: backupCodes, activations: activations, operations: operations, notices: notices,
            approvers: approvers)
        pushDeliveries = PushDeliveryService(store: store, clock: clock, push: e.push, applications: applications)
        pushRegistrations = PushRegistrationService(store: store, clock: clock, audit: audit, egress: e.egress)
    }

    // MARK: Recipes used again over one commit's store

    static func limiter(over store: any AssentStore, _ e: ServerEnvironment) -> RateLimiter {
        RateLimiter(
            store: store, clock: WallClock(e.now), logger: e.logger, metrics: e.metrics, rateLimits: e.rateLimits)
    }

    static func applications(over store: any AssentStore, audit: Auditor, _ e: ServerEnvironment)
        -> ApplicationService
    {
        ApplicationService(
            store: store, clock: audit.clock, audit: audit, cache: e.applications,
            versions: ApplicationVersionService(store: store, clock: audit.clock, audit: audit, cache: e.applications))
    }

    /// The operations service and what an approval calls (signatures, templates, rate limits), over `store`: the
    /// server's, or one commit's (then `announcer` holds the status changes until it is done).
    static func operations(over store: any AssentStore, announcer: Announcer, _ e: ServerEnvironment)
        -> OperationService
    {
        let clock = WallClock(e.now)
        let audit = Auditor(store: store, clock: clock, logger: e.logger)
        let limiter = limiter(over: store, e)
        let powerAuth = PowerAuthService(
            store: store, clock: clock, audit: audit, logger: e.logger, policy: e.policy, limiter: limiter,
            applications: applications(over: store, audit: audit, e))
        return OperationService(
            store: store, clock: clock, audit: audit, announcer: announcer, logger: e.logger, policy: e.policy,
            powerAuth: powerAuth, templates: OperationTemplateService(store: store, clock: clock, audit: audit),
            applicationLimits: ApplicationRateLimitService(
                store: store, clock: clock, audit: audit, rateLimits: e.rateLimits),
            limiter: limiter,
            commit: Committer(store: store, announcer: announcer) { store, announcer in
                operations(over: store, announcer: announcer, e)
            })
    }
}
