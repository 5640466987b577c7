import AssentCrypto
import AssentModel
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle
import Synchronization

/// `GET /api/auth/token/app/operation/events`: a device's live stream of its user's operations, as server-sent
/// events, authenticated with a MAC token.
///
/// The stream opens with a `ready` event whose id is the current position, then sends `operation.created` (with the
/// operation as the list shows it) and `operation.finished` events, each with its id in the device event log. A
/// client that reconnects with `Last-Event-ID` gets every event after that id first (events are kept a day). A
/// comment line every `heartbeat` (``ServerEnvironment/streamHeartbeat``) keeps proxies from closing an idle stream; the stream
/// ends when the token is removed or the activation is no longer active.
struct EventStreamController {
    let tokens: TokenAuthenticator
    /// The device event log the streams read.
    let store: any ActivationStore & OperationStore & DeviceEventStore
    /// Wakes the streams of a user.
    let events: EventHub
    let heartbeat: Duration

    static let lastEventId = HTTPField.Name("Last-Event-ID")!
    /// Events read from the log at a time.
    static let batch = 100

    func addRoutes(to router: APIRoutes) {
        router.get("api/auth/token/app/operation/events", use: stream)
    }

    @Sendable func stream(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let (token, device) = try await tokens.authenticate(request.headers[HTTPSupport.token])
        var resumeFrom: Int64?
        if let text = request.headers[Self.lastEventId] {
            guard let id = Int64(text), id >= 0 else {
                throw AssentServerError.invalidRequest("Last-Event-ID is the id of an event this stream sent.")
            }
            resumeFrom = id
        }
        let feed = DeviceEventFeed(
            store: store, device: device, tokenId: token.id,
            language: request.headers[HTTPSupport.acceptLanguage])
        // Subscribe before reading the position, so that no event falls between the two.
        let subscription = events.subscribe(userId: device.userId)
        let start: Int64
        do {
            if let resumeFrom {
                start = resumeFrom
            } else {
                start = try await feed.position()
            }
        } catch {
            subscription.cancel()
            throw error
        }
        let stream = Stream(feed: feed, heartbeat: heartbeat)
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/event-stream", .cacheControl: "no-cache",
                HTTPField.Name("X-Accel-Buffering")!: "no",
            ],
            body: ResponseBody { writer in
                defer { subscription.cancel() }
                // A server shutting down ends its streams (clients reconnect elsewhere with Last-Event-ID).
                let pause = StreamPause(wakeup: subscription.wakeup)
                try await withTaskCancellationOrGracefulShutdownHandler {
                    try await stream.run(from: start, writer: &writer, pause: pause)
                } onCancelOrGracefulShutdown: {
                    pause.stop()
                }
                try await writer.finish(nil)
            })
    }

    /// One open stream.
    struct Stream: Sendable {
        let feed: DeviceEventFeed
        let heartbeat: Duration

        func run(from start: Int64, writer: inout any ResponseBodyWriter, pause: StreamPause) async throws {
            var cursor = start
            let hello =
                "retry: 3000\n\n" + ServerSentEvent(id: "\(start)", event: OperationEvent.ready, data: "{}").encoded
            try await writer.write(ByteBuffer(string: hello))
            var lastBeat = ContinuousClock.now
            while !Task.isCancelled, !pause.isStopping {
                var read = 0
                repeat {
                    let batch = try await feed.events(after: cursor, limit: EventStreamController.batch)
                    cursor = batch.position ?? cursor
                    let text = batch.events.map(\.encoded).joined()
                    if !text.isEmpty { try await writer.write(ByteBuffer(string: text)) }
                    read = batch.read
                } while read == EventStreamController.batch
                if ContinuousClock.now - lastBeat >= heartbeat {
                    guard try await feed.tokenStillWorks() else { return }
                    try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
                    lastBeat = .now
                }
                await pause(upTo: heartbeat - (ContinuousClock.now - lastBeat))
            }
        }
    }
}
