import Foundation

/// A second factor a website login can ask for (seed 004's `TFAProvider`; the seed's names are in
/// ``gigyaName``).
public enum TFAProvider: String, Codable, Sendable, CaseIterable {
    case email
    case phone
    case totp
    case push
    /// A WebAuthn credential (a passkey or a security key); not in seed 004, which predates them.
    case passkey
    /// Single-use backup codes, for when the other factors are out of reach; not in seed 004.
    case backup

    /// The seed's wire name (`gigyaEmail`, `gigyaPhone`, `gigyaTotp`, `gigyaPush`; `assentPasskey` and
    /// `assentBackupCode` for the providers the seed does not have).
    public var gigyaName: String {
        switch self {
        case .email: "gigyaEmail"
        case .phone: "gigyaPhone"
        case .totp: "gigyaTotp"
        case .push: "gigyaPush"
        case .passkey: "assentPasskey"
        case .backup: "assentBackupCode"
        }
    }
}

/// Whether a second-factor flow registers a new factor or verifies a registered one (seed 004's `TFAMode`).
public enum TFAMode: String, Codable, Sendable {
    case register
    case verify
}

/// One provider in an interruption or a providers list.
public struct TFAProviderInfo: Codable, Sendable, Equatable {
    public var name: TFAProvider

    public init(name: TFAProvider) { self.name = name }
}

/// The interruption codes of seed 004.
public enum TFAErrorCode {
    /// The account has second factors: verify one (`pendingTwoFactorVerification`).
    public static let pendingVerification = 403101
    /// The account must register a second factor (`pendingTwoFactorRegistration`).
    public static let pendingRegistration = 403102
    /// A wrong verification code (the seed's "invalid parameter value", mapped to `.invalidCode`).
    public static let invalidCode = 400006
}

/// `POST /api/tfa/login`: a first factor (password) and, if the browser or app was remembered, its device token.
public struct TFALoginRequest: Codable, Sendable {
    /// The application's id or key; the default application when absent.
    public var application: String?
    public var userId: String
    public var password: String
    public var deviceToken: String?

    public init(application: String? = nil, userId: String, password: String, deviceToken: String? = nil) {
        self.application = application
        self.userId = userId
        self.password = password
        self.deviceToken = deviceToken
    }
}

/// A finished login: a signed login token for the relying party and, after `rememberDevice`, the device token
/// that skips the second factor next time.
public struct TFALoginSuccess: Codable, Sendable, Equatable {
    /// Always `OK`.
    public var status: String
    public var userId: String
    /// A JWS (ES256, keys at `/oauth2/jwks`): iss, sub, aud (the application id), iat, exp, amr, `tfa` (the
    /// provider that passed, absent when none was needed).
    public var loginToken: String
    public var deviceToken: String?
    public var deviceTokenExpiresAt: Date?

    public init(
        userId: String, loginToken: String, deviceToken: String? = nil, deviceTokenExpiresAt: Date? = nil
    ) {
        status = "OK"
        self.userId = userId
        self.loginToken = loginToken
        self.deviceToken = deviceToken
        self.deviceTokenExpiresAt = deviceTokenExpiresAt
    }
}

/// The answer of a login that a second factor interrupts (HTTP 403 from `/api/tfa/login`; 200 from the operator
/// API's `POST /api/v1/tfa/logins`).
public struct TFAInterruption: Codable, Sendable, Equatable {
    /// `PENDING_TFA_VERIFICATION` or `PENDING_TFA_REGISTRATION`.
    public var code: String
    /// 403101 or 403102.
    public var errorCode: Int
    public var message: String
    /// Signed, single use, short-lived: every later call of the flow names it.
    public var regToken: String
    public var regTokenExpiresAt: Date
    /// The providers the account has (verification).
    public var activeProviders: [TFAProviderInfo]
    /// The providers it may register (registration).
    public var inactiveProviders: [TFAProviderInfo]

    public init(
        code: String, errorCode: Int, message: String, regToken: String, regTokenExpiresAt: Date,
        activeProviders: [TFAProviderInfo], inactiveProviders: [TFAProviderInfo]
    ) {
        self.code = code
        self.errorCode = errorCode
        self.message = message
        self.regToken = regToken
        self.regTokenExpiresAt = regTokenExpiresAt
        self.activeProviders = activeProviders
        self.inactiveProviders = inactiveProviders
    }
}

/// `POST /api/tfa/providers`.
public struct TFAProvidersRequest: Codable, Sendable {
    public var regToken: String
    public init(regToken: String) { self.regToken = regToken }
}

/// The account's registered providers and those it may still register (`accounts.tfa.getProviders`).
public struct TFAProvidersResponse: Codable, Sendable, Equatable {
    public var activeProviders: [TFAProviderInfo]
    public var inactiveProviders: [TFAProviderInfo]

    public init(activeProviders: [TFAProviderInfo], inactiveProviders: [TFAProviderInfo]) {
        self.activeProviders = activeProviders
        self.inactiveProviders = inactiveProviders
    }
}

/// `POST /api/tfa/init`: starts one provider's part of the flow (`accounts.tfa.initTFA`).
public struct TFAInitRequest: Codable, Sendable {
    public var regToken: String
    public var provider: TFAProvider
    public var mode: TFAMode

    public init(regToken: String, provider: TFAProvider, mode: TFAMode) {
        self.regToken = regToken
        self.provider = provider
        self.mode = mode
    }
}

/// The per-flow assertion the provider's calls carry (the seed's `gigyaAssertion`).
public struct TFAInitResponse: Codable, Sendable, Equatable {
    public var assertion: String
    public var expiresAt: Date

    public init(assertion: String, expiresAt: Date) {
        self.assertion = assertion
        self.expiresAt = expiresAt
    }
}

/// `POST /api/tfa/totp/register`.
public struct TOTPRegisterRequest: Codable, Sendable {
    public var assertion: String
    public init(assertion: String) { self.assertion = assertion }
}

/// A new TOTP secret to scan: the `otpauth://` URI and its QR code as a PNG data URL; `sctToken` names it in the
/// verification that activates it.
public struct TOTPRegisterResponse: Codable, Sendable, Equatable {
    public var qrCode: String
    public var uri: String
    public var sctToken: String

    public init(qrCode: String, uri: String, sctToken: String) {
        self.qrCode = qrCode
        self.uri = uri
        self.sctToken = sctToken
    }
}

/// `POST /api/tfa/totp/verify`: `sctToken` only right after registration.
public struct TOTPVerifyRequest: Codable, Sendable {
    public var assertion: String
    public var code: String
    public var sctToken: String?

    public init(assertion: String, code: String, sctToken: String? = nil) {
        self.assertion = assertion
        self.code = code
        self.sctToken = sctToken
    }
}

/// Proof that the provider's factor passed (the seed's `providerAssertion`), for ``TFAFinalizeRequest``.
public struct TFAProofResponse: Codable, Sendable, Equatable {
    public var providerAssertion: String
    public init(providerAssertion: String) { self.providerAssertion = providerAssertion }
}

/// `POST /api/tfa/finalize` (`accounts.tfa.finalizeTFA` + `accounts.finalizeRegistration`): ends the flow with the
/// login's success. `rememberDevice` asks for a device token (the seed's `tempDevice = false`).
public struct TFAFinalizeRequest: Codable, Sendable {
    public var regToken: String
    public var assertion: String
    public var providerAssertion: String
    public var rememberDevice: Bool?

    public init(regToken: String, assertion: String, providerAssertion: String, rememberDevice: Bool = false) {
        self.regToken = regToken
        self.assertion = assertion
        self.providerAssertion = providerAssertion
        self.rememberDevice = rememberDevice
    }
}

// MARK: Operator API

/// `POST /api/v1/tfa/accounts`: a login account (password optional: a relying party that checks the first factor
/// itself starts flows with `POST /api/v1/tfa/logins`).
public struct CreateTFAAccountRequest: Codable, Sendable {
    public var userId: String
    public var password: String?
    /// Addresses the operator vouches for: e-mail second factors from the start.
    public var emails: [String]?
    /// The name people know the user by (1 to 100 characters; the `name` claim of Sign in with Assent).
    public var name: String?

    public init(userId: String, password: String? = nil, emails: [String]? = nil, name: String? = nil) {
        self.name = name
        self.userId = userId
        self.password = password
        self.emails = emails
    }
}

/// A registered second factor as the operator sees it (no secrets).
public struct TFAFactorInfo: Codable, Sendable, Equatable {
    public var id: String
    public var provider: TFAProvider
    /// The address or number with most of it hidden; absent for TOTP and push.
    public var obfuscated: String?
    public var createdAt: Date
    public var lastVerification: Date?

    public init(id: String, provider: TFAProvider, obfuscated: String?, createdAt: Date, lastVerification: Date?) {
        self.id = id
        self.provider = provider
        self.obfuscated = obfuscated
        self.createdAt = createdAt
        self.lastVerification = lastVerification
    }
}

/// What `POST /api/v1/tfa/accounts/{userId}/sign-out` ended.
public struct TFASignOutResponse: Codable, Sendable, Equatable {
    public var userId: String
    /// Refresh tokens that were live and are now revoked (their access tokens are gone too).
    public var refreshTokensRevoked: Int
    /// Browser sessions signed in as the person that ended (each client's back-channel logout is queued).
    public var sessionsEnded: Int

    public init(userId: String, refreshTokensRevoked: Int, sessionsEnded: Int) {
        self.userId = userId
        self.refreshTokensRevoked = refreshTokensRevoked
        self.sessionsEnded = sessionsEnded
    }
}

/// A login account of the default application.
public struct TFAAccountInfo: Codable, Sendable, Equatable {
    public var userId: String
    public var name: String?
    public var hasPassword: Bool
    public var factors: [TFAFactorInfo]
    public var createdAt: Date
    /// When an operator disabled the account (absent: it is enabled).
    public var disabledAt: Date?
    /// The language the person chose for their pages and mail on `/account` (absent: their browser's).
    public var language: String?

    public init(
        userId: String, name: String? = nil, hasPassword: Bool, factors: [TFAFactorInfo], createdAt: Date,
        disabledAt: Date? = nil, language: String? = nil
    ) {
        self.disabledAt = disabledAt
        self.language = language
        self.name = name
        self.userId = userId
        self.hasPassword = hasPassword
        self.factors = factors
        self.createdAt = createdAt
    }
}

/// `PATCH /api/v1/tfa/accounts/{userId}`: changes what the operator may change of an account.
public struct UpdateTFAAccountRequest: Codable, Sendable, Equatable {
    /// The display name; an empty string removes it.
    public var name: String?
    /// `true` disables the account (no sign-in, every grant and session ended), `false` enables it again.
    public var disabled: Bool?

    public init(name: String? = nil, disabled: Bool? = nil) {
        self.name = name
        self.disabled = disabled
    }
}

/// `POST /api/v1/tfa/logins`: the relying party checked the first factor; Assent decides on the second.
public struct StartTFALoginRequest: Codable, Sendable {
    public var userId: String
    public var deviceToken: String?

    public init(userId: String, deviceToken: String? = nil) {
        self.userId = userId
        self.deviceToken = deviceToken
    }
}

/// The answer of `POST /api/v1/tfa/logins`: the login's success (no second factor needed) or its interruption.
public struct StartTFALoginResponse: Codable, Sendable, Equatable {
    public var success: TFALoginSuccess?
    public var interruption: TFAInterruption?

    public init(success: TFALoginSuccess? = nil, interruption: TFAInterruption? = nil) {
        self.success = success
        self.interruption = interruption
    }
}

/// The application's second-factor policy: whether every login needs one, and which providers it allows.
public struct TFAPolicy: Codable, Sendable, Equatable {
    public var required: Bool
    public var providers: [TFAProvider]
    /// Push sign-ins: `choose` (default: the phone offers three numbers), `type` (the person types it) or `off`.
    public var numberMatching: String?
    /// Push-bombing limits of this application (the server's defaults where absent, `assent serve --push-…`):
    /// push sign-ins per account per hour; rejected or unanswered ones within `pushRefusalWindow` seconds that start
    /// a cool-down of that length; how long a fraud report suspends push sign-ins, seconds.
    public var pushLoginsPerHour: Int?
    public var pushRefusalLimit: Int?
    public var pushRefusalWindow: Int?
    public var pushFraudSuspension: Int?
    /// How this application uses passkeys (the defaults of ``PasskeyPolicy`` where absent).
    public var passkeys: PasskeyPolicy?

    public init(
        required: Bool, providers: [TFAProvider], numberMatching: String? = nil, pushLoginsPerHour: Int? = nil,
        pushRefusalLimit: Int? = nil, pushRefusalWindow: Int? = nil, pushFraudSuspension: Int? = nil,
        passkeys: PasskeyPolicy? = nil
    ) {
        self.passkeys = passkeys
        self.numberMatching = numberMatching
        self.pushLoginsPerHour = pushLoginsPerHour
        self.pushRefusalLimit = pushRefusalLimit
        self.pushRefusalWindow = pushRefusalWindow
        self.pushFraudSuspension = pushFraudSuspension
        self.required = required
        self.providers = providers
    }
}

/// A remembered browser or app.
public struct RememberedDeviceInfo: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var createdAt: Date
    public var expiresAt: Date
    public var lastUsedAt: Date?
    public var revokedAt: Date?

    public init(id: String, userId: String, createdAt: Date, expiresAt: Date, lastUsedAt: Date?, revokedAt: Date?) {
        self.id = id
        self.userId = userId
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.lastUsedAt = lastUsedAt
        self.revokedAt = revokedAt
    }
}

/// The user's remembered devices, newest first.
public struct RememberedDeviceList: Codable, Sendable, Equatable {
    public var devices: [RememberedDeviceInfo]
    public init(devices: [RememberedDeviceInfo]) { self.devices = devices }
}

// MARK: Codes by e-mail, SMS and voice

/// How a code reaches a phone (seed 004's `TFAPhoneMethod`).
public enum TFAPhoneMethod: String, Codable, Sendable {
    case sms
    case voice
}

/// A registered address, hidden but recognisable (`TFAEmail`).
public struct TFAEmail: Codable, Sendable, Equatable {
    public var id: String
    public var obfuscated: String
    public var lastVerification: Date?

    public init(id: String, obfuscated: String, lastVerification: Date?) {
        self.id = id
        self.obfuscated = obfuscated
        self.lastVerification = lastVerification
    }
}

/// `POST /api/tfa/email/emails` and `/api/tfa/phone/phones` take the assertion alone.
public struct TFAAssertionRequest: Codable, Sendable {
    public var assertion: String
    public init(assertion: String) { self.assertion = assertion }
}

/// `POST /api/tfa/push/send`: the assertion, and what the website knows of the person's browser — shown on the phone
/// (and signed with the approval) so that a sign-in someone else started stands out.
public struct TFAPushSendRequest: Codable, Sendable {
    public var assertion: String
    /// The person's browser's `User-Agent` (the phone shows e.g. "Chrome on macOS").
    public var userAgent: String?
    /// The person's IP address as the website saw it.
    public var ipAddress: String?

    public init(assertion: String, userAgent: String? = nil, ipAddress: String? = nil) {
        self.assertion = assertion
        self.userAgent = userAgent
        self.ipAddress = ipAddress
    }
}

/// The account's addresses (`accounts.tfa.email.getEmails`).
public struct TFAEmailsResponse: Codable, Sendable, Equatable {
    public var emails: [TFAEmail]
    public init(emails: [TFAEmail]) { self.emails = emails }
}

/// `POST /api/tfa/email/send`: a code to one of the account's addresses.
public struct TFAEmailSendRequest: Codable, Sendable {
    public var assertion: String
    public var emailId: String
    /// The message language; when absent or not one the texts are written in, the account's own (chosen on
    /// `/account`), else the application's default, else `en`.
    public var lang: String?

    public init(assertion: String, emailId: String, lang: String? = nil) {
        self.assertion = assertion
        self.emailId = emailId
        self.lang = lang
    }
}

/// A registered number, hidden but recognisable (`TFARegisteredPhone`).
public struct TFARegisteredPhone: Codable, Sendable, Equatable {
    public var id: String
    public var obfuscated: String
    public var lastMethod: TFAPhoneMethod?
    public var lastVerification: Date?

    public init(id: String, obfuscated: String, lastMethod: TFAPhoneMethod?, lastVerification: Date?) {
        self.id = id
        self.obfuscated = obfuscated
        self.lastMethod = lastMethod
        self.lastVerification = lastVerification
    }
}

/// The account's numbers (`accounts.tfa.phone.getRegisteredPhoneNumbers`).
public struct TFAPhonesResponse: Codable, Sendable, Equatable {
    public var phones: [TFARegisteredPhone]
    public init(phones: [TFARegisteredPhone]) { self.phones = phones }
}

/// `POST /api/tfa/phone/send`: registration names a new number (`phone`, E.164), verification a registered one
/// (`phoneId`).
public struct TFAPhoneSendRequest: Codable, Sendable {
    public var assertion: String
    public var phone: String?
    public var phoneId: String?
    public var method: TFAPhoneMethod
    public var lang: String?

    public init(
        assertion: String, phone: String? = nil, phoneId: String? = nil, method: TFAPhoneMethod = .sms,
        lang: String? = nil
    ) {
        self.assertion = assertion
        self.phone = phone
        self.phoneId = phoneId
        self.method = method
        self.lang = lang
    }
}

/// A code is on its way; `phvToken` names it in the verification.
public struct TFACodeSent: Codable, Sendable, Equatable {
    public var phvToken: String
    public var expiresAt: Date

    public init(phvToken: String, expiresAt: Date) {
        self.phvToken = phvToken
        self.expiresAt = expiresAt
    }
}

/// `POST /api/tfa/email/verify` and `/api/tfa/phone/verify` (`completeVerification`).
public struct TFACodeVerifyRequest: Codable, Sendable {
    public var assertion: String
    public var phvToken: String
    public var code: String

    public init(assertion: String, phvToken: String, code: String) {
        self.assertion = assertion
        self.phvToken = phvToken
        self.code = code
    }
}

/// `POST /api/v1/tfa/accounts/{userId}/emails`: an address the operator vouches for.
public struct AddTFAEmailRequest: Codable, Sendable {
    public var email: String
    public init(email: String) { self.email = email }
}

/// What the SMS/voice gateway receives (signed with `X-Assent-Signature`, like webhooks): one message to one
/// number. `id` is stable across retries, so a gateway can drop a redelivery.
public struct PhoneMessage: Codable, Sendable, Equatable {
    public var id: String
    /// `sms` or `voice`.
    public var channel: TFAPhoneMethod
    /// E.164, e.g. `+420777123456`.
    public var to: String
    /// The whole text to send or read out.
    public var text: String
    /// The code alone (a voice gateway may spell it digit by digit).
    public var code: String
    public var lang: String
    public var expiresAt: Date

    public init(
        id: String, channel: TFAPhoneMethod, to: String, text: String, code: String, lang: String, expiresAt: Date
    ) {
        self.id = id
        self.channel = channel
        self.to = to
        self.text = text
        self.code = code
        self.lang = lang
        self.expiresAt = expiresAt
    }
}

// MARK: Push

/// `POST /api/tfa/push/optin`: the activated Assent device that will approve sign-ins (registration).
public struct TFAPushOptInRequest: Codable, Sendable {
    public var assertion: String
    public var activationId: String

    public init(assertion: String, activationId: String) {
        self.assertion = assertion
        self.activationId = activationId
    }
}

/// The operation the user's devices now show (opt-in confirmation or sign-in approval).
public struct TFAPushSent: Codable, Sendable, Equatable {
    public var operationId: String
    public var expiresAt: Date
    /// The number to show beside the wait (number matching): the phone asks for it.
    public var number: Int?

    public init(operationId: String, expiresAt: Date, number: Int? = nil) {
        self.number = number
        self.operationId = operationId
        self.expiresAt = expiresAt
    }
}

/// `POST /api/tfa/push/verify`: `PENDING` while the devices have not answered, `APPROVED` with the proof.
public struct TFAPushStatus: Codable, Sendable, Equatable {
    public var status: String
    public var providerAssertion: String?

    public init(status: String, providerAssertion: String? = nil) {
        self.status = status
        self.providerAssertion = providerAssertion
    }
}
