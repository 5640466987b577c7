import AssentModel
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Turns every failure into the JSON error body of the API it happened in, and keeps details out of responses.
///
/// PowerAuth endpoints (`/pa/…`) answer `{"status":"ERROR","responseObject":{"code","message"}}` with 400 for
/// request and business errors and 401 for authentication failures; everything else answers `{"code","message"}`
/// with the error's own status.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = AssentRequestContext

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let failure = Self.serverError(for: error)
            if failure.status >= 500 {
                context.logger.error(
                    "request failed",
                    metadata: ["error": "\(String(reflecting: error))", "http.path": "\(request.uri.path)"])
            } else {
                context.logger.info(
                    "request refused", metadata: ["error.code": "\(failure.code)", "http.path": "\(request.uri.path)"])
            }
            if request.uri.path.hasPrefix("/pa/") {
                let status = failure.status == 401 ? 401 : failure.status >= 500 ? 500 : 400
                return try HTTPSupport.json(
                    ErrorEnvelope(code: failure.code, message: failure.message), status: .init(code: status))
            }
            if request.uri.path.hasPrefix("/api/auth/") || request.uri.path.hasPrefix("/api/push/") {
                let (code, status) = Self.mobileTokenError(failure)
                return try HTTPSupport.json(
                    ErrorEnvelope(code: code, message: failure.message), status: .init(code: status))
            }
            return try HTTPSupport.json(
                OperatorError(code: failure.code, message: failure.message), status: .init(code: failure.status))
        }
    }

    /// The Mobile Token API's code and status for a failure: `INVALID_REQUEST`, `INVALID_ACTIVATION`,
    /// `INVALID_OPERATION`, `POWERAUTH_AUTH_FAIL` / `OPERATION_FAILED` (401), the `OPERATION_…` states (400),
    /// and `ERROR_GENERIC` for the rest.
    static func mobileTokenError(_ failure: AssentServerError) -> (code: String, status: Int) {
        let code =
            switch failure.code {
            case "ERR_REQUEST", "ERR_PAYLOAD_TOO_LARGE", "ERR_ENCRYPTION": "INVALID_REQUEST"
            case "ACTIVATION_NOT_FOUND", "ACTIVATION_INVALID_STATE": "INVALID_ACTIVATION"
            case "OPERATION_NOT_FOUND": "INVALID_OPERATION"
            case let code
            where code == "POWERAUTH_AUTH_FAIL" || code == "PUSH_REGISTRATION_FAILED" || code.hasPrefix("OPERATION_"):
                code
            default: "ERROR_GENERIC"
            }
        let status =
            switch failure.status {
            case 401: 401
            case 404 where failure.code == "NOT_FOUND": 404
            case 405, 413: failure.status
            case 500...: 500
            default: 400
            }
        return (code, status)
    }

    static func serverError(for error: any Error) -> AssentServerError {
        switch error {
        case let error as AssentServerError:
            return error
        case let error as any HTTPResponseError:
            switch error.status {
            case .notFound: return .notFound("No such endpoint.")
            case .contentTooLarge: return .payloadTooLarge(limit: HTTPSupport.maxBodySize)
            case .methodNotAllowed:
                return .init(code: "ERR_METHOD", status: 405, message: "This endpoint does not accept this method.")
            default:
                return .init(
                    code: "ERR_HTTP", status: error.status.code,
                    message: (error as? HTTPError)?.body ?? error.status.reasonPhrase)
            }
        default:
            return .internalError("An internal error occurred; the server log has the details.")
        }
    }
}
