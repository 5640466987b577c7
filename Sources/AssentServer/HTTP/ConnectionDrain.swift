import Hummingbird
import NIOCore
import ServiceLifecycle
import Synchronization

/// Whether this server is draining: asked to stop, it still serves for a while
/// (``AssentServerApplication/serve(_:logger:drain:drainFor:)``), tells every client to close its connection after
/// the answer and answers readiness with 503, before it closes its listener. A proxy's idle connections to it close
/// meanwhile (their idle timeout is shorter than the drain), so no request is sent on a connection the server
/// closes unread — the race that turns a restart into failed POSTs (``QuiesceDelay`` closes the last window).
public final class DrainState: Sendable {
    private let flag = Atomic<Bool>(false)

    public init() {}

    public var isDraining: Bool { flag.load(ordering: .relaxed) }

    public func begin() { flag.store(true, ordering: .relaxed) }

    /// Whether this server is on its way out, draining or past it (the graceful stop of the calling task's group):
    /// what readiness reports as `draining`.
    var isStopping: Bool { isDraining || Task.isShuttingDownGracefully }
}

/// Holds a connection's "stop" (`ChannelShouldQuiesceEvent`) back for a moment. A graceful stop closes the listener
/// and at once tells every connection to close when idle; a connection accepted just before, whose first request is
/// still on its way in, counts as idle and would be closed unread — a POST lost to the proxy, which may not send it
/// elsewhere. Told a second later, such a connection has read its request and answers it first (with
/// `Connection: close` while draining); connections a proxy keeps idle are closed as before.
final class QuiesceDelay: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    static let delay = TimeAmount.seconds(1)

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        let bound = context.loopBound
        context.eventLoop.scheduleTask(in: Self.delay) {
            bound.value.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
    }
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
