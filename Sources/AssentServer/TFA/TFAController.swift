import AssentModel
import Foundation
import HTTPTypes
import Hummingbird

/// The two-factor login API under `/api/tfa` (seed 004's wire sequence): login, providers, init, the providers'
/// calls, finalize. Bodies are JSON; answers are never cached. Interruptions answer 403 with the
/// ``TFAInterruption``; flow errors answer `{"code","errorCode"?,"message","attemptsLeft"?}`.
struct TFAController {
    let clock: WallClock
    let flows: TFAService
    let totp: TOTPFactor
    let codes: CodeFactor
    let push: PushFactor
    let passkey: PasskeyFactor
    let backup: BackupCodeFactor

    func addRoutes(to router: APIRoutes) {
        router.group("api/tfa")
            .post("login", use: login)
            .post("providers", use: providers)
            .post("init", use: start)
            .post("totp/register", use: registerTOTP)
            .post("totp/verify", use: verifyTOTP)
            .post("email/emails", use: emails)
            .post("email/send", use: sendEmail)
            .post("email/verify", use: verifyEmail)
            .post("phone/phones", use: phones)
            .post("phone/send", use: sendPhone)
            .post("phone/verify", use: verifyPhone)
            .post("push/optin", use: optInPush)
            .post("push/send", use: sendPush)
            .post("push/verify", use: verifyPush)
            .post("passkey/options", use: passkeyOptions)
            .post("passkey/register", use: registerPasskey)
            .post("passkey/verify", use: verifyPasskey)
            .post("passkey/login/options", use: passkeySignInOptions)
            .post("passkey/login", use: passkeySignIn)
            .post("backup/verify", use: verifyBackupCode)
            .post("backup/generate", use: generateBackupCodes)
            .post("finalize", use: finalize)
    }

    @Sendable func login(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(TFALoginRequest.self, from: request)
        switch try await flows.login(body, address: context.clientLimitKey) {
        case .success(let success): return try Self.json(success)
        case .interruption(let interruption): return try Self.json(interruption, status: .forbidden)
        }
    }

    @Sendable func providers(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, flows.providers)
    }

    @Sendable func start(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, flows.start)
    }

    @Sendable func registerTOTP(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, totp.register)
    }

    @Sendable func verifyTOTP(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, totp.verify)
    }

    @Sendable func emails(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, codes.emails)
    }

    @Sendable func sendEmail(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, codes.sendEmail)
    }

    @Sendable func verifyEmail(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, { try await codes.verify($0, provider: .email) })
    }

    @Sendable func phones(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, codes.phones)
    }

    @Sendable func sendPhone(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, codes.sendPhone)
    }

    @Sendable func verifyPhone(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, { try await codes.verify($0, provider: .phone) })
    }

    @Sendable func optInPush(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, push.optIn)
    }

    @Sendable func sendPush(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(TFAPushSendRequest.self, from: request)
        return try Self.json(
            try await push.send(
                TFAAssertionRequest(assertion: body.assertion),
                context: { site in
                    LoginContext(
                        site: site, userAgent: body.userAgent, address: body.ipAddress,
                        at: clock.now())
                }))
    }

    @Sendable func verifyPush(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, push.verify)
    }

    @Sendable func passkeyOptions(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, passkey.options)
    }

    @Sendable func registerPasskey(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, passkey.register)
    }

    @Sendable func verifyPasskey(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, passkey.verify)
    }

    @Sendable func passkeySignInOptions(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request) { try await passkey.signInOptions($0, address: context.clientLimitKey) }
    }

    @Sendable func passkeySignIn(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, passkey.signIn)
    }

    @Sendable func verifyBackupCode(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, backup.verify)
    }

    @Sendable func generateBackupCodes(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, backup.generate)
    }

    @Sendable func finalize(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, flows.finalize)
    }

    /// Decodes the body as the call's request, runs it, answers its result as JSON.
    private func answer<Body: Decodable, Result: Encodable>(
        _ request: Request, _ call: (Body) async throws -> Result
    ) async throws -> Response {
        try Self.json(try await call(try await HTTPSupport.decode(Body.self, from: request)))
    }

    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        var response = try HTTPSupport.json(value, status: status, encoder: OperatorJSON.encoder())
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
