import AssentModel
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Answers what no API route answered: the router's own refusals (404 for an unknown path; 405 with `Allow` for a
/// known path asked with another method, in the dialect of the routes at that path) and failures of the routes
/// outside an API (health, metrics, pages), in the plain dialect.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = AssentRequestContext
    /// Which methods a path has, to tell 405 from 404, and which dialect its routes speak.
    let routes: KnownRoutes

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let routing as any HTTPResponseError where routing.status == .notFound {
            // The router found no route: a known path with another method is 405 with the methods it has.
            let allowed = routes.methods(for: request.uri.path)
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
}
