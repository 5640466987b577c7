import HTTPTypes
import Hummingbird

/// Sets the request's client address — what the per-address rate limits key on — from `X-Forwarded-For` when the
/// connection comes from a trusted reverse proxy (``TrustedProxies``); otherwise it stays the TCP peer's.
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = AssentRequestContext
    let proxies: TrustedProxies

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard !proxies.networks.isEmpty else { return try await next(request, context) }
        var context = context
        context.clientAddress = proxies.clientAddress(
            peer: context.clientAddress, forwardedFor: request.headers[values: Self.forwardedFor])
        return try await next(request, context)
    }

    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
}
