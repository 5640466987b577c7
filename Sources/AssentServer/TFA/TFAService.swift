import AssentCrypto
import AssentModel
import Foundation

/// Two-factor login (seed 004): a first factor (a password here, or the relying party's own check) that a second
/// factor interrupts, the flow that resolves it, and the success the relying party receives.
///
/// A flow is a row (`tfa_flows`) named by a signed `regToken`; each provider's part is a challenge named by a
/// random assertion (only hashes are stored); a passed challenge yields a proof (`providerAssertion`) that
/// finalizes the flow exactly once.
struct TFAService: Sendable {
    /// The part of the store this sees.
    let store: any ApplicationStore & TFAStore & ActivationStore & PasskeyStore
    let clock: WallClock
    let audit: Auditor
    let tfa: TFASettings
    /// Each application's rate limits and two-factor policy.
    let applicationLimits: ApplicationRateLimitService
    let applications: ApplicationService
    let tokens: TFATokens
    let limiter: RateLimiter

    /// The outcome of a first factor.
    enum Outcome: Sendable {
        case success(TFALoginSuccess)
        case interruption(TFAInterruption)
    }

    // MARK: First factor

    /// A password login from `address`: the success when no second factor is due, else the interruption.
    /// `countsFailure` false: a wrong password is refused without counting it or auditing it — for a reading of a
    /// typed field (password and code together) that another reading follows, which counts.
    func login(_ request: TFALoginRequest, address: String?, countsFailure: Bool = true) async throws -> Outcome {
        let application = try await application(request.application)
        let userKey = "\(application.id):\(request.userId)"
        let rules = try await applicationLimits.rules(application.id)
        if let address { try await limiter.check(rules.loginFailuresPerAddress, "login.address", address) }
        try await limiter.checkAccount(
            rules.loginFailuresPerUser, rules.loginFailuresPerUserAndAddress, TFAAccountService.failureScope,
            account: userKey,
            address: address)
        let hasher = tfa.passwordHasher
        let account = try await store.tfaAccount(applicationId: application.id, userId: request.userId)
        let valid: Bool
        if let stored = account?.passwordHash {
            valid = try await hasher.verify(request.password, against: stored)
        } else {
            try await hasher.verifyNothing(request.password)
            valid = false
        }
        guard valid else {
            guard countsFailure else { throw TFAError.invalidLogin() }
            await limiter.recordAccountFailure(
                rules.loginFailuresPerUser, rules.loginFailuresPerUserAndAddress, TFAAccountService.failureScope,
                account: userKey,
                address: address)
            if let address { await limiter.recordFailure(rules.loginFailuresPerAddress, "login.address", address) }
            // The user id only when it is an account's: one that is none may be a password typed into the wrong
            // field, and it never reaches the audit.
            await audit(
                .tfaLoginFailed, userId: account == nil ? nil : request.userId, application: application.id,
                actor: "user", account == nil ? "A user id that is no account's, refused." : "Wrong password.")
            throw TFAError.invalidLogin()
        }
        return try await secondFactor(
            application: application, userId: request.userId, firstFactor: "pwd", deviceToken: request.deviceToken)
    }

    /// Decides on the second factor after a passed first factor (`firstFactor` is its RFC 8176 method, `nil` when
    /// the relying party checked it): a valid remembered device or an account without factors under a policy that
    /// does not require one succeeds; otherwise a new flow interrupts.
    func secondFactor(
        application: ApplicationRecord, userId: String, firstFactor: String?, deviceToken: String?
    ) async throws -> Outcome {
        guard UserID.isValid(userId) else { throw AssentServerError.invalidRequest(UserID.requirement) }
        try await refuseDisabled(application, userId)
        let first = firstFactor.map { [$0] } ?? []
        if let deviceToken,
            let device = try await rememberedDevice(deviceToken, application: application, userId: userId)
        {
            try await store.touchRememberedDevice(id: device.id, at: clock.millis)
            return .success(try await success(application, userId, amr: first, provider: "remembered-device"))
        }
        let policy = try await policy(application.id)
        let active = try await activeProviders(application.id, userId, policy: policy)
        if active.isEmpty && !policy.required {
            return .success(try await success(application, userId, amr: first, provider: nil))
        }
        let now = clock.millis
        let flow = TFAFlowRecord(
            id: TFATokens.id(), applicationId: application.id, userId: userId,
            kind: active.isEmpty ? .registration : .verification, firstFactor: firstFactor, createdAt: now,
            expiresAt: now + Millis(tfa.flowLifetime) * 1000)
        try await store.insertTFAFlow(flow)
        let (regToken, expiresAt) = try await tokens.sign(
            .registration, id: flow.id, userId: userId, applicationId: application.id,
            lifetime: tfa.flowLifetime)
        let inactive = Self.registrable(policy, active: active)
        let verification = flow.kind == .verification
        return .interruption(
            TFAInterruption(
                code: verification ? "PENDING_TFA_VERIFICATION" : "PENDING_TFA_REGISTRATION",
                errorCode: verification ? TFAErrorCode.pendingVerification : TFAErrorCode.pendingRegistration,
                message: verification
                    ? "Verify a second factor: one of the account's providers."
                    : "Register a second factor: the account has none and this application requires one.",
                regToken: regToken, regTokenExpiresAt: Date(millis: expiresAt),
                activeProviders: active.map(TFAProviderInfo.init), inactiveProviders: inactive.map(TFAProviderInfo.init)
            ))
    }

    /// A verification flow for a person whose password this session verified already (a step-up: a client asks
    /// for a stronger sign-in than the session holds): no remembered device and no policy lets it pass without a
    /// factor. Returns the flow's token and the account's active providers (empty: nothing to verify with).
    func stepUp(applicationId: String, userId: String) async throws -> (regToken: String, providers: [TFAProvider]) {
        let application = try await applicationRecord(id: applicationId)
        let active = try await activeProviders(application.id, userId, policy: try await policy(application.id))
        let now = clock.millis
        let flow = TFAFlowRecord(
            id: TFATokens.id(), applicationId: application.id, userId: userId, kind: .verification,
            firstFactor: "pwd", createdAt: now, expiresAt: now + Millis(tfa.flowLifetime) * 1000)
        try await store.insertTFAFlow(flow)
        let (regToken, _) = try await tokens.sign(
            .registration, id: flow.id, userId: userId, applicationId: application.id,
            lifetime: tfa.flowLifetime)
        return (regToken, active)
    }

    // MARK: The flow

    /// The account's providers and those it may register (`accounts.tfa.getProviders`).
    func providers(_ request: TFAProvidersRequest) async throws -> TFAProvidersResponse {
        let flow = try await openFlow(request.regToken)
        let policy = try await policy(flow.applicationId)
        let active = try await activeProviders(flow.applicationId, flow.userId, policy: policy)
        return TFAProvidersResponse(
            activeProviders: active.map(TFAProviderInfo.init),
            inactiveProviders: Self.registrable(policy, active: active).map(TFAProviderInfo.init))
    }

    /// Starts one provider's part (`accounts.tfa.initTFA`). A verification flow verifies one of the account's
    /// providers; only a registration flow (an account without factors) registers one, so a stolen password
    /// never suffices to add a factor.
    func start(_ request: TFAInitRequest) async throws -> TFAInitResponse {
        try await start(try await openFlow(request.regToken), provider: request.provider, mode: request.mode)
    }

    /// A challenge of `provider` in the open `flow` (a sign-in a RADIUS server or a host asks about holds its flow
    /// by a challenge's assertion rather than the flow's token).
    func start(_ flow: TFAFlowRecord, provider: TFAProvider, mode: TFAMode) async throws -> TFAInitResponse {
        let policy = try await policy(flow.applicationId)
        guard policy.providers.contains(provider),
            tfa.offeredProviders.contains(provider)
        else {
            throw TFAError(
                status: .badRequest, error: .providerNotAllowed,
                message: "This application does not offer \(provider.rawValue) as a second factor.")
        }
        var factorId: String?
        switch (flow.kind, mode) {
        case (.registration, .register):
            guard provider != .email else {
                throw TFAError(
                    status: .badRequest, error: .registrationNotAllowed,
                    message: "E-mail addresses are registered by the operator, not in a login.")
            }
            guard provider != .backup else {
                throw TFAError(
                    status: .badRequest, error: .registrationNotAllowed,
                    message: "Backup codes are made after a sign-in with another factor, not as the first one.")
            }
        case (.verification, .verify):
            let factors = try await store.tfaFactors(applicationId: flow.applicationId, userId: flow.userId)
            guard let factor = factors.last(where: { $0.state == .active && $0.provider == provider }) else {
                throw TFAError(
                    status: .badRequest, error: .providerNotRegistered,
                    message: "The account has no \(provider.rawValue) factor to verify.")
            }
            factorId = factor.id
        case (.verification, .register):
            throw TFAError(
                status: .badRequest, error: .registrationNotAllowed,
                message: "The account already has a second factor: verify it before registering another.")
        case (.registration, .verify):
            throw TFAError(
                status: .badRequest, error: .providerNotRegistered,
                message: "The account has no second factor yet: register one (mode register).")
        }
        let now = clock.millis
        let assertion = TFATokens.bearer()
        let expiresAt = min(flow.expiresAt, now + Millis(tfa.challengeLifetime) * 1000)
        try await store.insertTFAChallenge(
            TFAChallengeRecord(
                assertionHash: assertion.hash, flowId: flow.id, provider: provider, mode: mode,
                factorId: factorId, attemptsLeft: tfa.attemptsPerChallenge, createdAt: now,
                expiresAt: expiresAt))
        return TFAInitResponse(assertion: assertion.value, expiresAt: Date(millis: expiresAt))
    }

    /// Ends the flow (`accounts.tfa.finalizeTFA`): the proof must belong to a passed challenge of this flow, and
    /// the flow finishes exactly once; `rememberDevice` adds a device token.
    func finalize(_ request: TFAFinalizeRequest) async throws -> TFALoginSuccess {
        try await finalize(
            try await openFlow(request.regToken), assertion: request.assertion,
            providerAssertion: request.providerAssertion, rememberDevice: request.rememberDevice ?? false)
    }

    /// Ends the open `flow` with the proof of one of its passed challenges, exactly once.
    func finalize(
        _ flow: TFAFlowRecord, assertion: String, providerAssertion: String, rememberDevice: Bool = false
    ) async throws -> TFALoginSuccess {
        guard
            let challenge = try await store.tfaChallenge(assertionHash: TFATokens.hash(assertion)),
            challenge.flowId == flow.id, challenge.passedAt != nil, let proof = challenge.proofHash,
            Bytes.constantTimeEqual(proof, TFATokens.hash(providerAssertion))
        else {
            throw TFAError(
                status: .badRequest, error: .invalidProviderAssertion,
                message: "The providerAssertion does not prove a second factor of this login.")
        }
        guard try await store.finishTFAFlow(id: flow.id, at: clock.millis) else {
            throw TFAError.invalidRegToken()
        }
        let application = try await applicationRecord(id: flow.applicationId)
        var second = [Self.method(challenge.provider)]
        var provider = challenge.provider.rawValue
        if challenge.provider == .passkey, let id = challenge.factorId,
            let passkey = try await store.passkey(factorId: id)
        {
            second = PasskeyService.methods(passkey, userVerified: false)
        }
        if challenge.provider == .push, let id = challenge.factorId,
            let factor = try await store.tfaFactor(id: id), BrowserApprovers.isBrowser(factor)
        {
            // Approved in a browser with a passkey that verified its user: no phone's key was used.
            second = ["user"]
            provider = BrowserApprovers.provider
        }
        let amr = (flow.firstFactor.map { [$0] } ?? []) + second + ["mfa"]
        await audit(
            .tfaLogin, userId: flow.userId, application: flow.applicationId, actor: "user",
            "Second factor \(provider) (\(challenge.mode.rawValue)) passed.")
        return try await success(
            application, flow.userId, amr: amr, provider: provider, remember: rememberDevice)
    }

    /// The challenge an assertion names, if it belongs to an open flow and `provider`.
    func challenge(_ assertion: String, provider: TFAProvider) async throws -> (TFAChallengeRecord, TFAFlowRecord) {
        guard assertion.utf8.count <= 128,
            let challenge = try await store.tfaChallenge(assertionHash: TFATokens.hash(assertion)),
            challenge.provider == provider,
            let flow = try await store.tfaFlow(id: challenge.flowId)
        else {
            throw TFAError(
                status: .badRequest, error: .invalidAssertion,
                message: "The assertion is unknown or belongs to another provider: call /api/tfa/init first.")
        }
        let now = clock.millis
        guard flow.finishedAt == nil, flow.expiresAt > now, challenge.expiresAt > now, challenge.passedAt == nil else {
            throw TFAError.challengeSpent()
        }
        return (challenge, flow)
    }

    /// Takes one try of the challenge (before the code is compared) and checks the account's failure limit.
    func takeAttempt(_ challenge: TFAChallengeRecord, flow: TFAFlowRecord) async throws -> Int {
        try await checkFailureLimit(flow)
        guard
            let left = try await store.takeTFAChallengeAttempt(
                assertionHash: challenge.assertionHash, at: clock.millis)
        else { throw TFAError.challengeSpent() }
        return left
    }

    /// Refuses (429) when the account has used up its wrong codes for the window.
    func checkFailureLimit(_ flow: TFAFlowRecord) async throws {
        try await limiter.check(
            try await applicationLimits.rules(flow.applicationId)
                .tfaFailuresPerUser, "tfa.user", "\(flow.applicationId):\(flow.userId)")
    }

    /// Counts a wrong code against the account.
    func recordFailure(_ flow: TFAFlowRecord) async {
        let rule =
            (try? await applicationLimits.rules(flow.applicationId))?
            .tfaFailuresPerUser ?? limiter.rateLimits.tfaFailuresPerUser
        await limiter.recordFailure(rule, "tfa.user", "\(flow.applicationId):\(flow.userId)")
    }

    /// Marks the challenge passed and returns the proof.
    func pass(_ challenge: TFAChallengeRecord) async throws -> TFAProofResponse {
        let proof = TFATokens.bearer()
        guard
            try await store.passTFAChallenge(
                assertionHash: challenge.assertionHash, proofHash: proof.hash, at: clock.millis)
        else { throw TFAError.challengeSpent() }
        return TFAProofResponse(providerAssertion: proof.value)
    }

    // MARK: Support

    /// The flow a `regToken` names, if the token verifies and the flow is open.
    func openFlow(_ regToken: String) async throws -> TFAFlowRecord {
        guard let claims = try await tokens.verify(regToken, use: .registration),
            let flow = try await store.tfaFlow(id: claims.jti),
            flow.userId == claims.sub, flow.applicationId == claims.aud, flow.finishedAt == nil,
            flow.expiresAt > clock.millis
        else { throw TFAError.invalidRegToken() }
        return flow
    }

    /// The policy of the application: the operator's, else every implemented provider, required.
    func policy(_ applicationId: String) async throws -> TFAPolicy {
        var policy =
            try await store.tfaPolicy(applicationId: applicationId)
            ?? TFAPolicy(required: true, providers: tfa.offeredProviders)
        policy.numberMatching = policy.numberMatching ?? NumberMatching.choose
        let defaults = tfa
        policy.pushLoginsPerHour = policy.pushLoginsPerHour ?? defaults.pushLoginsPerHour
        policy.pushRefusalLimit = policy.pushRefusalLimit ?? defaults.pushRefusalLimit
        policy.pushRefusalWindow = policy.pushRefusalWindow ?? defaults.pushRefusalWindow
        policy.pushFraudSuspension = policy.pushFraudSuspension ?? defaults.pushFraudSuspension
        return policy
    }

    /// Sets the application's policy: the providers must be ones this server offers (else `ERR_PROVIDER_NOT_OFFERED`,
    /// a conflict with the server's configuration rather than a bad request), and a required second factor allows
    /// at least one.
    func setPolicy(_ policy: TFAPolicy, applicationId: String, actor: String) async throws {
        let missing = policy.providers.filter { !tfa.offeredProviders.contains($0) }
        guard missing.isEmpty else {
            throw AssentServerError(
                .providerNotOffered,
                "This server does not offer \(missing.map(\.rawValue).joined(separator: ", ")) yet; it "
                    + "offers " + tfa.offeredProviders.map(\.rawValue).joined(separator: ", ") + ".")
        }
        guard !policy.required || !policy.providers.isEmpty else {
            throw AssentServerError.invalidRequest("A policy that requires a second factor allows at least one.")
        }
        if let mode = policy.numberMatching,
            ![NumberMatching.off, NumberMatching.choose, NumberMatching.type].contains(mode)
        {
            throw AssentServerError.invalidRequest("numberMatching is choose, type or off.")
        }
        for (name, value) in [
            ("pushLoginsPerHour", policy.pushLoginsPerHour), ("pushRefusalLimit", policy.pushRefusalLimit),
            ("pushRefusalWindow", policy.pushRefusalWindow), ("pushFraudSuspension", policy.pushFraudSuspension),
        ] {
            if let value, !(1...1_000_000).contains(value) {
                throw AssentServerError.invalidRequest("\(name) is a whole number from 1 to 1000000.")
            }
        }
        if let passkeys = policy.passkeys { try Self.validate(passkeys) }
        try await store.putTFAPolicy(applicationId: applicationId, policy)
        await audit(
            .tfaPolicySet, application: applicationId, actor: actor,
            "Second factor \(policy.required ? "required" : "optional"), providers "
                + policy.providers.map(\.rawValue).joined(separator: ", ") + ".")
    }

    /// Refuses a passkey policy a browser could not follow.
    static func validate(_ passkeys: PasskeyPolicy) throws {
        if let mode = passkeys.userVerification, !["required", "preferred", "discouraged"].contains(mode) {
            throw AssentServerError.invalidRequest("passkeys.userVerification is required, preferred or discouraged.")
        }
        if let attestation = passkeys.attestation, !["none", "direct"].contains(attestation) {
            throw AssentServerError.invalidRequest("passkeys.attestation is none or direct.")
        }
        if let id = passkeys.relyingPartyId,
            id.isEmpty || id.count > 253
                || id.split(separator: ".", omittingEmptySubsequences: false).contains(where: { label in
                    label.isEmpty || label.contains { !($0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-")) }
                })
        {
            throw AssentServerError.invalidRequest(
                "passkeys.relyingPartyId is a domain name in ASCII (an international one as xn--…), e.g. bank.example.")
        }
        for origin in passkeys.origins ?? [] where !origin.hasPrefix("android:apk-key-hash:") {
            guard let url = URLComponents(string: origin), ["https", "http"].contains(url.scheme ?? ""),
                url.host?.isEmpty == false, url.path.isEmpty, url.query == nil, url.fragment == nil
            else {
                throw AssentServerError.invalidRequest(
                    "passkeys.origins are origins: a scheme and a host with no path, e.g. https://login.bank.example "
                        + "(or an Android app's android:apk-key-hash:…).")
            }
            if let id = passkeys.relyingPartyId, let host = url.host, host != id, !host.hasSuffix("." + id) {
                throw AssentServerError.invalidRequest(
                    "The origin \(origin) is not on the relying party \(id) or one of its subdomains.")
            }
        }
    }

    /// The providers a user may register: the policy's, less those the account has, e-mail (addresses come from
    /// the operator) and backup codes (made after a sign-in).
    static func registrable(_ policy: TFAPolicy, active: [TFAProvider]) -> [TFAProvider] {
        policy.providers.filter { !active.contains($0) && $0 != .email && $0 != .backup }
    }

    /// The providers of the account's active factors that the policy allows, in the policy's order. Approval on a
    /// phone counts only while one of its phones can answer (an active activation, or a subscribed browser): a
    /// phone being added has not scanned its code yet, a lost one is blocked.
    func activeProviders(_ applicationId: String, _ userId: String, policy: TFAPolicy) async throws -> [TFAProvider] {
        var active = Set<TFAProvider>()
        for factor in try await store.tfaFactors(applicationId: applicationId, userId: userId)
        where factor.state == .active && !active.contains(factor.provider) {
            if factor.provider == .push, !BrowserApprovers.isBrowser(factor) {
                guard let id = factor.destination, try await store.activation(id: id)?.state == .active
                else { continue }
            }
            active.insert(factor.provider)
        }
        return policy.providers.filter { active.contains($0) }
    }

    /// The remembered device a token names, if it is valid for this user and application and not revoked.
    func rememberedDevice(_ token: String, application: ApplicationRecord, userId: String) async throws
        -> RememberedDeviceRecord?
    {
        guard let claims = try await tokens.verify(token, use: .device), claims.aud == application.id,
            claims.sub == userId, let device = try await store.rememberedDevice(id: claims.jti),
            device.revokedAt == nil, device.expiresAt > clock.millis, device.userId == userId,
            device.applicationId == application.id
        else { return nil }
        return device
    }

    /// The login's success: a login token and, when asked, a new remembered device.
    func success(
        _ application: ApplicationRecord, _ userId: String, amr: [String], provider: String?, remember: Bool = false
    ) async throws -> TFALoginSuccess {
        // Also when the account was disabled while its second factor was under way.
        try await refuseDisabled(application, userId)
        let settings = tfa
        let (loginToken, _) = try await tokens.sign(
            .login, id: TFATokens.id(), userId: userId, applicationId: application.id,
            lifetime: settings.loginTokenLifetime, amr: amr, provider: provider)
        var result = TFALoginSuccess(userId: userId, loginToken: loginToken)
        if remember {
            let now = clock.millis
            let device = RememberedDeviceRecord(
                id: TFATokens.id(), applicationId: application.id, userId: userId, createdAt: now,
                expiresAt: now + Millis(settings.rememberedDeviceLifetime) * 1000)
            try await store.insertRememberedDevice(device)
            let (token, expiresAt) = try await tokens.sign(
                .device, id: device.id, userId: userId, applicationId: application.id,
                lifetime: settings.rememberedDeviceLifetime)
            result.deviceToken = token
            result.deviceTokenExpiresAt = Date(millis: expiresAt)
            await audit(
                .tfaDeviceRemembered, userId: userId, application: application.id, actor: "user",
                "Device \(device.id) remembered.")
        }
        return result
    }

    /// Refuses every sign-in of an account an operator disabled (audited).
    func refuseDisabled(_ application: ApplicationRecord, _ userId: String) async throws {
        guard try await store.tfaAccount(applicationId: application.id, userId: userId)?.disabledAt != nil else {
            return
        }
        await audit(
            .tfaLoginFailed, userId: userId, application: application.id, actor: "user", "The account is disabled.")
        throw TFAError.accountDisabled()
    }

    /// The application a login names by id or key; the default one when it names none.
    func application(_ name: String?) async throws -> ApplicationRecord {
        guard let name else { return try await applications.defaultApplication() }
        if let byId = try await store.application(id: name) { return byId }
        if let byKey = try await store.application(key: name) { return byKey }
        throw AssentServerError.invalidRequest("No application has the id or key \(name.prefix(64)).")
    }

    func applicationRecord(id: String) async throws -> ApplicationRecord {
        guard let application = try await store.application(id: id) else {
            throw AssentServerError.internalError("The flow's application \(id) is gone.")
        }
        return application
    }

    /// RFC 8176's method for a provider: one-time codes are `otp`, SMS `sms`, push a confirmation on a
    /// hardware-bound key (`hwk`), a passkey `hwk` or `swk` as its record says (``PasskeyService/methods(_:userVerified:)``).
    static func method(_ provider: TFAProvider) -> String {
        switch provider {
        case .totp, .email, .backup: "otp"
        case .phone: "sms"
        case .push, .passkey: "hwk"
        }
    }
}
