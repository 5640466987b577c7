import AssentModel
import Foundation
import HTTPTypes
import Hummingbird

/// The two-factor login API under `/api/tfa` (seed 004's wire sequence): login, providers, init, the providers'
/// calls, finalize. Bodies are JSON; answers are never cached. Interruptions answer 403 with the
/// ``TFAInterruption``; flow errors answer `{"code","errorCode"?,"message","attemptsLeft"?}`.
struct TFARoutes {
    let environment: ServerEnvironment
    let flows: TFAService
    let totp: TOTPFactor
    let codes: CodeFactor
    let push: PushFactor

    init(environment: ServerEnvironment) {
        self.environment = environment
        flows = TFAService(environment: environment)
        totp = TOTPFactor(environment: environment)
        codes = CodeFactor(environment: environment)
        push = PushFactor(environment: environment)
    }

    func register(on router: APIRoutes) {
        let api = router.group("api/tfa")
        api.post("login") { request, context in
            let body = try await HTTPSupport.decode(TFALoginRequest.self, from: request)
            switch try await flows.login(body, address: context.clientLimitKey) {
            case .success(let success): return try Self.json(success)
            case .interruption(let interruption): return try Self.json(interruption, status: .forbidden)
            }
        }
        api.post("providers") { request, _ in
            try Self.json(
                try await flows.providers(try await HTTPSupport.decode(TFAProvidersRequest.self, from: request)))
        }
        api.post("init") { request, _ in
            try Self.json(try await flows.start(try await HTTPSupport.decode(TFAInitRequest.self, from: request)))
        }
        api.post("totp/register") { request, _ in
            try Self.json(
                try await totp.register(try await HTTPSupport.decode(TOTPRegisterRequest.self, from: request)))
        }
        api.post("totp/verify") { request, _ in
            try Self.json(
                try await totp.verify(try await HTTPSupport.decode(TOTPVerifyRequest.self, from: request)))
        }
        api.post("email/emails") { request, _ in
            try Self.json(
                try await codes.emails(try await HTTPSupport.decode(TFAAssertionRequest.self, from: request)))
        }
        api.post("email/send") { request, _ in
            try Self.json(
                try await codes.sendEmail(try await HTTPSupport.decode(TFAEmailSendRequest.self, from: request)))
        }
        api.post("email/verify") { request, _ in
            let body = try await HTTPSupport.decode(TFACodeVerifyRequest.self, from: request)
            return try Self.json(try await codes.verify(body, provider: .email))
        }
        api.post("phone/phones") { request, _ in
            try Self.json(
                try await codes.phones(try await HTTPSupport.decode(TFAAssertionRequest.self, from: request)))
        }
        api.post("phone/send") { request, _ in
            try Self.json(
                try await codes.sendPhone(try await HTTPSupport.decode(TFAPhoneSendRequest.self, from: request)))
        }
        api.post("phone/verify") { request, _ in
            let body = try await HTTPSupport.decode(TFACodeVerifyRequest.self, from: request)
            return try Self.json(try await codes.verify(body, provider: .phone))
        }
        api.post("push/optin") { request, _ in
            try Self.json(
                try await push.optIn(try await HTTPSupport.decode(TFAPushOptInRequest.self, from: request)))
        }
        api.post("push/send") { request, _ in
            try Self.json(
                try await push.send(try await HTTPSupport.decode(TFAAssertionRequest.self, from: request)))
        }
        api.post("push/verify") { request, _ in
            try Self.json(
                try await push.verify(try await HTTPSupport.decode(TFAAssertionRequest.self, from: request)))
        }
        api.post("finalize") { request, _ in
            try Self.json(
                try await flows.finalize(try await HTTPSupport.decode(TFAFinalizeRequest.self, from: request)))
        }
    }

    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        var response = try HTTPSupport.json(value, status: status, encoder: OperatorJSON.encoder())
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
