import AssentCrypto
import AssentModel
import AssentQR
import Foundation

/// The TOTP provider: registration hands out a new secret as an `otpauth://` URI and its QR code (SHA1, 6 digits,
/// 30 s: the only parameters every authenticator app honours); verification accepts the step before, the current
/// and the next one, and never the same step twice.
struct TOTPFactor: Sendable {
    let flows: TFAService
    /// The part of the store this sees.
    let store: any TFAStore
    let clock: WallClock
    let audit: Auditor
    let tfa: TFASettings

    /// `accounts.tfa.totp.register`: a new pending secret for the flow's account.
    func register(_ request: TOTPRegisterRequest) async throws -> TOTPRegisterResponse {
        let (challenge, flow) = try await flows.challenge(request.assertion, provider: .totp)
        guard challenge.mode == .register else {
            throw TFAError(
                status: .badRequest, error: .invalidAssertion,
                message: "This assertion verifies a registered TOTP factor; registering needs mode register.")
        }
        let application = try await flows.applicationRecord(id: flow.applicationId)
        let factor: TFAFactorRecord
        if let id = challenge.factorId, let issued = try await store.tfaFactor(id: id),
            issued.state == .pending
        {
            // Asking again shows the secret this assertion already issued: one pending secret per assertion.
            factor = issued
        } else {
            factor = TFAFactorRecord(
                id: TFATokens.id(), applicationId: flow.applicationId, userId: flow.userId, provider: .totp,
                state: .pending, secret: Bytes.random(count: 20), createdAt: clock.millis)
            try await store.insertTFAFactor(factor)
            try await store.setTFAChallengeFactor(
                assertionHash: challenge.assertionHash, factorId: factor.id)
        }
        let uri = OTPKeyURI(
            issuer: Self.labelPart(tfa.totpIssuer ?? application.name),
            account: Self.labelPart(flow.userId), secret: factor.secret ?? Data()
        ).text
        let qr = try QRCode(text: uri, errorCorrection: .medium)
        await audit(
            .tfaTotpRegistered, userId: flow.userId, application: flow.applicationId, actor: "user",
            "TOTP secret issued.")
        return TOTPRegisterResponse(qrCode: qr.pngDataURL(), uri: uri, sctToken: factor.id)
    }

    /// `accounts.tfa.totp.verify`: a code of the flow's factor (the one just registered, named by `sctToken`, or
    /// the account's registered one).
    func verify(_ request: TOTPVerifyRequest) async throws -> TFAProofResponse {
        let (challenge, flow) = try await flows.challenge(request.assertion, provider: .totp)
        guard let factorId = challenge.factorId else {
            throw TFAError(
                status: .badRequest, error: .totpNotRegistered,
                message: "Register the TOTP secret (/api/tfa/totp/register) before verifying a code.")
        }
        if let sctToken = request.sctToken, challenge.mode == .register,
            !Bytes.constantTimeEqual(Data(sctToken.utf8), Data(factorId.utf8))
        {
            throw TFAError(
                status: .badRequest, error: .invalidSctToken,
                message: "The sctToken is not the secret this registration issued: register again.")
        }
        guard let factor = try await store.tfaFactor(id: factorId), let secret = factor.secret,
            factor.state == (challenge.mode == .register ? .pending : .active)
        else { throw TFAError.challengeSpent() }
        let left = try await flows.takeAttempt(challenge, flow: flow)
        let totp = try TOTP(secret: secret)
        let now = clock.now()
        guard request.code.count == totp.hotp.digits, request.code.allSatisfy(\.isASCII),
            let step = totp.validate(request.code, at: UInt64(max(0, now.timeIntervalSince1970)))
        else {
            await flows.recordFailure(flow)
            throw TFAError.invalidCode(attemptsLeft: left)
        }
        guard try await store.claimTOTPStep(factorId: factor.id, step: Int64(step), at: now.millis) else {
            await flows.recordFailure(flow)
            throw TFAError.codeUsed()
        }
        if challenge.mode == .register {
            guard
                try await store.activateTFAFactor(id: factor.id, replacing: .totp, at: now.millis)
            else { throw TFAError.challengeSpent() }
        }
        return try await flows.pass(challenge)
    }

    /// A label part as authenticator apps read it: a colon would split issuer from account, so it becomes a space
    /// (as Keycloak does).
    static func labelPart(_ text: String) -> String { text.replacingOccurrences(of: ":", with: " ") }
}
