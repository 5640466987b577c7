import ArgumentParser
import AssentCrypto
import AssentModel
import AssentSDK
import AssentTesting
import AsyncHTTPClient
import Foundation
import Hummingbird
import NIOCore
import NIOPosix
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Measures live delivery on a running server:
/// - `roundtrip`: the operator creates an operation → the device sees it on its live event stream → approves it
///   with a 2FA signature → the operator's webhook receives APPROVED; prints p50/p99 over `--count` round trips.
///   Start the server with `--webhook-url http://127.0.0.1:<--webhook-port>/hook --egress-allow 127.0.0.0/8`.
/// - `webpush`, `apns`: operation created → received through a push service (``pushRoundTrips``).
/// - `connections`: holds `--connections` live streams (spread over `--users` activations), prints the server's
///   resident memory (`--server-pid`) and how long one new operation takes to reach every stream of its user.
@main
struct PushBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assent-push-bench",
        abstract: "Live-stream round trips and held stream connections against a running Assent server.")

    @Option(help: "Server URL.") var url = "http://127.0.0.1:8080"
    @Option(help: "Operator API key.") var apiKey: String
    @Option(help: "roundtrip, connections, webpush or apns.") var mode = "roundtrip"
    @Option(help: "roundtrip: measured round trips (after 50 warm-up ones).") var count = 1000
    @Option(help: "roundtrip: port of the webhook receiver this program runs.") var webhookPort = 18_181
    @Option(help: "connections: streams to hold.") var connections = 10_000
    @Option(help: "connections: activations (users) the streams are spread over.") var users = 100
    @Option(help: "connections: the server's process id, for its memory.") var serverPid: Int32?
    @Option(help: "webpush, apns: port of the push service receiver this program runs.") var pushPort = 18_182
    @Option(help: "apns: the receiver's TLS certificate (PEM), trusted by the server's --push-ca-file.")
    var tlsCertificate: String?
    @Option(help: "apns: the receiver's TLS private key (PEM).") var tlsKey: String?
    @Option(help: "A label for the report.") var label = "run"

    func run() async throws {
        guard let base = URL(string: url), base.host != nil, base.port != nil else {
            throw ValidationError("--url must be http://host:port")
        }
        let client = AssentTesting.HTTPClient(base: base)
        let auth = ["Authorization": "Bearer \(apiKey)"]
        let appResponse = try await client.send("GET", "/api/v1/application", headers: auth)
        guard appResponse.status == 200 else { throw TestFailure("application: \(appResponse.text)") }
        let info = try OperatorJSON.decoder().decode(ApplicationInfo.self, from: appResponse.body)
        let configuration = try SDKConfiguration(parsing: info.sdkConfiguration)
        switch mode {
        case "roundtrip":
            try await roundTrips(base: base, client: client, auth: auth, configuration: configuration)
        case "connections":
            try await holdConnections(base: base, client: client, auth: auth, configuration: configuration)
        case "webpush", "apns":
            try await pushRoundTrips(client: client, auth: auth, configuration: configuration)
        default:
            throw ValidationError("--mode is roundtrip, connections, webpush or apns.")
        }
    }

    func activate(
        _ client: AssentTesting.HTTPClient, auth: [String: String], configuration: SDKConfiguration, user: String
    )
        async throws -> (TestDevice, TokenCreateResponse)
    {
        let body = try OperatorJSON.encoder().encode(CreateActivationRequest(userId: user, commitMode: "auto"))
        let created = try await client.send("POST", "/api/v1/activations", headers: auth, body: body)
        guard created.status == 201 else { throw TestFailure("create activation: \(created.text)") }
        let code = try OperatorJSON.decoder().decode(CreateActivationResponse.self, from: created.body)
        var device = TestDevice(client: client, configuration: configuration)
        try await device.activate(code: code.activationCode)
        let token = try await device.createToken()
        return (device, token)
    }

    func createOperation(_ client: AssentTesting.HTTPClient, auth: [String: String], user: String) async throws
        -> OperationInfo
    {
        let request = CreateOperationRequest(
            userId: user, name: "authorize_payment", data: "A1*A100.00EUR*ICZ2730300000001165254011",
            formData: ["en": FormData(title: "Confirm payment", message: "Pay 100 EUR?")], expiresIn: 600)
        let response = try await client.send(
            "POST", "/api/v1/operations", headers: auth, body: try OperatorJSON.encoder().encode(request))
        guard response.status == 201 else { throw TestFailure("create operation: \(response.text)") }
        return try OperatorJSON.decoder().decode(OperationInfo.self, from: response.body)
    }

    // MARK: Round trips

    func roundTrips(
        base: URL, client: AssentTesting.HTTPClient, auth: [String: String], configuration: SDKConfiguration
    )
        async throws
    {
        let user = "push-bench-\(UUID().uuidString.prefix(8))"
        var (device, token) = try await activate(client, auth: auth, configuration: configuration, user: user)
        let webhooks = Arrivals()
        let router = Router()
        router.post("hook") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 16)
            struct Event: Decodable {
                var operationId: String
                var status: String
            }
            if let event = try? JSONDecoder().decode(Event.self, from: Data(body.readableBytesView)),
                event.status == "APPROVED"
            {
                webhooks.arrive(event.operationId)
            }
            return Response(status: .ok)
        }
        let receiver = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: webhookPort)))
        let receiverTask = Task { try await receiver.runService(gracefulShutdownSignals: []) }
        defer { receiverTask.cancel() }

        // The measured requests go through AsyncHTTPClient (kept-alive connections on SwiftNIO): URLSession on
        // Linux adds about 2 ms to each request, which would measure the client rather than the server.
        let http = AsyncHTTPClient.HTTPClient(eventLoopGroupProvider: .singleton)
        defer { Task { try? await http.shutdown() } }
        var streamRequest = HTTPClientRequest(url: base.absoluteString + "/api/auth/token/app/operation/events")
        streamRequest.headers.add(name: TokenHeader.name, value: device.tokenHeader(token))
        let streamResponse = try await http.execute(streamRequest, timeout: .hours(1))
        guard streamResponse.status.code == 200 else { throw TestFailure("event stream: \(streamResponse.status)") }
        let created = Arrivals()
        let reader = Task {
            var parser = ServerSentEventParser()
            for try await chunk in streamResponse.body {
                for event in try parser.feed(chunk.readableBytesView) where event.event == OperationEvent.created {
                    if let payload = try? JSONDecoder().decode(OperationEvent.self, from: Data(event.data.utf8)) {
                        created.arrive(payload.operationId)
                    }
                }
            }
        }
        defer { reader.cancel() }
        try await Task.sleep(for: .milliseconds(500))
        func post(_ path: String, headers: [String: String], body: Data) async throws -> (Int, Data) {
            var request = HTTPClientRequest(url: base.absoluteString + path)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await http.execute(request, timeout: .seconds(30))
            let bytes = try await response.body.collect(upTo: 1 << 20)
            return (Int(response.status.code), Data(bytes.readableBytesView))
        }
        let operationRequest = try OperatorJSON.encoder().encode(
            CreateOperationRequest(
                userId: user, name: "authorize_payment", data: "A1*A100.00EUR*ICZ2730300000001165254011",
                formData: ["en": FormData(title: "Confirm payment", message: "Pay 100 EUR?")], expiresIn: 600))

        var latencies: [Duration] = []
        var legs: [[Duration]] = [[], [], [], []]
        for round in 0..<(count + 50) {
            let start = ContinuousClock.now
            let (createdStatus, createdBody) = try await post(
                "/api/v1/operations", headers: auth, body: operationRequest)
            guard createdStatus == 201 else { throw TestFailure("create: HTTP \(createdStatus)") }
            let operation = try OperatorJSON.decoder().decode(OperationInfo.self, from: createdBody)
            let t1 = ContinuousClock.now
            try await created.wait(operation.id)
            let t2 = ContinuousClock.now
            let approval = try MobileTokenJSON.encoder().encode(
                RequestEnvelope(OperationAuthorizeRequest(id: operation.id, data: operation.data)))
            let header = try device.authorization(uriId: "/operation/authorize", body: approval)
            let (approvedStatus, _) = try await post(
                "/api/auth/token/app/operation/authorize", headers: [AuthorizationHeader.name: header], body: approval)
            guard approvedStatus == 200 else { throw TestFailure("authorize: HTTP \(approvedStatus)") }
            let t3 = ContinuousClock.now
            try await webhooks.wait(operation.id)
            let end = ContinuousClock.now
            if round >= 50 {
                latencies.append(end - start)
                legs[0].append(t1 - start)
                legs[1].append(t2 - t1)
                legs[2].append(t3 - t2)
                legs[3].append(end - t3)
            }
        }
        print(
            """
            [\(label)] push round trip (create → stream event → 2FA approval → webhook APPROVED): \
            \(latencies.count) round trips, p50 \(Self.percentile(latencies, 0.5)), \
            p99 \(Self.percentile(latencies, 0.99))
            [\(label)]   legs p50 / p99: create \(Self.percentile(legs[0], 0.5)) / \(Self.percentile(legs[0], 0.99)), \
            stream event \(Self.percentile(legs[1], 0.5)) / \(Self.percentile(legs[1], 0.99)), approval \
            \(Self.percentile(legs[2], 0.5)) / \(Self.percentile(legs[2], 0.99)), webhook \
            \(Self.percentile(legs[3], 0.5)) / \(Self.percentile(legs[3], 0.99))
            """)
    }

    static func percentile(_ values: [Duration], _ p: Double) -> String {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return "-" }
        let value = sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        return String(
            format: "%.2f ms", Double(value.components.attoseconds) / 1e15 + Double(value.components.seconds) * 1000)
    }

    // MARK: Held connections

    func holdConnections(
        base: URL, client: AssentTesting.HTTPClient, auth: [String: String], configuration: SDKConfiguration
    )
        async throws
    {
        let prefix = "stream-bench-\(UUID().uuidString.prefix(8))"
        print("Activating \(users) devices…")
        var devices: [(TestDevice, TokenCreateResponse, String)] = []
        for index in 0..<users {
            let user = "\(prefix)-\(index)"
            let (device, token) = try await activate(client, auth: auth, configuration: configuration, user: user)
            devices.append((device, token, user))
        }
        let rssBefore = serverPid.flatMap(Self.residentKilobytes)
        let group = MultiThreadedEventLoopGroup.singleton
        print("Opening \(connections) streams…")
        let started = ContinuousClock.now
        var streams: [StreamConnection] = []
        var index = 0
        while index < connections {
            let batch = min(200, connections - index)
            let opened = try await withThrowingTaskGroup(of: StreamConnection.self) { tasks in
                for offset in 0..<batch {
                    let (device, token, user) = devices[(index + offset) % devices.count]
                    let header = device.tokenHeader(token)
                    tasks.addTask {
                        try await StreamConnection.open(
                            host: base.host!, port: base.port!, tokenHeader: header, user: user, group: group)
                    }
                }
                return try await tasks.reduce(into: []) { $0.append($1) }
            }
            for stream in opened { try await stream.ready.futureResult.get() }
            streams += opened
            index += batch
        }
        let openedIn = ContinuousClock.now - started
        try await Task.sleep(for: .seconds(2))
        let rssHeld = serverPid.flatMap(Self.residentKilobytes)
        // One operation for the first user: how long until every stream of that user shows it.
        let target = devices[0].2
        let listeners = streams.filter { $0.user == target }
        let fanOutStart = ContinuousClock.now
        let operation = try await createOperation(client, auth: auth, user: target)
        for stream in listeners { try await stream.waitFor(operation.id) }
        let fanOut = ContinuousClock.now - fanOutStart
        let still = streams.filter(\.isOpen).count
        func megabytes(_ kilobytes: Int?) -> String {
            kilobytes.map { String(format: "%.0f MB", Double($0) / 1024) } ?? "-"
        }
        print(
            """
            [\(label)] \(streams.count) live streams held (\(still) still open after the fan-out), opened in \
            \(openedIn); server RSS \(megabytes(rssBefore)) before, \(megabytes(rssHeld)) holding them \
            (\(rssBefore.flatMap { before in rssHeld.map { String(format: "%.1f KB", Double($0 - before) / Double(streams.count)) } } ?? "-") \
            per stream); one operation reached all \(listeners.count) streams of its user in \(fanOut)
            """)
        for stream in streams { stream.close() }
    }

    /// `VmRSS` of a process, in kilobytes.
    static func residentKilobytes(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "")
        }
        return nil
    }
}

/// Operation ids that arrived, and waiters for those that have not yet.
final class Arrivals: Sendable {
    private let state = Mutex<(arrived: Set<String>, waiters: [String: CheckedContinuation<Void, Never>])>(([], [:]))

    func arrive(_ id: String) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
            state.arrived.insert(id)
            return nil
        }
        waiter?.resume()
    }

    /// Returns once `id` arrived (at most 10 s).
    func wait(_ id: String) async throws {
        let timeout = Task {
            try await Task.sleep(for: .seconds(10))
            self.arrive(id)
        }
        defer { timeout.cancel() }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.arrived.remove(id) != nil { return true }
                state.waiters[id] = continuation
                return false
            }
            if now { continuation.resume() }
        }
        if timeout.isCancelled == false, Task.isCancelled { throw CancellationError() }
    }
}

/// One raw HTTP/1.1 event-stream connection over SwiftNIO (URLSession keeps only a few connections per host).
final class StreamConnection: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let user: String
    let ready: EventLoopPromise<Void>
    private let text = Mutex("")
    private let channel = Mutex<(any Channel)?>(nil)
    private let open = Atomic(true)
    private let settled = Atomic(false)

    init(user: String, ready: EventLoopPromise<Void>) {
        self.user = user
        self.ready = ready
    }

    static func open(host: String, port: Int, tokenHeader: String, user: String, group: any EventLoopGroup)
        async throws -> StreamConnection
    {
        let loop = group.next()
        let connection = StreamConnection(user: user, ready: loop.makePromise())
        let channel = try await ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(connection) }
            }
            .connect(host: host, port: port).get()
        connection.channel.withLock { $0 = channel }
        let request =
            "GET /api/auth/token/app/operation/events HTTP/1.1\r\nHost: \(host):\(port)\r\n"
            + "\(TokenHeader.name): \(tokenHeader)\r\nAccept: text/event-stream\r\n\r\n"
        try await channel.writeAndFlush(ByteBuffer(string: request)).get()
        return connection
    }

    var isOpen: Bool { open.load(ordering: .relaxed) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let all = text.withLock { text in
            text += String(buffer: buffer)
            return text
        }
        if all.contains("event: ready"), settle() { ready.succeed(()) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        open.store(false, ordering: .relaxed)
        if settle() { ready.fail(TestFailure("the stream closed")) }
    }

    /// Whether this call is the one that completes `ready`.
    private func settle() -> Bool {
        settled.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
    }

    /// Waits until the stream carried `id` (at most 30 s).
    func waitFor(_ id: String) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if text.withLock({ $0.contains(id) }) { return }
            try await Task.sleep(for: .milliseconds(1))
        }
        throw TestFailure("a stream never showed the operation")
    }

    func close() { channel.withLock { $0?.close(promise: nil) } }
}
