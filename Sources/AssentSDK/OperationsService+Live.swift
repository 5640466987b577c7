import AssentCrypto
import AssentModel
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension OperationsService {
    /// The server's live event stream of the activation's user.
    static let eventsPath = "/api/auth/token/app/operation/events"

    /// Keeps the list current from the server's live event stream: every `operation.created` or
    /// `operation.finished` event fetches the list at once, so observers and ``events()`` see additions and
    /// removals within milliseconds. While the stream is down (no network, a server without it, a transport that
    /// cannot stream) the service polls every `fallbackPollingInterval` and reconnects with back-off (1 s doubling
    /// to 30 s), resuming after the last event it saw. ``isLive`` tells whether the stream is connected. The stream
    /// keeps the service alive: call ``stopLiveUpdates()`` when the list is no longer shown.
    public func startLiveUpdates(fallbackPollingInterval: Duration = defaultPollingInterval) {
        liveTask?.cancel()
        liveTask = Task { [weak self] in
            var delay = Duration.seconds(1)
            while !Task.isCancelled, let service = self {
                if await service.follow() { delay = .seconds(1) }
                guard !Task.isCancelled else { break }
                await service.streamLost(fallback: fallbackPollingInterval)
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(30))
            }
            await self?.setLive(false)
        }
    }

    /// Stops live updates (and the fallback polling they started).
    public func stopLiveUpdates() {
        liveTask?.cancel()
        liveTask = nil
        isLive = false
        stopPollingOperations()
    }

    func setLive(_ live: Bool) { isLive = live }

    /// The stream broke: poll until it is back.
    private func streamLost(fallback: Duration) {
        isLive = false
        if !isPollingOperations { startPollingOperations(interval: fallback, delayStart: true) }
    }

    /// Reads the stream until it ends; returns whether it connected.
    private func follow() async -> Bool {
        var connected = false
        do {
            try await read { connected = true }
        } catch {}
        return connected
    }

    /// Reads the stream until it ends: on `ready` stops the fallback polling and refreshes the list; on every
    /// operation event refreshes it again.
    private func read(connected: () -> Void) async throws {
        var headers = [TokenHeader.name: try await client.tokenHeader(), "Accept": "text/event-stream"]
        if let lastLiveEventId { headers["Last-Event-ID"] = lastLiveEventId }
        if let acceptLanguage { headers["Accept-Language"] = acceptLanguage }
        guard let url = URL(string: Self.eventsPath, relativeTo: client.serverURL) else { return }
        var request = URLRequest(url: url)
        request.httpMethod = "GET"
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (status, body) = try await client.transport.stream(request)
        guard status == 200 else {
            // A refused token is replaced on the next attempt.
            if status == 401 { try await client.dropToken() }
            throw AssentError(.server, "The event stream answered HTTP \(status).", httpStatus: status)
        }
        var parser = ServerSentEventParser()
        for try await chunk in body {
            for event in try parser.feed(chunk) {
                if let id = parser.lastEventId { lastLiveEventId = id }
                if event.event == OperationEvent.ready {
                    isLive = true
                    connected()
                    stopPollingOperations()
                }
                _ = await refreshOperations()
            }
        }
    }
}
