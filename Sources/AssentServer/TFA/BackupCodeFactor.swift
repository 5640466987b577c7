import AssentCrypto
import AssentModel
import Crypto
import Foundation

/// Backup codes: ten single-use codes of 60 random bits each (twelve characters of Crockford's Base32, shown as
/// `xxxx-xxxx-xxxx`), for a sign-in when the account's other factors are out of reach. They are shown once, stored
/// as SHA-256 hashes salted with their factor's id, and a new set replaces the old one. They are never the factor an
/// account registers in a login: a person makes them after signing in with two factors.
struct BackupCodeFactor: Sendable {
    let flows: TFAService
    /// The part of the store this sees.
    let store: any BackupCodeStore & TFAStore
    let clock: WallClock
    let audit: Auditor

    static let count = 10
    static let length = 12
    /// A sign-in with one of the last this many codes says so.
    static let lowWater = 2
    static let alphabet = Array("0123456789abcdefghjkmnpqrstvwxyz")

    /// A new set for the account, replacing its old one; the codes in their written form.
    func generate(applicationId: String, userId: String, actor: String) async throws -> [String] {
        let now = clock.millis
        let factor = TFAFactorRecord(
            id: TFATokens.id(), applicationId: applicationId, userId: userId, provider: .backup, state: .active,
            createdAt: now, lastVerifiedAt: now)
        let codes = (0..<Self.count).map { _ in Self.newCode() }
        try await store.replaceBackupCodes(factor, hashes: codes.map { Self.hash($0, factorId: factor.id) })
        await audit(
            .tfaBackupCodesGenerated, userId: userId, application: applicationId, actor: actor,
            "\(Self.count) new backup codes; the old ones are void.")
        return codes.map { LoginPages.grouped($0, separator: "-") }
    }

    /// `POST /api/tfa/backup/generate`: new codes for the account of a two-factor login token this server signed.
    func generate(_ request: BackupCodeGenerateRequest) async throws -> BackupCodeList {
        guard let claims = try await flows.tokens.verify(request.loginToken, use: .login),
            (claims.amr ?? []).contains("mfa")
        else {
            throw AssentServerError(
                .unauthorized,
                "Backup codes are made with the login token of a sign-in with two factors, within its 5 minutes.")
        }
        return BackupCodeList(codes: try await generate(applicationId: claims.aud, userId: claims.sub, actor: "user"))
    }

    /// `POST /api/tfa/backup/verify`: one of the account's unused codes passes the challenge and is used up.
    func verify(_ request: BackupCodeVerifyRequest) async throws -> BackupCodeProofResponse {
        let (challenge, flow) = try await flows.challenge(request.assertion, provider: .backup)
        let factors = try await store.tfaFactors(applicationId: flow.applicationId, userId: flow.userId)
        guard let factor = factors.last(where: { $0.provider == .backup && $0.state == .active }) else {
            throw TFAError(
                status: .badRequest, error: .providerNotRegistered, message: "The account has no backup codes.")
        }
        let left = try await flows.takeAttempt(challenge, flow: flow)
        guard let code = Self.normalized(request.code),
            let remaining = try await store.useBackupCode(
                factorId: factor.id, hash: Self.hash(code, factorId: factor.id), at: clock.millis)
        else {
            await flows.recordFailure(flow)
            throw TFAError.invalidCode(attemptsLeft: left)
        }
        try await store.setTFAChallengeFactor(
            assertionHash: challenge.assertionHash, factorId: factor.id)
        await audit(
            .tfaBackupCodeUsed, userId: flow.userId, application: flow.applicationId, actor: "user",
            "A backup code was used; \(remaining) left.")
        return BackupCodeProofResponse(
            providerAssertion: try await flows.pass(challenge).providerAssertion, remaining: remaining)
    }

    // MARK: Codes

    static func newCode() -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
    }

    /// A typed code as stored: case, spaces and hyphens ignored, and the letters Crockford's Base32 reads as digits
    /// (`o` → 0, `i` and `l` → 1); `nil` for anything else.
    static func normalized(_ typed: String) -> String? {
        let mapped = typed.lowercased().compactMap { character -> Character? in
            switch character {
            case " ", "-": nil
            case "o": "0"
            case "i", "l": "1"
            default: character
            }
        }
        guard mapped.count == length, mapped.allSatisfy(alphabet.contains) else { return nil }
        return String(mapped)
    }

    static func hash(_ code: String, factorId: String) -> Data {
        Data(SHA256.hash(data: Data("\(factorId):\(code)".utf8)))
    }
}
