import HTTPTypes
import Hummingbird
import Logging

/// The id of the request being served: every log line written while serving it carries it as `request.id`, and
/// its response names it in `X-Request-Id`, so a client's complaint, the proxy's access log and the server's lines
/// meet on one value.
public enum RequestID {
    @TaskLocal public static var current: String?

    /// Adds `request.id` to every log line written inside a request, whichever logger writes it (a service's too).
    public static let metadataProvider = Logger.MetadataProvider {
        guard let id = current else { return [:] }
        return ["request.id": .string(id)]
    }

    static let header = HTTPField.Name("X-Request-Id")!

    /// An id a proxy sent that may stand: 1 to 64 letters, digits, `-`, `_`, `.` or `:` (nginx's `$request_id` is 32
    /// hexadecimal digits), so that it cannot forge a log line or a header.
    static func isWellFormed(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                    UInt8(ascii: ":"):
                    true
                default: false
                }
            }
    }
}

/// Gives each request its id: the `X-Request-Id` a trusted proxy sent (``TrustedProxies``), else one of the
/// server's own; serves the request with it as ``RequestID/current`` and answers it in `X-Request-Id`.
struct RequestIDMiddleware: RouterMiddleware {
    typealias Context = AssentRequestContext
    let proxies: TrustedProxies

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let id: String
        if let sent = request.headers[RequestID.header], RequestID.isWellFormed(sent),
            proxies.trusts(peer: context.clientAddress)
        {
            id = sent
        } else {
            id = context.id
        }
        var context = context
        context.logger[metadataKey: "request.id"] = .string(id)
        var response = try await RequestID.$current.withValue(id) { try await next(request, context) }
        response.headers[RequestID.header] = id
        return response
    }
}
