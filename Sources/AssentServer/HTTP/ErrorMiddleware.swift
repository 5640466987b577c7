import AssentModel
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Turns every failure into the JSON error body of the API it happened in, and keeps details out of responses.
///
/// PowerAuth endpoints (`/pa/…`) answer `{"status":"ERROR","responseObject":{"code","message"}}` with 400 for
/// request and business errors, 401 for authentication failures, and HTTP's own 405, 413 and 429; everything else
/// answers `{"code","message"}` with the error's own status.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = AssentRequestContext
    /// Which methods a path has, to tell 405 from 404.
    let routes: KnownRoutes

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            var failure = Self.serverError(for: error)
            var allowed: [String] = []
            if let routing = error as? any HTTPResponseError, routing.status == .notFound {
                // The router found no route: a known path with another method is 405 with the methods it has.
                allowed = routes.methods(for: request.uri.path)
                if !allowed.isEmpty {
                    failure = AssentServerError(
                        code: "ERR_METHOD", status: 405,
                        message:
                            "This endpoint accepts \(allowed.joined(separator: ", ")), not \(request.method.rawValue).")
                }
            }
            var response = try Self.response(failure, request: request, context: context, error: error)
            if let retryAfter = failure.retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            // An error answers this request only: never kept by a cache (the two-factor API promises it).
            response.headers[.cacheControl] = "no-store"
            if !allowed.isEmpty { response.headers[.allow] = allowed.joined(separator: ", ") }
            return response
        }
    }

    /// The error body of the API the request went to; the failure is logged (details only for server faults).
    private static func response(
        _ failure: AssentServerError, request: Request, context: Context, error: any Error
    ) throws -> Response {
        if failure.status >= 500 {
            context.logger.error(
                "request failed",
                metadata: ["error": "\(String(reflecting: error))", "http.path": "\(request.uri.path)"])
        } else {
            context.logger.info(
                "request refused", metadata: ["error.code": "\(failure.code)", "http.path": "\(request.uri.path)"])
        }
        if request.uri.path.hasPrefix("/pa/") {
            let status =
                switch failure.status {
                case 401, 405, 413, 429: failure.status
                case 500...: 500
                default: 400
                }
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

    /// The Mobile Token API's code and status for a failure: `INVALID_REQUEST`, `INVALID_ACTIVATION`,
    /// `INVALID_OPERATION`, `POWERAUTH_AUTH_FAIL` / `OPERATION_FAILED` (401), the `OPERATION_…` states,
    /// `PIN_EXPIRED` and `PROXIMITY_CHECK_MISSING` / `PROXIMITY_CHECK_FAILED` (400), and `ERROR_GENERIC` for the rest.
    static func mobileTokenError(_ failure: AssentServerError) -> (code: String, status: Int) {
        let code =
            switch failure.code {
            case "ERR_REQUEST", "ERR_PAYLOAD_TOO_LARGE", "ERR_ENCRYPTION": "INVALID_REQUEST"
            case "ACTIVATION_NOT_FOUND", "ACTIVATION_INVALID_STATE": "INVALID_ACTIVATION"
            case "OPERATION_NOT_FOUND": "INVALID_OPERATION"
            case let code
            where code == "POWERAUTH_AUTH_FAIL" || code == "PUSH_REGISTRATION_FAILED" || code == "ERR_RATE_LIMITED"
                || code == "PIN_EXPIRED" || code.hasPrefix("OPERATION_") || code.hasPrefix("PROXIMITY_CHECK_"):
                code
            default: "ERROR_GENERIC"
            }
        let status =
            switch failure.status {
            case 401: 401
            case 404 where failure.code == "NOT_FOUND": 404
            case 405, 413, 429: failure.status
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
