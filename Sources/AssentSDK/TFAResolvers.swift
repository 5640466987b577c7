import AssentModel
import Foundation

/// Builds the resolvers of one interrupted login (seed 004's `TFAResolverFactory.getResolver(for:)`).
public struct TFAResolverFactory: Sendable {
    let service: TFAService
    let regToken: String

    /// A resolver of `type` for this login.
    public func getResolver<Resolver: TFAResolver>(for type: Resolver.Type) -> Resolver {
        Resolver(flow: TFAFlow(service: service, regToken: regToken))
    }

    /// The account's providers and those it may register (`accounts.tfa.getProviders`).
    public func providers() async throws -> TFAProvidersResponse {
        try await service.post("/api/tfa/providers", TFAProvidersRequest(regToken: regToken))
    }
}

/// One interrupted login as a resolver sees it: its service and `regToken`.
public struct TFAFlow: Sendable {
    let service: TFAService
    let regToken: String

    /// Starts a provider's part and returns its assertion (`accounts.tfa.initTFA`).
    func start(_ provider: TFAProvider, _ mode: TFAMode) async throws -> String {
        let answer: TFAInitResponse = try await service.post(
            "/api/tfa/init", TFAInitRequest(regToken: regToken, provider: provider, mode: mode))
        return answer.assertion
    }

    func finalize(_ assertion: String, _ proof: TFAProofResponse, rememberDevice: Bool) async throws -> TFASession {
        try await service.finalize(
            regToken: regToken, assertion: assertion, providerAssertion: proof.providerAssertion,
            rememberDevice: rememberDevice)
    }
}

/// A resolver of one provider; ``TFAResolverFactory`` builds them.
public protocol TFAResolver: Sendable {
    init(flow: TFAFlow)
}

/// What a code verification came to (`VerifyCodeResultCallback`); other failures are thrown.
public enum VerifyCodeResult: Sendable, Equatable {
    /// The login is finished.
    case resolved(TFASession)
    /// The code was wrong; `attemptsLeft` more may be tried with this resolver.
    case invalidCode(attemptsLeft: Int)
}

/// Remembers a provider's assertion once started, so that a resolver's calls share it.
actor AssertionHolder {
    private var assertion: String?

    init(_ assertion: String? = nil) { self.assertion = assertion }

    func get(_ start: @Sendable () async throws -> String) async throws -> String {
        if let assertion { return assertion }
        let started = try await start()
        assertion = started
        return started
    }
}

/// Verifies a code sent by e-mail, SMS or voice (seed 004's `VerifyCodeResolver`).
public struct VerifyCodeResolver: Sendable {
    let flow: TFAFlow
    let provider: TFAProvider
    let assertion: String
    /// Names the code sent.
    public let phvToken: String
    /// When the code stops working.
    public let expiresAt: Date

    /// Verifies `code`; `rememberDevice` asks for a device token that skips the second factor next time.
    public func verifyCode(_ code: String, rememberDevice: Bool = false) async throws -> VerifyCodeResult {
        do {
            let proof: TFAProofResponse = try await flow.service.post(
                "/api/tfa/\(provider.rawValue)/verify",
                TFACodeVerifyRequest(assertion: assertion, phvToken: phvToken, code: code))
            return .resolved(try await flow.finalize(assertion, proof, rememberDevice: rememberDevice))
        } catch let error as AssentError where error.code == .invalidCode {
            return .invalidCode(attemptsLeft: error.remainingAttempts ?? 0)
        }
    }
}

/// The account's e-mail addresses, and a code to one of them (`RegisteredEmailsResolver`).
public struct RegisteredEmailsResolver: TFAResolver {
    let flow: TFAFlow
    let holder = AssertionHolder()

    public init(flow: TFAFlow) { self.flow = flow }

    private func assertion() async throws -> String {
        let flow = flow
        return try await holder.get { try await flow.start(.email, .verify) }
    }

    /// The addresses, obfuscated (`getRegisteredEmails`).
    public func getRegisteredEmails() async throws -> [TFAEmail] {
        let answer: TFAEmailsResponse = try await flow.service.post(
            "/api/tfa/email/emails", TFAAssertionRequest(assertion: try await assertion()))
        return answer.emails
    }

    /// Sends a code to `email` (`sendEmailCode`).
    public func sendEmailCode(to email: TFAEmail, lang: String = "en") async throws -> VerifyCodeResolver {
        let assertion = try await assertion()
        let sent: TFACodeSent = try await flow.service.post(
            "/api/tfa/email/send", TFAEmailSendRequest(assertion: assertion, emailId: email.id, lang: lang))
        return VerifyCodeResolver(
            flow: flow, provider: .email, assertion: assertion, phvToken: sent.phvToken, expiresAt: sent.expiresAt)
    }
}

/// Registers a phone number with a code by SMS or voice (`RegisterPhoneResolver`).
public struct RegisterPhoneResolver: TFAResolver {
    let flow: TFAFlow
    let holder = AssertionHolder()

    public init(flow: TFAFlow) { self.flow = flow }

    /// Sends a code to `phone` (E.164, e.g. `+420777123456`).
    public func registerPhone(_ phone: String, method: TFAPhoneMethod = .sms, lang: String = "en") async throws
        -> VerifyCodeResolver
    {
        let flow = flow
        let assertion = try await holder.get { try await flow.start(.phone, .register) }
        let sent: TFACodeSent = try await flow.service.post(
            "/api/tfa/phone/send", TFAPhoneSendRequest(assertion: assertion, phone: phone, method: method, lang: lang))
        return VerifyCodeResolver(
            flow: flow, provider: .phone, assertion: assertion, phvToken: sent.phvToken, expiresAt: sent.expiresAt)
    }
}

/// The account's phone numbers, and a code to one of them (`RegisteredPhonesResolver`).
public struct RegisteredPhonesResolver: TFAResolver {
    let flow: TFAFlow
    let holder = AssertionHolder()

    public init(flow: TFAFlow) { self.flow = flow }

    private func assertion() async throws -> String {
        let flow = flow
        return try await holder.get { try await flow.start(.phone, .verify) }
    }

    /// The numbers, obfuscated (`getRegisteredPhones`).
    public func getRegisteredPhones() async throws -> [TFARegisteredPhone] {
        let answer: TFAPhonesResponse = try await flow.service.post(
            "/api/tfa/phone/phones", TFAAssertionRequest(assertion: try await assertion()))
        return answer.phones
    }

    /// Sends a code to `phone` by `method` (`sendVerificationCode`).
    public func sendVerificationCode(to phone: TFARegisteredPhone, method: TFAPhoneMethod = .sms, lang: String = "en")
        async throws -> VerifyCodeResolver
    {
        let assertion = try await assertion()
        let sent: TFACodeSent = try await flow.service.post(
            "/api/tfa/phone/send",
            TFAPhoneSendRequest(assertion: assertion, phoneId: phone.id, method: method, lang: lang))
        return VerifyCodeResolver(
            flow: flow, provider: .phone, assertion: assertion, phvToken: sent.phvToken, expiresAt: sent.expiresAt)
    }
}

/// A TOTP secret to scan: the QR code as PNG bytes, the `otpauth://` URI, and the resolver that verifies the first
/// code (`.QRCodeAvilabe(image, resolver)` in the seed).
public struct TOTPRegistration: Sendable {
    public let qrImage: Data
    public let uri: String
    public let resolver: VerifyTotpResolver
}

/// Registers a TOTP authenticator (`RegisterTotpResolver`).
public struct RegisterTotpResolver: TFAResolver {
    let flow: TFAFlow

    public init(flow: TFAFlow) { self.flow = flow }

    /// A new secret to scan.
    public func registerTotp() async throws -> TOTPRegistration {
        let assertion = try await flow.start(.totp, .register)
        let registered: TOTPRegisterResponse = try await flow.service.post(
            "/api/tfa/totp/register", TOTPRegisterRequest(assertion: assertion))
        // The seed's SDK splits the data URL at the comma and decodes the PNG.
        guard let comma = registered.qrCode.firstIndex(of: ","),
            let image = Data(base64Encoded: String(registered.qrCode[registered.qrCode.index(after: comma)...]))
        else { throw AssentError(.invalidResponse, "The QR code is not a data URL.") }
        return TOTPRegistration(
            qrImage: image, uri: registered.uri,
            resolver: VerifyTotpResolver(flow: flow, assertion: assertion, sctToken: registered.sctToken))
    }
}

/// Verifies a TOTP code (`VerifyTotpResolver`): the account's registered authenticator, or the one just registered.
public struct VerifyTotpResolver: TFAResolver {
    let flow: TFAFlow
    let holder: AssertionHolder
    let sctToken: String?

    public init(flow: TFAFlow) {
        self.flow = flow
        holder = AssertionHolder()
        sctToken = nil
    }

    init(flow: TFAFlow, assertion: String, sctToken: String) {
        self.flow = flow
        holder = AssertionHolder(assertion)
        self.sctToken = sctToken
    }

    /// Verifies `code` (`verifyTOTPCode`).
    public func verifyTOTPCode(_ code: String, rememberDevice: Bool = false) async throws -> VerifyCodeResult {
        let flow = flow
        let assertion = try await holder.get { try await flow.start(.totp, .verify) }
        do {
            let proof: TFAProofResponse = try await flow.service.post(
                "/api/tfa/totp/verify", TOTPVerifyRequest(assertion: assertion, code: code, sctToken: sctToken))
            return .resolved(try await flow.finalize(assertion, proof, rememberDevice: rememberDevice))
        } catch let error as AssentError where error.code == .invalidCode {
            return .invalidCode(attemptsLeft: error.remainingAttempts ?? 0)
        }
    }
}

/// Push approval on an activated Assent device: opt in (registration) or ask for approval (verification), then wait
/// for the device's answer.
public struct PushTFAResolver: TFAResolver {
    let flow: TFAFlow
    let holder = AssertionHolder()

    public init(flow: TFAFlow) { self.flow = flow }

    /// Opts in the device of `activationId` (an ``AssentClient``'s ``AssentClient/registrationId``): it gets an
    /// operation to approve.
    public func optIn(activationId: String) async throws -> TFAPushSent {
        let flow = flow
        let assertion = try await holder.get { try await flow.start(.push, .register) }
        return try await flow.service.post(
            "/api/tfa/push/optin", TFAPushOptInRequest(assertion: assertion, activationId: activationId))
    }

    /// Asks the account's devices to approve this sign-in. Show the answer's `number` beside the wait (number
    /// matching): the phone asks for it.
    public func sendVerification() async throws -> TFAPushSent {
        let flow = flow
        let assertion = try await holder.get { try await flow.start(.push, .verify) }
        return try await flow.service.post("/api/tfa/push/send", TFAAssertionRequest(assertion: assertion))
    }

    /// Waits until a device answers, polling every `interval`; finishes the login when it approved. A rejection or
    /// an expiry is thrown (``AssentError/serverCode`` `PUSH_REJECTED`, `PUSH_NOT_APPROVED`).
    public func waitForApproval(rememberDevice: Bool = false, interval: Duration = .seconds(1)) async throws
        -> TFASession
    {
        let flow = flow
        let assertion = try await holder.get { throw AssentError(.invalidInput, "Opt in or send first.") }
        while true {
            let status: TFAPushStatus = try await flow.service.post(
                "/api/tfa/push/verify", TFAAssertionRequest(assertion: assertion))
            if let proof = status.providerAssertion {
                return try await flow.finalize(
                    assertion, TFAProofResponse(providerAssertion: proof), rememberDevice: rememberDevice)
            }
            try await Task.sleep(for: interval)
        }
    }
}
