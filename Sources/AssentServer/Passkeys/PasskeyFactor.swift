import AssentCrypto
import AssentModel
import Foundation

/// Passkeys in two-factor login: the `passkey` provider's part of a flow (register a credential when the account
/// has no factor yet, or answer with one of its credentials), and passwordless sign-in with a discoverable
/// credential that verified its user (two factors in one).
struct PasskeyFactor: Sendable {
    let passkeys: PasskeyService
    var flows: TFAService { passkeys.flows }
    /// The part of the store this sees.
    let store: any TFAStore
    let audit: Auditor
    let applicationLimits: ApplicationRateLimitService

    /// `POST /api/tfa/passkey/options`: creation options in a registration, request options (the account's
    /// credentials) in a verification.
    func options(_ request: TFAAssertionRequest) async throws -> PasskeyOptionsResponse {
        let (challenge, flow) = try await flows.challenge(request.assertion, provider: .passkey)
        let application = try await flows.applicationRecord(id: flow.applicationId)
        return challenge.mode == .register
            ? try await passkeys.creationOptions(
                application, userId: flow.userId, assertionHash: challenge.assertionHash)
            : try await passkeys.requestOptions(
                application, userId: flow.userId, purpose: .verify, assertionHash: challenge.assertionHash)
    }

    /// `POST /api/tfa/passkey/register`: the new credential; passes the challenge.
    func register(_ request: PasskeyRegisterRequest) async throws -> TFAProofResponse {
        try await answer(request.assertion, mode: .register) { application, flow, assertionHash in
            try await passkeys.register(
                application, userId: flow.userId, credential: request.credential, name: request.name,
                assertionHash: assertionHash)
        }
    }

    /// `POST /api/tfa/passkey/verify`: one of the account's credentials answers; passes the challenge.
    func verify(_ request: PasskeyVerifyRequest) async throws -> TFAProofResponse {
        try await answer(request.assertion, mode: .verify) { application, flow, assertionHash in
            try await passkeys.authenticate(
                application, credential: request.credential, userId: flow.userId, purpose: .verify,
                assertionHash: assertionHash
            ).0
        }
    }

    /// One ceremony of a flow's passkey challenge in `mode`: a try taken first, a refusal counted against the
    /// account, the passkey used named on the challenge (for `amr`), then the proof.
    private func answer(
        _ assertion: String, mode: TFAMode,
        _ ceremony: (ApplicationRecord, TFAFlowRecord, Data) async throws -> PasskeyRecord
    ) async throws -> TFAProofResponse {
        let (challenge, flow) = try await flows.challenge(assertion, provider: .passkey)
        guard challenge.mode == mode else {
            throw TFAError(
                status: .badRequest, error: .invalidAssertion,
                message: mode == .register
                    ? "This assertion verifies a registered passkey; registering needs mode register."
                    : "This assertion registers a passkey; answer with one in a verification.")
        }
        _ = try await flows.takeAttempt(challenge, flow: flow)
        let application = try await flows.applicationRecord(id: flow.applicationId)
        let passkey: PasskeyRecord
        do {
            passkey = try await ceremony(application, flow, challenge.assertionHash)
        } catch let error as TFAError {
            await flows.recordFailure(flow)
            throw error
        }
        try await store.setTFAChallengeFactor(
            assertionHash: challenge.assertionHash, factorId: passkey.factorId)
        return try await flows.pass(challenge)
    }

    // MARK: Passwordless

    /// `POST /api/tfa/passkey/login/options`: options for a passwordless sign-in.
    func signInOptions(_ request: PasskeyLoginOptionsRequest, address: String?) async throws
        -> PasskeyOptionsResponse
    {
        let application = try await flows.application(request.application)
        if let address { try await countSignIn(address: address, application: application) }
        try await requireFirstFactor(application)
        if let userId = request.userId, !UserID.isValid(userId) {
            throw AssentServerError.invalidRequest(UserID.requirement)
        }
        // Nobody is signed in yet: the options never list a named account's credentials (WebAuthn §14.6.3), which
        // would tell anyone who asks whether the account exists and which authenticators it uses. The browser offers
        // its discoverable passkeys, and the credential names its account.
        return try await passkeys.requestOptions(application, userId: nil, purpose: .signIn)
    }

    /// `POST /api/tfa/passkey/login`: a passkey that verified its user signs the person in with no password and no
    /// second factor (`amr` e.g. `["hwk", "user", "mfa"]`).
    func signIn(_ request: PasskeyLoginRequest) async throws -> TFALoginSuccess {
        let application = try await flows.application(request.application)
        try await requireFirstFactor(application)
        let (passkey, verified) = try await passkeys.authenticate(
            application, credential: request.credential, userId: nil, purpose: .signIn)
        await audit(
            .passkeySignIn, userId: passkey.userId, application: application.id, actor: "user",
            "Signed in with passkey \(passkey.factorId).")
        return try await flows.success(
            application, passkey.userId, amr: PasskeyService.methods(passkey, userVerified: verified.userVerified),
            provider: TFAProvider.passkey.rawValue)
    }

    /// Counts a passwordless sign-in request from `address` against its limit (each hands out a stored challenge).
    private func countSignIn(address: String, application: ApplicationRecord) async throws {
        let rule = try await applicationLimits.rules(application.id)
            .passkeySignInsPerAddress
        try await flows.limiter.check(rule, "passkey.address", address)
        await flows.limiter.recordFailure(rule, "passkey.address", address)
    }

    private func requireFirstFactor(_ application: ApplicationRecord) async throws {
        guard try await passkeys.policy(application.id).firstFactor ?? true else {
            throw TFAError(
                status: .forbidden, error: .passkeyNotAllowed,
                message: "This application does not let a passkey alone sign in: sign in with your password.")
        }
    }
}
