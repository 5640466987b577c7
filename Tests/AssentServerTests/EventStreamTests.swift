import AssentCrypto
import AssentModel
import AssentSDK
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Live event stream")
struct EventStreamTests {
    /// Opens the stream with a fresh MAC token header of `token`.
    static func open(
        _ device: TestDevice, token: TokenCreateResponse, lastEventId: String? = nil, language: String? = nil
    ) async throws -> EventStreamReader {
        var headers = [TokenHeader.name: device.tokenHeader(token)]
        if let lastEventId { headers["Last-Event-ID"] = lastEventId }
        if let language { headers["Accept-Language"] = language }
        return try await EventStreamReader(base: device.client.base, headers: headers)
    }

    static func isOperation(_ type: String, _ id: String) -> (ServerSentEvent) -> Bool {
        { event in
            event.event == type && (try? EventStreamReader.operationEvent(event).operationId) == id
        }
    }

    @Test(
        "A device's stream says ready, then shows its user's new and finished operations the moment they happen",
        arguments: Backend.all)
    func live(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let token = try await device.createToken()
            let stream = try await Self.open(device, token: token, language: "cs")
            defer { stream.close() }
            #expect(stream.status == 200)
            let ready = try await stream.wait("ready") { $0.contains { $0.event == OperationEvent.ready } }
            #expect(ready.first?.event == OperationEvent.ready && ready.first?.id != nil)

            let bob = try await server.createOperation(client, try OperationFixtures.payment(userId: "bob"))
            var request = try OperationFixtures.payment(userId: "alice")
            request.formData?["cs"] = FormData(title: "Potvrďte platbu", message: "Zaplatit 100 Kč?")
            let created = try await server.createOperation(client, request)
            let events = try await stream.wait("created") {
                $0.contains(where: Self.isOperation(OperationEvent.created, created.id))
            }
            let payload = try EventStreamReader.operationEvent(try #require(events.last))
            #expect(payload.status == .pending && payload.name == "authorize_payment")
            #expect(payload.operation?.id == created.id && payload.operation?.formData.title == "Potvrďte platbu")
            #expect(!events.contains(where: Self.isOperation(OperationEvent.created, bob.id)))

            #expect(try await device.authorizeOperation(id: created.id, data: created.data).status == 200)
            let finished = try await stream.wait("finished") {
                $0.contains(where: Self.isOperation(OperationEvent.finished, created.id))
            }
            let result = try EventStreamReader.operationEvent(try #require(finished.last))
            #expect(result.status == .approved && result.operation == nil)
            // Ids grow, so a client can resume after any of them.
            let ids = finished.compactMap { $0.id.flatMap { Int64($0) } }
            #expect(ids == ids.sorted() && Set(ids).count == ids.count)
            try await stream.wait("a heartbeat") { _ in stream.text.contains(": heartbeat") }
        }
    }

    @Test(
        "Reconnecting with Last-Event-ID delivers every event missed while away, once and in order",
        arguments: Backend.all)
    func resume(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let token = try await device.createToken()
            let first = try await Self.open(device, token: token)
            let seen = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            let before = try await first.wait("the first operation") {
                $0.contains(where: Self.isOperation(OperationEvent.created, seen.id))
            }
            let lastId = try #require(before.last?.id)
            first.close()
            try await first.waitForEnd()

            // While away: two new operations, one of them canceled, one approved.
            let missedA = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            let missedB = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            _ = try await server.operatorCall(
                client, "POST", "/api/v1/operations/\(missedA.id)/cancel", as: OperationInfo.self)
            #expect(try await device.authorizeOperation(id: seen.id, data: seen.data).status == 200)

            let second = try await Self.open(device, token: token, lastEventId: lastId)
            defer { second.close() }
            let replayed = try await second.wait("the missed events") { $0.count >= 5 }
            #expect(replayed.first?.event == OperationEvent.ready && replayed.first?.id == lastId)
            let operations = try replayed.dropFirst().map { event in
                "\(event.event ?? "") \(try EventStreamReader.operationEvent(event).operationId)"
            }
            #expect(
                operations == [
                    "operation.created \(missedA.id)", "operation.created \(missedB.id)",
                    "operation.finished \(missedA.id)", "operation.finished \(seen.id)",
                ])
            try await Task.sleep(for: .milliseconds(400))
            #expect(second.received.count == 5)
        }
    }

    @Test(
        "The stream needs a valid MAC token and a numeric Last-Event-ID, and ends when the activation is blocked",
        arguments: Backend.all)
    func refusals(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let token = try await device.createToken()
            let anonymous = try await EventStreamReader(base: client.base, headers: [:])
            #expect(anonymous.status == 401)
            let badResume = try await Self.open(device, token: token, lastEventId: "yesterday")
            #expect(badResume.status == 400)
            let stream = try await Self.open(device, token: token)
            defer { stream.close() }
            #expect(stream.status == 200)
            try await stream.wait("ready") { !$0.isEmpty }
            _ = try await server.operatorCall(
                client, "POST", "/api/v1/activations/\(device.activationId)/block", as: ActivationInfo.self)
            try await stream.waitForEnd(seconds: 5)
        }
    }

    @Test("An operation created through one server process reaches a stream held by another (PostgreSQL NOTIFY)")
    func acrossProcesses() async throws {
        guard Backend.all.contains(.postgres) else { return }
        // A minute between heartbeats: only a notification can wake the first process's stream in time.
        let first = try await TestServer.make(.postgres, streamHeartbeat: .seconds(60))
        defer { Task { await first.shutdown() } }
        let second = try await first.sibling()
        defer { Task { await second.shutdown() } }
        try await first.live { clientA in
            var device = try await first.activatedDevice(clientA)
            let token = try await device.createToken()
            let stream = try await Self.open(device, token: token)
            defer { stream.close() }
            try await stream.wait("ready") { !$0.isEmpty }
            try await second.live { clientB in
                // Give the first process's listener a moment to start.
                try await Task.sleep(for: .milliseconds(300))
                for _ in 0..<5 {
                    let started = ContinuousClock.now
                    let created = try await second.createOperation(
                        clientB, try OperationFixtures.payment(userId: "alice"))
                    try await stream.wait("the other process's operation") {
                        $0.contains(where: Self.isOperation(OperationEvent.created, created.id))
                    }
                    // Well under the 60 s heartbeat, so NOTIFY delivered it (a loaded machine can take seconds).
                    #expect(ContinuousClock.now - started < .seconds(30))
                }
            }
        }
    }

    @Test("The SDK's live updates show a new operation at once, without polling", arguments: Backend.all)
    func sdkLiveUpdates(backend: Backend) async throws {
        try await SDKClients.withActivatedClient(backend) { server, http, client, _ in
            let operations = OperationsService(client: client)
            let events = await operations.events()
            let added = AsyncStream<String>.makeStream()
            let consumer = Task {
                for await event in events {
                    if case .changed(let change) = event {
                        for operation in change.added { added.continuation.yield(operation.id) }
                    }
                }
            }
            defer { consumer.cancel() }
            await operations.startLiveUpdates(fallbackPollingInterval: .seconds(60))
            // Patient: on a loaded two-core machine running every suite at once, connecting can take many seconds.
            let deadline = ContinuousClock.now + .seconds(60)
            while await !operations.isLive, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(await operations.isLive)
            #expect(await !operations.isPollingOperations)
            var iterator = added.stream.makeAsyncIterator()
            for _ in 0..<3 {
                let started = ContinuousClock.now
                let created = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
                // Polling would take a minute here: only the stream can bring it in well under that (the bound is
                // generous because a loaded two-core machine running every suite at once can take seconds).
                let arrived = await iterator.next()
                #expect(arrived == created.id)
                #expect(ContinuousClock.now - started < .seconds(30))
            }
            await operations.stopLiveUpdates()
            #expect(await !operations.isLive)
        }
    }

    /// A transport that cannot stream.
    struct RequestOnlyTransport: Transport {
        let inner = URLSessionTransport()
        func send(_ request: URLRequest) async throws -> (status: Int, body: Data) { try await inner.send(request) }
    }

    @Test("Without a stream, live updates poll instead")
    func sdkFallback() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        let directory = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.live { http in
            // Activate, then open the same activation with a transport that cannot stream.
            _ = try await SDKClients.activatedClient(server, http, directory: directory)
            let client = try AssentClient(
                serverURL: http.base, configuration: try server.configuration.text,
                keystore: try FileKeystore(directory: directory), transport: RequestOnlyTransport())
            let operations = OperationsService(client: client)
            let events = await operations.events()
            await operations.startLiveUpdates(fallbackPollingInterval: .seconds(5))
            let created = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            for await event in events {
                if case .changed(let change) = event, change.added.contains(where: { $0.id == created.id }) { break }
            }
            #expect(await !operations.isLive)
            #expect(await operations.isPollingOperations)
            await operations.stopLiveUpdates()
            #expect(await !operations.isPollingOperations)
        }
    }
}
