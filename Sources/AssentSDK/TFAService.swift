import AssentModel
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Seed 004's two-factor login for an app: a password login that a second factor may interrupt, the resolvers that
/// finish it, and the session it ends in. It talks to the server's `/api/tfa` (docs/TFA.md) and needs no activation;
/// push approval uses an activated ``AssentClient`` on the same or another device.
///
/// ```swift
/// let tfa = TFAService(server: url)
/// switch try await tfa.login(userId: "alice", password: password) {
/// case .success(let session): …
/// case .interrupted(.pendingTwoFactorVerification(let providers, let factory)):
///     let totp = factory.getResolver(for: VerifyTotpResolver.self)
///     if case .resolved(let session) = try await totp.verifyTOTPCode(code, rememberDevice: true) { … }
/// case .interrupted(.pendingTwoFactorRegistration(let providers, let factory)): …
/// }
/// ```
public actor TFAService {
    /// The server's base URL.
    public let server: URL
    /// The application id or key the logins are for (the server's default application when `nil`).
    public let application: String?
    let transport: any Transport
    private var current: TFASession?
    private var lockedByBiometry = false
    /// The remembered-device token of the last login that asked for one; sent with the next login so that it skips
    /// the second factor. Persist it if the app should be remembered across launches.
    public var deviceToken: String?

    /// A service for `server`.
    public init(
        server: URL, application: String? = nil, deviceToken: String? = nil,
        transport: any Transport = URLSessionTransport()
    ) {
        self.server = server
        self.application = application
        self.deviceToken = deviceToken
        self.transport = transport
    }

    /// The signed-in session; `nil` before a login and while a ``BiometricSession`` keeps it locked.
    public var session: TFASession? { current }

    /// Whether a ``BiometricSession`` locked the session away.
    public var isLocked: Bool { lockedByBiometry }

    /// The session for an authenticated call: throws ``AssentError/Code/sessionLocked`` while locked and
    /// ``AssentError/Code/notSignedIn`` before a login.
    public func authenticatedSession() throws -> TFASession {
        if lockedByBiometry { throw AssentError(.sessionLocked, "The session is locked: unlock it with biometry.") }
        guard let current else { throw AssentError(.notSignedIn, "Sign in first.") }
        return current
    }

    /// Signs in with a password (and the remembered-device token, if any).
    public func login(userId: String, password: String) async throws -> TFALoginResult {
        let body = TFALoginRequest(
            application: application, userId: userId, password: password, deviceToken: deviceToken)
        let (status, data) = try await exchange("/api/tfa/login", body)
        if status == 403, let interruption = try? Self.decoder.decode(TFAInterruption.self, from: data) {
            let factory = TFAResolverFactory(service: self, regToken: interruption.regToken)
            switch interruption.errorCode {
            case TFAErrorCode.pendingVerification:
                return .interrupted(
                    .pendingTwoFactorVerification(
                        activeProviders: interruption.activeProviders.map(\.name), factory: factory))
            default:
                return .interrupted(
                    .pendingTwoFactorRegistration(
                        inactiveProviders: interruption.inactiveProviders.map(\.name), factory: factory))
            }
        }
        guard (200..<300).contains(status) else { throw Self.error(status: status, body: data) }
        return .success(signedIn(try Self.decode(TFALoginSuccess.self, data)))
    }

    /// Forgets the session (the remembered-device token stays).
    public func logout() { current = nil }

    // MARK: For resolvers and the biometric session

    func finalize(regToken: String, assertion: String, providerAssertion: String, rememberDevice: Bool)
        async throws -> TFASession
    {
        let success: TFALoginSuccess = try await post(
            "/api/tfa/finalize",
            TFAFinalizeRequest(
                regToken: regToken, assertion: assertion, providerAssertion: providerAssertion,
                rememberDevice: rememberDevice))
        return signedIn(success)
    }

    func lock() { lockedByBiometry = true }

    func unlock(with session: TFASession) {
        current = session
        lockedByBiometry = false
    }

    private func signedIn(_ success: TFALoginSuccess) -> TFASession {
        if let token = success.deviceToken { deviceToken = token }
        let session = TFASession(userId: success.userId, loginToken: success.loginToken)
        current = session
        lockedByBiometry = false
        return session
    }

    /// POSTs JSON and decodes a 2xx answer; anything else becomes an ``AssentError`` with the server's code (and
    /// `remainingAttempts` after a wrong code).
    func post<Answer: Decodable>(_ path: String, _ body: some Encodable & Sendable) async throws -> Answer {
        let (status, data) = try await exchange(path, body)
        guard (200..<300).contains(status) else { throw Self.error(status: status, body: data) }
        return try Self.decode(Answer.self, data)
    }

    private func exchange(_ path: String, _ body: some Encodable & Sendable) async throws -> (Int, Data) {
        guard let url = URL(string: path, relativeTo: server) else {
            throw AssentError(.invalidInput, "The server URL cannot take the path \(path).")
        }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try Self.encoder.encode(body)
        do {
            return try await transport.send(request)
        } catch {
            if Task.isCancelled || AssentClient.isCancellation(error) {
                throw AssentError(.cancelled, "The call was cancelled.", underlying: SendableError(error))
            }
            throw AssentError.wrap(error, .network, "Cannot reach \(server.absoluteString).")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ data: Data) throws -> T {
        do {
            return try decoder.decode(type, from: data)
        } catch {
            throw AssentError(.invalidResponse, "The server's answer is not the expected \(T.self).")
        }
    }

    /// The error of a refused call: wrong codes become ``AssentError/Code/invalidCode`` with the tries left.
    static func error(status: Int, body: Data) -> AssentError {
        struct Failure: Decodable {
            var code: String
            var message: String
            var errorCode: Int?
            var attemptsLeft: Int?
        }
        guard let failure = try? decoder.decode(Failure.self, from: body) else {
            return AssentError(.server, "The server answered HTTP \(status).", httpStatus: status)
        }
        let code: AssentError.Code =
            failure.errorCode == TFAErrorCode.invalidCode && failure.code == TFAFlowErrorCode.invalidCode.rawValue
            ? .invalidCode : .server
        return AssentError(
            code, failure.message, serverCode: failure.code, httpStatus: status, remainingAttempts: failure.attemptsLeft
        )
    }

    static let encoder = OperatorJSON.encoder()
    static let decoder = OperatorJSON.decoder()
}

/// A signed-in login: the user and the login token the app hands to its back end (which verifies it with the
/// server's JWKS).
public struct TFASession: Codable, Sendable, Equatable {
    public var userId: String
    public var loginToken: String

    public init(userId: String, loginToken: String) {
        self.userId = userId
        self.loginToken = loginToken
    }
}

/// What a login came to.
public enum TFALoginResult: Sendable {
    case success(TFASession)
    case interrupted(TFAInterruptionCase)
}

/// Seed 004's interruptions (403101 and 403102), each with the factory of the resolvers that finish it.
public enum TFAInterruptionCase: Sendable {
    /// Verify one of the account's providers.
    case pendingTwoFactorVerification(activeProviders: [TFAProvider], factory: TFAResolverFactory)
    /// Register one of these providers.
    case pendingTwoFactorRegistration(inactiveProviders: [TFAProvider], factory: TFAResolverFactory)
}

extension AssentError.Code {
    /// A wrong two-factor code (the seed's 400006); see ``AssentError/remainingAttempts``.
    public static let invalidCode = AssentError.Code("INVALID_CODE")
    /// The two-factor session is locked by a ``BiometricSession``.
    public static let sessionLocked = AssentError.Code("SESSION_LOCKED")
    /// No two-factor login has finished yet.
    public static let notSignedIn = AssentError.Code("NOT_SIGNED_IN")
}
