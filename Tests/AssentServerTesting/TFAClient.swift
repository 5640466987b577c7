import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import JWTKit
import Testing

/// The claims a relying party reads from a login token, verified by jwt-kit with the provider's JWKS.
struct VerifiedLoginToken: JWTPayload {
    var iss: IssuerClaim
    var sub: SubjectClaim
    var aud: AudienceClaim
    var exp: ExpirationClaim
    var use: String
    var amr: [String]?
    var tfa: String?

    func verify(using algorithm: some JWTAlgorithm) async throws { try exp.verifyNotExpired() }
}

/// A website's or app's calls to `/api/tfa` (seed 004's wire sequence) and the operator's to `/api/v1/tfa`.
struct TFAClient: Sendable {
    /// A website back end's plain JSON calls to a server it knows only by URL; any status, the body returned.
    struct Web: Sendable {
        let base: URL

        func post(_ path: String, _ body: some Encodable) async throws -> Data {
            let response = try await HTTPClient(base: base).send(
                "POST", path, headers: ["Content-Type": "application/json"],
                body: try OperatorJSON.encoder().encode(body))
            return response.body
        }
    }

    let server: TestServer
    let client: HTTPClient

    struct Answer: Sendable {
        var status: Int
        var body: Data
        var fields: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
        var code: String? { fields["code"] as? String }
        var errorCode: Int? { fields["errorCode"] as? Int }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            do {
                return try OperatorJSON.decoder().decode(type, from: body)
            } catch {
                throw TestFailure("\(status) \(String(decoding: body, as: UTF8.self)) is no \(T.self): \(error)")
            }
        }
    }

    func post(_ path: String, _ body: some Encodable) async throws -> Answer {
        let response = try await client.send(
            "POST", path, headers: ["Content-Type": "application/json"], body: try OperatorJSON.encoder().encode(body))
        return Answer(status: response.status, body: response.body)
    }

    func createAccount(_ userId: String, password: String? = "correct horse battery") async throws {
        _ = try await server.operatorCall(
            client, "POST", "/api/v1/tfa/accounts",
            body: try OperatorJSON.encoder().encode(CreateTFAAccountRequest(userId: userId, password: password)),
            as: TFAAccountInfo.self)
    }

    func login(_ userId: String, password: String = "correct horse battery", deviceToken: String? = nil)
        async throws -> Answer
    {
        try await post(
            "/api/tfa/login", TFALoginRequest(userId: userId, password: password, deviceToken: deviceToken))
    }

    func interruption(_ userId: String, deviceToken: String? = nil) async throws -> TFAInterruption {
        let answer = try await login(userId, deviceToken: deviceToken)
        #expect(answer.status == 403)
        return try answer.decode(TFAInterruption.self)
    }

    func start(_ regToken: String, _ mode: TFAMode, provider: TFAProvider = .totp) async throws -> String {
        let answer = try await post("/api/tfa/init", TFAInitRequest(regToken: regToken, provider: provider, mode: mode))
        #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
        return try answer.decode(TFAInitResponse.self).assertion
    }

    func verify(_ assertion: String, _ code: String, sctToken: String? = nil) async throws -> Answer {
        try await post("/api/tfa/totp/verify", TOTPVerifyRequest(assertion: assertion, code: code, sctToken: sctToken))
    }

    /// Registers a TOTP secret in a registration flow and finishes it; returns the key URI and the success.
    func registerTOTP(_ userId: String, remember: Bool = false) async throws -> (uri: String, TFALoginSuccess) {
        try await registerTOTP(try await interruption(userId), remember: remember)
    }

    /// Registers a TOTP secret in the flow of `interruption` and finishes it.
    func registerTOTP(_ interruption: TFAInterruption, remember: Bool = false) async throws
        -> (uri: String, TFALoginSuccess)
    {
        #expect(interruption.errorCode == TFAErrorCode.pendingRegistration)
        let assertion = try await start(interruption.regToken, .register)
        let registered = try await post("/api/tfa/totp/register", TOTPRegisterRequest(assertion: assertion))
            .decode(TOTPRegisterResponse.self)
        let code = try await Oathtool.code(uri: registered.uri, at: server.clock.now)
        let proof = try await verify(assertion, code, sctToken: registered.sctToken).decode(TFAProofResponse.self)
        let success = try await post(
            "/api/tfa/finalize",
            TFAFinalizeRequest(
                regToken: interruption.regToken, assertion: assertion, providerAssertion: proof.providerAssertion,
                rememberDevice: remember)
        ).decode(TFALoginSuccess.self)
        return (registered.uri, success)
    }

    /// Verifies a login token as a relying party would: jwt-kit with the published JWKS.
    func verifyLoginToken(_ token: String) async throws -> VerifiedLoginToken {
        let jwks = try await client.send("GET", "/oauth2/jwks")
        let keys = try await JWTKeyCollection().add(jwksJSON: jwks.text)
        let claims = try await keys.verify(token, as: VerifiedLoginToken.self)
        #expect(claims.aud.value == [server.application.id])
        #expect(claims.use == "login")
        return claims
    }
}

/// Codes in tests: a wrong one, and the one a message carries.
enum TFACodes {
    /// A six-digit code that is not `code`; the first digit changes, the length stays.
    static func other(than code: String) -> String {
        let first = code.first == "1" ? "2" : "1"
        return first + code.dropFirst()
    }

    /// The six-digit code in a message text.
    static func code(in text: String) -> String? {
        text.split(whereSeparator: { !$0.isNumber }).first { $0.count == 6 }.map(String.init)
    }
}
