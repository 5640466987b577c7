import AssentModel
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Answers what no API route answered: the router's own refusals (404 for an unknown path; 405 with `Allow` for a
/// known path asked with another method, in the dialect of the routes at that path) and failures of the routes
/// outside an API (health, metrics, pages), in the plain dialect. A browser asking for a page at `/` or at an
/// address with no route (outside the APIs) gets a page that says where to go instead of JSON.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = AssentRequestContext
    /// Which methods a path has, to tell 405 from 404, and which dialect its routes speak.
    let routes: KnownRoutes
    /// The name people know the server by, for the page a browser gets (the first application's).
    var organisation: @Sendable () async -> String = { "Assent" }

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let routing as any HTTPResponseError where routing.status == .notFound {
            // The router found no route: a known path with another method is 405 with the methods it has.
            let allowed = routes.methods(for: request.uri.path)
            if allowed.isEmpty, Self.wantsPage(request) {
                let home = request.uri.path == "/"
                return WebPages.shared.page(
                    HomePage(notFound: !home),
                    frame: LayoutFrame(
                        title: home ? "Welcome" : "Page not found", application: await organisation(),
                        // Outside the language middleware: the browser's language from the request itself.
                        language: Languages.choose(acceptLanguage: request.headers[.acceptLanguage])),
                    status: home ? .ok : .notFound)
            }
            guard !allowed.isEmpty else {
                return ErrorDialect.plain.response(to: routing, logger: context.logger, path: request.uri.path)
            }
            let failure = AssentServerError.methodNotAllowed(
                "This endpoint accepts \(allowed.joined(separator: ", ")), not \(request.method.rawValue).")
            var response = routes.dialect(for: request.uri.path).response(
                to: failure, logger: context.logger, path: request.uri.path)
            response.headers[.allow] = allowed.joined(separator: ", ")
            return response
        } catch {
            return ErrorDialect.plain.response(to: error, logger: context.logger, path: request.uri.path)
        }
    }

    /// The paths of the machine interfaces: they answer in their dialect whatever the client accepts.
    static let apiPrefixes = ["/api/", "/pa/", "/oauth2/", "/.well-known/", "/web/", "/metrics"]

    /// Whether the request is a browser's asking for a page: a GET or HEAD that accepts HTML, outside the APIs.
    /// An API client (which accepts JSON or anything) keeps its JSON answer.
    static func wantsPage(_ request: Request) -> Bool {
        guard request.method == .get || request.method == .head,
            !apiPrefixes.contains(where: { request.uri.path.hasPrefix($0) }),
            let accept = request.headers[.accept]
        else { return false }
        return accept.split(separator: ",").contains {
            $0.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() == "text/html"
        }
    }
}
