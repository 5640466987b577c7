import AssentCrypto
import AssentModel
import AssentServer
import Foundation
import Hummingbird
import Logging
import Prometheus
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The databases every storage-dependent test runs against.
enum Backend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// Both, unless `ASSENT_SKIP_POSTGRES=1` says PostgreSQL is deliberately unavailable.
    static var all: [Backend] {
        ProcessInfo.processInfo.environment["ASSENT_SKIP_POSTGRES"] == "1" ? [.sqlite] : [.sqlite, .postgres]
    }
}

/// A clock tests can move.
final class TestClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)
    var now: Date { Date().addingTimeInterval(offset.withLock { $0 }) }
    func advance(by seconds: TimeInterval) { offset.withLock { $0 += seconds } }
}

/// A server over a fresh store, its operator key and application; `live` runs it on a loopback port.
struct TestServer: Sendable {
    let store: SQLStore
    let environment: ServerEnvironment
    let application: ApplicationRecord
    let apiKey: String
    let clock: TestClock

    static func make(_ backend: Backend, policy: SecurityPolicy = .default) async throws -> TestServer {
        var logger = Logger(label: "assent.test")
        logger.logLevel = .critical
        let box = try SecretBox(keyEncryptionKey: Bytes.random(count: 32))
        let store: SQLStore
        switch backend {
        case .sqlite:
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(
                "assent-\(UUID().uuidString).sqlite")
            store = try await SQLStore.sqlite(path: path.path, secretBox: box, logger: logger)
        case .postgres:
            store = try await SQLStore.postgres(
                url: try await PostgresTestCluster.makeDatabase(), secretBox: box, logger: logger)
        }
        try await store.migrate()
        let clock = TestClock()
        let environment = ServerEnvironment(store: store, policy: policy, logger: logger, now: { clock.now })
        let prepared = try await ServerBootstrap.prepare(environment)
        guard let key = prepared.bootstrapAPIKey else { throw TestFailure("no bootstrap key") }
        return TestServer(
            store: store, environment: environment, application: prepared.application, apiKey: key, clock: clock)
    }

    var configuration: SDKConfiguration {
        get throws {
            try SDKConfiguration(
                applicationKey: application.applicationKey, applicationSecret: application.applicationSecret,
                masterServerPublicKey: application.masterPublicKey)
        }
    }

    var router: Router<AssentRequestContext> {
        AssentServerApplication.router(environment: environment, registry: PrometheusCollectorRegistry())
    }

    /// Runs the real server on a free loopback port for the duration of `body`.
    func live<T: Sendable>(_ body: @Sendable (HTTPClient) async throws -> T) async throws -> T {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = AssentServerApplication.application(environment: environment, host: "127.0.0.1", port: 0) { port in
            continuation.yield(port)
        }
        let server = Task { try await app.runService(gracefulShutdownSignals: []) }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw TestFailure("the server did not start") }
        let client = HTTPClient(base: URL(string: "http://127.0.0.1:\(port)")!)
        do {
            let result = try await body(client)
            server.cancel()
            _ = await server.result
            return result
        } catch {
            server.cancel()
            _ = await server.result
            throw error
        }
    }

    func shutdown() async { try? await store.shutdown() }

    /// Creates an activation through the operator API.
    func createActivation(_ client: HTTPClient, userId: String = "alice", commitMode: String = "auto") async throws
        -> CreateActivationResponse
    {
        let response = try await client.send(
            "POST", "/api/v1/activations", headers: ["Authorization": "Bearer \(apiKey)"],
            body: try OperatorJSON.encoder().encode(CreateActivationRequest(userId: userId, commitMode: commitMode)))
        guard response.status == 201 else {
            throw TestFailure("create activation: \(response.status) \(response.text)")
        }
        return try OperatorJSON.decoder().decode(CreateActivationResponse.self, from: response.body)
    }

    /// Calls the operator API and decodes the answer.
    func operatorCall<T: Decodable>(
        _ client: HTTPClient, _ method: String, _ path: String, body: Data = Data(), as type: T.Type
    ) async throws -> T {
        let response = try await client.send(
            method, path, headers: ["Authorization": "Bearer \(apiKey)"], body: body)
        guard (200..<300).contains(response.status) else {
            throw TestFailure("\(method) \(path): \(response.status) \(response.text)")
        }
        return try OperatorJSON.decoder().decode(type, from: response.body)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A minimal HTTP client over URLSession, with enough connections for the concurrency tests.
struct HTTPClient: Sendable {
    struct Response: Sendable {
        var status: Int
        var body: Data
        var text: String { String(decoding: body, as: UTF8.self) }

        /// The `code` of a PowerAuth or operator error body.
        var errorCode: String? {
            struct Envelope: Decodable {
                struct Payload: Decodable { let code: String }
                let responseObject: Payload?
                let code: String?
            }
            let envelope = try? JSONDecoder().decode(Envelope.self, from: body)
            return envelope?.responseObject?.code ?? envelope?.code
        }
    }

    let base: URL
    let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        configuration.timeoutIntervalForRequest = 30
        return URLSession(configuration: configuration)
    }()

    func send(_ method: String, _ path: String, headers: [String: String] = [:], body: Data = Data()) async throws
        -> Response
    {
        var request = URLRequest(url: URL(string: path, relativeTo: base)!)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if !body.isEmpty || method == "POST" { request.httpBody = body }
        let (data, response) = try await session.data(for: request)
        return Response(status: (response as? HTTPURLResponse)?.statusCode ?? 0, body: data)
    }
}
