import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
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
    var environment: ServerEnvironment
    let application: ApplicationRecord
    let apiKey: String
    let clock: TestClock
    /// Where the data is: a SQLite path or a PostgreSQL URL.
    let location: String
    let keyEncryptionKey: Data
    let backend: Backend

    static func make(
        _ backend: Backend, policy: SecurityPolicy = .default, webhook: WebhookSettings? = nil,
        push: PushSettings? = nil, outbox: OutboxPolicy = .fast, streamHeartbeat: Duration = .milliseconds(300),
        rateLimits: RateLimits = RateLimits(), tfa: TFASettings = TFASettings()
    ) async throws -> TestServer {
        let location =
            switch backend {
            case .sqlite:
                TestFiles.sqlitePath()
            case .postgres: try await PostgresTestCluster.makeDatabase()
            }
        return try await open(
            backend, location: location, keyEncryptionKey: Bytes.random(count: 32), policy: policy, webhook: webhook,
            push: push, outbox: outbox, streamHeartbeat: streamHeartbeat, rateLimits: rateLimits, tfa: tfa)
    }

    /// A server whose console takes operator accounts only, as `assent serve` starts by default (no API-key sign-in).
    static func withOperatorConsole(_ backend: Backend, rateLimits: RateLimits = RateLimits()) async throws
        -> TestServer
    {
        var server = try await make(backend, rateLimits: rateLimits)
        server.environment.consoleAPIKeySignIn = false
        return server
    }

    private static func open(
        _ backend: Backend, location: String, keyEncryptionKey: Data, policy: SecurityPolicy, apiKey: String? = nil,
        webhook: WebhookSettings? = nil, push: PushSettings? = nil, outbox: OutboxPolicy = .fast,
        streamHeartbeat: Duration = .milliseconds(300), rateLimits: RateLimits = RateLimits(),
        tfa: TFASettings = TFASettings(), ring: [Data]? = nil
    ) async throws -> TestServer {
        var logger = Logger(label: "assent.test")
        logger.logLevel = .critical
        let box = try SecretBox(keys: ring ?? [keyEncryptionKey], source: .fixed)
        let store: SQLStore =
            switch backend {
            case .sqlite: try await SQLStore.sqlite(path: location, secretBox: box, logger: logger)
            case .postgres:
                try await SQLStore.postgres(url: location, secretBox: box, logger: logger, maxConnections: 10)
            }
        do {
            try await store.migrate()
        } catch {
            try? await store.shutdown()
            throw error
        }
        let clock = TestClock()
        var environment = ServerEnvironment(
            store: store, policy: policy, logger: logger, now: { clock.now }, webhook: webhook, push: push)
        environment.outbox = outbox
        environment.streamHeartbeat = streamHeartbeat
        environment.rateLimits = rateLimits
        environment.tfa = tfa
        // Tests reach their own receivers on loopback only, so they allow it explicitly (a server's default refuses
        // it), and never ask the network's resolver.
        environment.egress = Egress(
            policy: EgressPolicy(allowing: [try IPNetwork(parsing: "127.0.0.0/8"), try IPNetwork(parsing: "::1")]),
            trustRoots: try push?.additionalTrustRootsPEM.map(Egress.certificates(pem:)) ?? [],
            resolve: Self.offlineResolve)
        // Debug builds run BoringSSL's scrypt unoptimised: tests hash with a small cost (the stored string carries it).
        environment.tfa.passwordHasher = PasswordHasher(logN: 10, r: 8, p: 1)
        // The console tests sign in with the bootstrap key; the operator accounts' tests turn this off.
        environment.consoleAPIKeySignIn = true
        let prepared = try await ServerBootstrap.prepare(environment, organisation: "default")
        guard let key = prepared.bootstrapAPIKey ?? apiKey else { throw TestFailure("no bootstrap key") }
        return TestServer(
            store: store, environment: environment, application: prepared.application, apiKey: key, clock: clock,
            location: location, keyEncryptionKey: keyEncryptionKey, backend: backend)
    }

    /// A resolver that never asks the network: `localhost` is loopback, every other name has no address.
    static let offlineResolve: @Sendable (String) async throws -> [[UInt8]] = { host in
        guard host.lowercased() == "localhost" else { throw TestFailure("\(host) is not resolved in tests") }
        return [[127, 0, 0, 1]]
    }

    /// A second server process's view: its own store connection to the same database and key-encryption key.
    func sibling(webhook: WebhookSettings? = nil, push: PushSettings? = nil) async throws -> TestServer {
        try await Self.open(
            backend, location: location, keyEncryptionKey: keyEncryptionKey, policy: environment.policy, apiKey: apiKey,
            webhook: webhook, push: push, outbox: environment.outbox, streamHeartbeat: environment.streamHeartbeat,
            rateLimits: environment.rateLimits, tfa: environment.tfa)
    }

    /// A server on a restored copy of this one's database at `location`, with `keyEncryptionKey` (this one's unless
    /// given).
    func restored(at location: String, keyEncryptionKey: Data? = nil) async throws -> TestServer {
        try await Self.open(
            backend, location: location, keyEncryptionKey: keyEncryptionKey ?? self.keyEncryptionKey,
            policy: environment.policy, apiKey: apiKey, outbox: environment.outbox,
            streamHeartbeat: environment.streamHeartbeat, rateLimits: environment.rateLimits, tfa: environment.tfa)
    }

    /// Another server process on the same database whose key-encryption key ring is `ring`.
    func sibling(ring: [Data]) async throws -> TestServer {
        try await Self.open(
            backend, location: location, keyEncryptionKey: keyEncryptionKey, policy: environment.policy, apiKey: apiKey,
            outbox: environment.outbox, streamHeartbeat: environment.streamHeartbeat,
            rateLimits: environment.rateLimits, tfa: environment.tfa, ring: ring)
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

    /// Runs the real server on a free loopback port for the duration of `body`; its graceful stop is cancelled
    /// after `stopDeadline`, which `stopReport` records.
    func live<T: Sendable>(
        stopDeadline: Duration = .seconds(10), stopReport: GracefulStop? = nil,
        _ body: @Sendable (HTTPClient) async throws -> T
    ) async throws -> T {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try AssentServerApplication.application(environment: environment, host: "127.0.0.1", port: 0) {
            port in
            continuation.yield(port)
        }
        return try await withRunningServer(app, ports: ports, stopDeadline: stopDeadline, report: stopReport) {
            port in
            try await body(HTTPClient(base: URL(string: "http://127.0.0.1:\(port)")!))
        }
    }

    func shutdown() async { try? await store.shutdown() }

    /// Runs this server and a second process on the same database (``sibling(webhook:push:)``) on their own
    /// loopback ports for the duration of `body`, which gets a client of each; both stores are closed afterwards.
    func liveWithSibling<T: Sendable>(_ body: @Sendable (HTTPClient, HTTPClient) async throws -> T) async throws -> T {
        let second = try await sibling()
        defer {
            Task {
                await shutdown()
                await second.shutdown()
            }
        }
        return try await live { firstClient in
            try await second.live { secondClient in try await body(firstClient, secondClient) }
        }
    }

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

    /// A device activated with a fresh activation code of `userId`.
    func activatedDevice(_ client: HTTPClient, userId: String = "alice") async throws -> TestDevice {
        let created = try await createActivation(client, userId: userId)
        var device = TestDevice(client: client, configuration: try configuration)
        try await device.activate(code: created.activationCode)
        return device
    }

    /// Creates an operation through the operator API.
    func createOperation(_ client: HTTPClient, _ request: CreateOperationRequest) async throws -> OperationInfo {
        try await operatorCall(
            client, "POST", "/api/v1/operations", body: try OperatorJSON.encoder().encode(request),
            as: OperationInfo.self)
    }

    /// Creates another application through the operator API.
    func createApplication(_ client: HTTPClient, name: String = "Business") async throws -> ApplicationInfo {
        try await operatorCall(
            client, "POST", "/api/v1/applications",
            body: try OperatorJSON.encoder().encode(CreateApplicationRequest(name: name)), as: ApplicationInfo.self)
    }

    /// Reads an operation through the operator API.
    func operation(_ client: HTTPClient, _ id: String) async throws -> OperationInfo {
        try await operatorCall(client, "GET", "/api/v1/operations/\(id)", as: OperationInfo.self)
    }

    /// Calls the operator API with the bootstrap key and `body` as it is; the answer as it came (refusals included).
    func operatorSend(_ client: HTTPClient, _ method: String, _ path: String, _ body: String = "") async throws
        -> HTTPClient.Response
    {
        try await client.send(method, path, headers: ["Authorization": "Bearer \(apiKey)"], body: Data(body.utf8))
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

extension OutboxPolicy {
    /// Retries within a test's patience: 100 ms back-off doubling to 1 s, a 250 ms poll. Every live test server
    /// runs a dispatcher (CIBA callbacks can be due at any time) and new messages of its own process wake it at once,
    /// so the poll only paces retries; at 50 ms, dozens of parallel test servers polling slowed the whole run.
    static var fast: OutboxPolicy {
        var policy = OutboxPolicy()
        policy.initialBackoff = .milliseconds(100)
        policy.maximumBackoff = .seconds(1)
        policy.pollInterval = .milliseconds(250)
        policy.leaseDuration = .seconds(10)
        return policy
    }
}
