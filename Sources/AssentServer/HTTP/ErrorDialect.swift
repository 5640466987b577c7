import AssentModel
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// How one API answers a failure — its body, its codes and their statuses. Each route group says which it speaks
/// (``APIRoutes``), so an error is rendered where it happened, never guessed from the path.
enum ErrorDialect: Sendable {
    /// PowerAuth (`/pa/v3`): `{"status":"ERROR","responseObject":{"code","message"}}`, 400 for request and business
    /// errors, 401 for authentication failures, HTTP's own 405, 413 and 429.
    case powerAuth
    /// The Mobile Token API (operations, push registration, the device event stream): the same envelope with the
    /// API's closed list of codes (``MobileTokenErrorCode``).
    case mobileToken
    /// The operator API, the device configuration, the PIN age and the two-factor API: `{"code","message"}` with the
    /// code's own status (``ServerErrorCode/status``).
    case plain
    /// The OAuth and OpenID endpoints: RFC 6749 §5.2 `{"error","error_description"}` (``OAuthError``).
    case oauth

    /// The answer to `error`, with `Retry-After` when trying later helps, never kept by a cache.
    func response(to error: any Error, logger: Logger, path: String) -> Response {
        if let rendered = error as? any RenderedError {
            logger.info("request refused", metadata: ["error.code": "\(rendered.code)", "http.path": "\(path)"])
            return rendered.response
        }
        let failure = Self.serverError(for: error)
        if failure.status >= 500 {
            logger.error("request failed", metadata: ["error": "\(String(reflecting: error))", "http.path": "\(path)"])
        } else {
            logger.info(
                "request refused", metadata: ["error.code": "\(failure.code.rawValue)", "http.path": "\(path)"])
        }
        var response = render(failure)
        if let retryAfter = failure.retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        // An error answers this request only: never kept by a cache (the two-factor API promises it).
        response.headers[.cacheControl] = "no-store"
        return response
    }

    private func render(_ failure: AssentServerError) -> Response {
        switch self {
        case .powerAuth:
            let status =
                switch failure.status {
                case 401, 405, 413, 429: failure.status
                case 500...: 500
                default: 400
                }
            return Self.json(ErrorEnvelope(code: failure.code.rawValue, message: failure.message), status)
        case .mobileToken:
            return Self.json(
                ErrorEnvelope(code: MobileTokenErrorCode(failure.code).rawValue, message: failure.message),
                MobileTokenErrorCode.status(of: failure))
        case .plain:
            return Self.json(OperatorError(code: failure.code.rawValue, message: failure.message), failure.status)
        case .oauth:
            let oauth: OAuthError =
                switch failure.status {
                case 429: OAuthError(.temporarilyUnavailable, failure.message, status: .tooManyRequests)
                case ..<500: OAuthError.invalidRequest(failure.message)
                default: OAuthError(.serverError, "The request could not be processed.", status: .internalServerError)
                }
            return oauth.response
        }
    }

    private static func json<T: Encodable>(_ value: T, _ status: Int) -> Response {
        Response(
            status: .init(code: status), headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: (try? JSONEncoder().encode(value)) ?? Data())))
    }

    /// The server failure an error stands for: itself, the HTTP layer's refusal, or an internal error whose details
    /// stay in the log.
    static func serverError(for error: any Error) -> AssentServerError {
        switch error {
        case let error as AssentServerError:
            return error
        case let error as any HTTPResponseError:
            switch error.status {
            case .notFound: return .notFound("No such endpoint.")
            case .contentTooLarge: return .payloadTooLarge(limit: HTTPSupport.maxBodySize)
            case .methodNotAllowed: return .methodNotAllowed("This endpoint does not accept this method.")
            default:
                return .init(
                    .http, (error as? HTTPError)?.body ?? error.status.reasonPhrase, status: error.status.code)
            }
        default:
            return .internalError("An internal error occurred; the server log has the details.")
        }
    }
}

/// An error of an API with its own error body (the two-factor API's flow errors, OAuth's): it is its own answer.
protocol RenderedError: Error {
    /// The code, for the log.
    var code: String { get }
    /// The whole answer.
    var response: Response { get }
}

/// Answers every failure of the routes behind it in one dialect.
struct ErrorDialectMiddleware: RouterMiddleware {
    typealias Context = AssentRequestContext
    let dialect: ErrorDialect

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            return dialect.response(to: error, logger: context.logger, path: request.uri.path)
        }
    }
}

/// The routes of one API on the router: every route answers failures in the API's ``ErrorDialect``, and the router
/// notes the dialect of each, for the answers the router gives itself (405).
struct APIRoutes: RouterMethods {
    typealias Context = AssentRequestContext
    let group: RouterGroup<Context>
    let dialect: ErrorDialect
    let known: KnownRoutes

    init(_ dialect: ErrorDialect, on router: Router<Context>, known: KnownRoutes) {
        group = router.group().add(middleware: ErrorDialectMiddleware(dialect: dialect))
        self.dialect = dialect
        self.known = known
    }

    @discardableResult
    func on<Responder: HTTPResponder>(_ path: RouterPath, method: HTTPRequest.Method, responder: Responder) -> Self
    where Responder.Context == Context {
        known.note(dialect, for: "\(path)")
        group.on(path, method: method, responder: responder)
        return self
    }

    func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self {
        group.add(middleware: middleware)
        return self
    }
}
