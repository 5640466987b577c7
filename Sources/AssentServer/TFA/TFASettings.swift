import AssentCrypto
import AssentModel
import Foundation
import HTTPTypes
import Hummingbird
import X509

/// Two-factor login's settings, with the defaults a bank would pick.
public struct TFASettings: Sendable {
    /// How long a `regToken` (the flow a second factor interrupted) lives, seconds.
    public var flowLifetime = 600
    /// How long a provider's assertion and the code it sends stay valid, seconds (codes: 5 minutes).
    public var challengeLifetime = 300
    /// Tries per code (or per TOTP assertion); a wrong code says how many are left.
    public var attemptsPerChallenge = 5
    /// How long a remembered device skips the second factor, seconds (30 days).
    public var rememberedDeviceLifetime = 30 * 86_400
    /// How long a login token is valid for the relying party to read, seconds.
    public var loginTokenLifetime = 300
    /// The issuer shown in authenticator apps; the application's name when absent.
    public var totpIssuer: String?
    /// The password hash parameters for new hashes.
    public var passwordHasher = PasswordHasher.default
    /// How long after a code another may be sent for the same assertion, seconds.
    public var resendCooldown = 30
    /// The mail relay e-mail codes go through; without it, e-mail is not offered.
    public var mail: SMTPSettings?
    /// The SMS/voice gateway phone codes go to; without it, phone is not offered.
    public var phoneGateway: WebhookSettings?
    /// Push sign-ins one account may start per hour (push bombing: a flood of requests until one is approved).
    public var pushLoginsPerHour = 10
    /// Push sign-ins rejected or left unanswered within ``pushRefusalWindow`` seconds after which no new one is sent
    /// until the window has passed (a cool-down).
    public var pushRefusalLimit = 3
    public var pushRefusalWindow = 900
    /// How long push sign-ins stay suspended after the phone reported one as fraud ("This wasn't me"), seconds.
    public var pushFraudSuspension = 3_600

    /// Root certificates a passkey's attestation may chain to, per attestation format (`packed`, `tpm`,
    /// `android-key`, `apple`, …; `assent serve --passkey-attestation-roots [FORMAT=]FILE`), for applications whose
    /// passkey policy asks for `direct` attestation. A format without roots is never trusted.
    public var passkeyAttestationRoots: [String: [Certificate]] = [:]

    /// Reads `--passkey-attestation-roots` values: `FORMAT=FILE` gives a format its roots, a bare `FILE` every
    /// format; several add up. `read` returns a file's contents.
    /// - Throws: a sentence naming the value for an unknown format, a file that cannot be read or holds no PEM
    ///   certificate.
    public static func attestationRoots(_ values: [String], read: (String) -> Data?) throws(AssentServerError)
        -> [String: [Certificate]]
    {
        var roots: [String: [Certificate]] = [:]
        for value in values {
            var formats = WebAuthn.attestationFormats.filter { $0 != "none" }
            var path = value
            if let equals = value.firstIndex(of: "="), !value[..<equals].contains("/") {
                let format = String(value[..<equals])
                guard formats.contains(format) else {
                    throw .configuration(
                        "--passkey-attestation-roots: \(format) is not an attestation format (one of "
                            + "\(formats.joined(separator: ", "))).")
                }
                formats = [format]
                path = String(value[value.index(after: equals)...])
            }
            guard let data = read(path) else {
                throw .configuration("Cannot read the passkey attestation roots \(path).")
            }
            guard let certificates = try? AttestationTrust.certificates(pem: String(decoding: data, as: UTF8.self)),
                !certificates.isEmpty
            else {
                throw .configuration("\(path) holds no PEM certificates.")
            }
            for format in formats { roots[format, default: []] += certificates }
        }
        return roots
    }

    /// The providers this server can offer: TOTP, push (an activated Assent device), passkeys and backup codes
    /// always, e-mail and phone when their delivery is configured. A new application allows all of them until the operator sets
    /// its policy.
    public var offeredProviders: [TFAProvider] {
        [.totp] + (mail == nil ? [] : [.email]) + (phoneGateway == nil ? [] : [.phone]) + [.push, .passkey, .backup]
    }

    public init() {}
}

/// A two-factor login failure: the seed's numeric `errorCode` where it has one, a stable `code`, a sentence, and
/// fields the client needs (tries left).
struct TFAError: RenderedError, Sendable, Equatable {
    /// The two-factor API's flow error codes.
    typealias Code = TFAFlowErrorCode

    var status: HTTPResponse.Status
    var error: Code
    var errorCode: Int?
    var message: String
    var attemptsLeft: Int?
    /// Seconds until the refusal ends (`Retry-After`).
    var retryAfter: Int? = nil

    /// A wrong code (400006), with the tries left for this assertion.
    static func invalidCode(attemptsLeft: Int) -> TFAError {
        TFAError(
            status: .badRequest, error: .invalidCode, errorCode: TFAErrorCode.invalidCode,
            message: attemptsLeft > 0
                ? "The code is wrong: \(attemptsLeft) \(attemptsLeft == 1 ? "try" : "tries") left."
                : "The code is wrong and no tries are left: start the second factor again.",
            attemptsLeft: attemptsLeft)
    }

    /// A TOTP code of a time step already used.
    static func codeUsed() -> TFAError {
        TFAError(
            status: .badRequest, error: .codeAlreadyUsed, errorCode: TFAErrorCode.invalidCode,
            message: "This code was already used: wait for the authenticator's next code.")
    }

    /// The assertion has no tries left, expired, or already passed.
    static func challengeSpent() -> TFAError {
        TFAError(
            status: .badRequest, error: .assertionSpent,
            message: "This verification has expired, passed, or used all its tries: start the second factor again.")
    }

    /// The `regToken` is unknown, forged, expired or already finalized.
    static func invalidRegToken() -> TFAError {
        TFAError(
            status: .unauthorized, error: .invalidRegToken,
            message: "The regToken is invalid, expired or already used: sign in again.")
    }

    /// An operator disabled the account.
    static func accountDisabled() -> TFAError {
        TFAError(
            status: .forbidden, error: .accountDisabled,
            message: "This account is disabled: ask the organisation that runs it to enable it again.")
    }

    /// Unknown user or wrong password (never which).
    static func invalidLogin() -> TFAError {
        TFAError(status: .unauthorized, error: .invalidLogin, message: "The user id or the password is wrong.")
    }

    var code: String { error.rawValue }

    var response: Response {
        var body: [String: JSONValue] = ["code": .string(code), "message": .string(message)]
        if let errorCode { body["errorCode"] = .number(Decimal(errorCode)) }
        if let attemptsLeft { body["attemptsLeft"] = .number(Decimal(attemptsLeft)) }
        let data = (try? JSONEncoder().encode(body)) ?? Data()
        var headers: HTTPFields = [.contentType: "application/json", .cacheControl: "no-store"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
