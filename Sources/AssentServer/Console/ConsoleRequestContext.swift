import AssentModel
import Foundation
import HTTPTypes
import Hummingbird

/// The context of a request to the signed-in console: the server's context, and — once ``ConsoleSessionMiddleware``
/// admitted it — the visit: the session, who signed in (an operator account and its role, or a break-glass API key),
/// the application the console works with and, for a form, its fields with their token checked. The console's
/// handlers take it as the API's take ``AssentRequestContext``.
struct ConsoleRequestContext: ChildRequestContext {
    typealias ParentContext = AssentRequestContext
    var coreContext: CoreRequestContextStorage
    /// The client's IP address, as the server's context has it.
    var clientAddress: String?
    /// Set by ``ConsoleSessionMiddleware``; `nil` only before it ran.
    var signedIn: ConsolePages.Visit?

    init(context: AssentRequestContext) {
        coreContext = context.coreContext
        clientAddress = context.clientAddress
    }

    /// What the per-address rate limits count for this client.
    var clientLimitKey: String? { clientAddress.map(IPNetwork.limitKey(of:)) }

    /// The signed-in visit.
    /// - Throws: 401 when no session middleware admitted the request (a route registered outside its group).
    var visit: ConsolePages.Visit {
        get throws {
            guard let signedIn else { throw AssentServerError.unauthorized() }
            return signedIn
        }
    }

    /// The path parameter `name`.
    func parameter(_ name: String) throws -> String { try parameters.require(name) }

    /// Requests larger than this are refused with 413 before they are parsed.
    var maxUploadSize: Int { HTTPSupport.maxBodySize }
}

/// Admits a request to the signed-in console: a live session of an operator account that is set up and enabled
/// (or of an API key, while keys may sign in); for a form, the session's token; the applications the operator may
/// work with. Others go to the sign-in page, or get a 403 page. A refusal of the services a handler throws (a 4xx
/// ``AssentServerError``) becomes a page that says why.
struct ConsoleSessionMiddleware: RouterMiddleware {
    typealias Context = ConsoleRequestContext
    let console: ConsolePages
    /// Whether the visit keeps the session alive (the idle timeout counts from it): not for a page's live stream.
    var touches = true

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let visit: ConsolePages.Visit
        switch try await console.admit(request, touches: touches) {
        case .refused(let response): return response
        case .admitted(let admitted): visit = admitted
        }
        var context = context
        context.signedIn = visit
        do {
            return try await next(request, context)
        } catch let error as AssentServerError where error.status < 500 {
            return try await console.show(
                ConsoleErrorPage(detail: error.message), title: "Not possible", visit,
                status: HTTPResponse.Status(code: error.status))
        }
    }
}

/// Admits a signed-in console request only when the operator's role (or the key) has `scope`; otherwise a 403 page
/// that names the scope.
struct ConsoleScopeMiddleware: RouterMiddleware {
    typealias Context = ConsoleRequestContext
    let scope: APIScope

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let visit = try context.visit
        guard visit.allows(scope) else { return ConsolePages.missing(scope, visit) }
        return try await next(request, context)
    }
}

extension RouterGroup<ConsoleRequestContext> {
    /// A group at the same path whose pages and forms need `scope`.
    func requiring(_ scope: APIScope) -> RouterGroup<ConsoleRequestContext> {
        group().add(middleware: ConsoleScopeMiddleware(scope: scope))
    }
}
