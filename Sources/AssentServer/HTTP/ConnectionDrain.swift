import Hummingbird
import ServiceLifecycle
import Synchronization

/// Whether this server is draining: asked to stop, it still serves for a while
/// (``AssentServerApplication/serve(_:logger:drain:drainFor:)``), tells every client to close its connection after
/// the answer and answers readiness with 503, before it closes its listener. A proxy's idle connections to it close
/// meanwhile (their idle timeout is shorter than the drain), so no request is sent on a connection the server
/// closes unread — the race that turns a restart into failed POSTs. What remains (a connection accepted as the
/// listener closes, which Linux resets) the proxy sends to another server (docs/DEPLOY.md).
public final class DrainState: Sendable {
    private let flag = Atomic<Bool>(false)

    public init() {}

    public var isDraining: Bool { flag.load(ordering: .relaxed) }

    public func begin() { flag.store(true, ordering: .relaxed) }

    /// Whether this server is on its way out, draining or past it (the graceful stop of the calling task's group):
    /// what readiness reports as `draining`.
    var isStopping: Bool { isDraining || Task.isShuttingDownGracefully }
}

/// While the server drains, every answer carries `Connection: close`, so the client (nginx) closes the connection
/// after it instead of sending another request on it.
struct ConnectionDrainMiddleware: RouterMiddleware {
    typealias Context = AssentRequestContext
    let drain: DrainState

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var response = try await next(request, context)
        if drain.isDraining { response.headers[.connection] = "close" }
        return response
    }
}
