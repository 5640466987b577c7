import AssentModel
import AssentSDK
import AssentTesting
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A live event stream opened over real HTTP, collecting its events (and raw text) as they arrive.
final class EventStreamReader: Sendable {
    let status: Int
    private let collected = Collected()
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    /// What the reading task fills in.
    private final class Collected: Sendable {
        let events = Mutex<[ServerSentEvent]>([])
        let raw = Mutex<String>("")
        let ended = Mutex(false)
        let endedCleanly = Mutex(false)
    }

    /// Opens `GET path` (by default a device's `/api/auth/token/app/operation/events`) on `base` with `headers`.
    init(base: URL, path: String = "/api/auth/token/app/operation/events", headers: [String: String] = [:])
        async throws
    {
        var request = URLRequest(url: URL(string: path, relativeTo: base)!)
        request.httpMethod = "GET"
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (status, body) = try await URLSessionTransport().stream(request)
        self.status = status
        let reader = Task { [collected] in
            var parser = ServerSentEventParser()
            do {
                for try await chunk in body {
                    collected.raw.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
                    let parsed = try parser.feed(chunk)
                    collected.events.withLock { $0.append(contentsOf: parsed) }
                }
                collected.endedCleanly.withLock { $0 = true }
            } catch {}
            collected.ended.withLock { $0 = true }
        }
        task.withLock { $0 = reader }
    }

    var received: [ServerSentEvent] { collected.events.withLock { $0 } }
    var text: String { collected.raw.withLock { $0 } }
    var hasEnded: Bool { collected.ended.withLock { $0 } }
    /// Whether the server ended the stream with a proper end of the response (not a broken connection).
    var hasEndedCleanly: Bool { collected.endedCleanly.withLock { $0 } }

    /// Waits until `condition` holds for the events received (at most `seconds`). A wait, not a timing: under the whole
    /// suite's load a stream's first bytes have taken over 10 seconds, so the default is a minute.
    @discardableResult
    func wait(_ what: String, seconds: Double = 60, until condition: ([ServerSentEvent]) -> Bool) async throws
        -> [ServerSentEvent]
    {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            let current = received
            if condition(current) { return current }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TestFailure("event stream: \(what) did not happen; received \(received.map { $0.event ?? "" })")
    }

    /// Waits for the stream to end (at most `seconds`).
    func waitForEnd(seconds: Double = 10) async throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if hasEnded { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("the event stream did not end")
    }

    func close() { task.withLock { $0?.cancel() } }

    /// The decoded data of an operation event.
    static func operationEvent(_ event: ServerSentEvent) throws -> OperationEvent {
        try JSONDecoder().decode(OperationEvent.self, from: Data(event.data.utf8))
    }
}
