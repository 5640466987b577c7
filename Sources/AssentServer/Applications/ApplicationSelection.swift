import AssentModel
import Foundation
import Hummingbird

/// Which application an operator request works with: `?application=<id>` on any `/api/v1` route, else the first
/// application. A query parameter rather than a path prefix, so that every path stays what it was: a server with one
/// application, and every client written before there were several, needs no change. Every resource a request
/// names by id must belong to that application, or it is not found.
struct ApplicationSelection: RouterMiddleware {
    typealias Context = AssentRequestContext
    let applications: ApplicationService

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        if let id = request.uri.queryParameters["application"].map(String.init), !id.isEmpty {
            guard let application = try await applications.application(id: id) else {
                throw AssentServerError.notFound("No application has the id \(id).")
            }
            context.application = application
        }
        if let allowed = context.apiKey?.applications {
            let id = try await applications.selected(context).id
            guard allowed.contains(id) else {
                throw AssentServerError(
                    .forbidden,
                    "This API key may not work with the application \(id): pass ?application= with one of "
                        + "its applications.")
            }
        }
        return try await next(request, context)
    }
}

extension AssentRequestContext {
    /// Refuses a key limited to some applications: what it asks for (keys, operators, new applications, the whole
    /// audit chain) concerns every application; `what` says so in the error.
    func requireEveryApplication(
        _ what: String = "keys, operator accounts and applications are managed with a key for every application"
    ) throws {
        guard apiKey?.applications == nil else {
            throw AssentServerError(.forbidden, "This API key is limited to some applications: \(what).")
        }
    }

    /// The applications whose audit rows the request reads: the one it names with `?application=`, or for a key
    /// limited to applications the selected one; `nil` (every row, the organisation's own too) otherwise.
    func auditApplications(_ applications: ApplicationService) async throws -> [String]? {
        guard application != nil || apiKey?.applications != nil else { return nil }
        return [try await applications.selected(self).id]
    }

    /// Whether the key may see `applicationId`.
    func permits(_ applicationId: String) -> Bool { apiKey?.applications?.contains(applicationId) ?? true }
}

extension ApplicationService {
    /// The application the request works with (``ApplicationSelection``).
    func selected(_ context: AssentRequestContext) async throws -> ApplicationRecord {
        if let application = context.application { return application }
        return try await defaultApplication()
    }

    /// The application the path's `{id}` names.
    /// - Throws: `NOT_FOUND` for an unknown id, or one the request's key may not see.
    func named(in context: AssentRequestContext) async throws -> ApplicationRecord {
        guard let application = try await application(id: try context.parameter("id")),
            context.permits(application.id)
        else {
            throw AssentServerError.notFound("No application has this id.")
        }
        return application
    }

    /// Throws `what` (a not-found error) unless `applicationId` is the request's application.
    func require(_ applicationId: String, in context: AssentRequestContext, else what: AssentServerError)
        async throws
    {
        guard try await selected(context).id == applicationId else { throw what }
    }
}
