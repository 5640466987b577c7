import AssentCrypto
import AssentModel
import AssentTesting
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization
import Testing

@testable import AssentServerTesting

/// Traces over OTLP/HTTP: `assent serve --otlp-endpoint` exports a span per request (continuing a W3C
/// `traceparent`), its PostgreSQL transaction as a child, and log lines carry the span's ids; paths and queries,
/// which carry one-time links and codes, never leave the server; the sampling ratio is obeyed.
@Suite("Traces exported to an OpenTelemetry collector")
struct TracingTests {
    /// An OTLP/HTTP collector on a loopback port: keeps each export's content type and body.
    final class Collector: Sendable {
        let exports = Mutex<[(type: String, body: Data)]>([])

        func run<T: Sendable>(_ body: @Sendable (URL) async throws -> T) async throws -> T {
            let router = Router()
            router.post("v1/traces") { request, _ -> Response in
                let data = Data(try await request.body.collect(upTo: 8 << 20).readableBytesView)
                let type = request.headers[.contentType] ?? ""
                self.exports.withLock { $0.append((type, data)) }
                // An empty ExportTraceServiceResponse, in the request's encoding.
                return type.hasPrefix("application/json")
                    ? Response(
                        status: .ok, headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(string: "{}")))
                    : Response(status: .ok, headers: [.contentType: "application/x-protobuf"])
            }
            let (ports, continuation) = AsyncStream<Int>.makeStream()
            let app = Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) })
            return try await withRunningServer(app, ports: ports) { port in
                try await body(URL(string: "http://127.0.0.1:\(port)")!)
            }
        }
    }

    /// A span of an OTLP/JSON export.
    struct Span: Decodable {
        var traceId: String
        var spanId: String
        var parentSpanId: String?
        var name: String
        var attributes: [Attribute]?

        struct Attribute: Decodable {
            var key: String
            var value: [String: JSONValue]
        }

        func attribute(_ key: String) -> String? {
            guard let value = attributes?.first(where: { $0.key == key })?.value.values.first else { return nil }
            switch value {
            case .string(let text): return text
            case .number(let number): return String(Int(number))
            default: return nil
            }
        }

        /// The id's bytes as lowercase hex: OTLP/JSON writes ids in hex, a protobuf JSON mapping in base64.
        static func hex(_ id: String?) -> String? {
            guard let id, !id.isEmpty else { return nil }
            if id.count == 32 || id.count == 16, id.allSatisfy(\.isHexDigit) { return id.lowercased() }
            return Data(base64Encoded: id).map(Hex.encode)
        }
    }

    struct Export: Decodable {
        var resourceSpans: [ResourceSpans]
        struct ResourceSpans: Decodable {
            var scopeSpans: [ScopeSpans]
        }
        struct ScopeSpans: Decodable {
            var spans: [Span]
        }
    }

    /// A JSON value of an attribute (`stringValue`, `intValue` as a string or a number, `boolValue`).
    enum JSONValue: Decodable {
        case string(String)
        case number(Double)
        case other

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                self = .string(text)
            } else if let number = try? container.decode(Double.self) {
                self = .number(number)
            } else {
                self = .other
            }
        }
    }

    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let parentID = "00f067aa0ba902b7"
    static let traceparent = "00-\(traceID)-\(parentID)-01"

    @Test("OTLP/JSON on PostgreSQL: a span per request continuing traceparent, the transaction its child, ids in logs")
    func jsonOnPostgres() async throws {
        let collector = Collector()
        let database = try await PostgresTestCluster.makeDatabase()
        let work = try ConfigFileTests.folder()
        try await collector.run { endpoint in
            let (server, printed) = try await CLITests.serve(
                work,
                arguments: [
                    "--database", database, "--otlp-endpoint", endpoint.absoluteString + "/", "--otlp-protocol",
                    "http/json", "--drain-seconds", "0", "--log-level", "info",
                ])
            defer { if server.isRunning { server.terminate() } }
            let base = try #require(printed["url"].flatMap(URL.init(string:)))
            let client = HTTPClient(base: base)
            let environment = try CLITests.connection(printed)

            // A request continuing a caller's trace, with a query and a path that must not be exported.
            let health = try await client.send(
                "GET", "/health?code=query-secret-1234", headers: ["traceparent": Self.traceparent])
            #expect(health.status == 200)
            let healthRequestID = try #require(health.header("X-Request-Id"))
            let setup = try await client.send("GET", "/console/setup/path-secret-5678")
            #expect(setup.status >= 300)
            // A refused request writes a log line inside its span.
            let refused = try await client.send("GET", "/api/v1/operations/no-such-operation")
            #expect(refused.status == 401)
            let refusedRequestID = try #require(refused.header("X-Request-Id"))

            // An approval: its request span and, as a child, the PostgreSQL transaction it commits in.
            let activation = try await CLITests.admin(
                ["activation", "create", "--user", "alice"], environment: environment,
                as: CreateActivationResponse.self)
            let configuration = try SDKConfiguration(parsing: try #require(printed["SDK configuration"]))
            var device = TestDevice(client: client, configuration: configuration)
            try await device.activate(code: activation.activationCode)
            let operation = try await CLITests.admin(
                ["operation", "create", "--user", "alice", "--data", "A1*A100CZK", "--title", "Pay"],
                environment: environment, as: OperationInfo.self)
            let approved = try await device.authorizeOperation(id: operation.id, data: operation.data)
            #expect(approved.status == 200, "\(approved.text)")
            // A refused one (other data than the operation's): the transaction its counter and attempt commit in.
            let other = try await CLITests.admin(
                ["operation", "create", "--user", "alice", "--data", "A1*A200CZK", "--title", "Pay"],
                environment: environment, as: OperationInfo.self)
            let mismatch = try await device.authorizeOperation(id: other.id, data: "A1*A999CZK")
            #expect(mismatch.status == 400, "\(mismatch.text)")

            // A stop sends the spans not yet exported.
            server.terminate()
            server.waitUntilExit()
            let exports = collector.exports.withLock { $0 }
            #expect(!exports.isEmpty && exports.allSatisfy { $0.type.hasPrefix("application/json") })
            let everything = exports.map { String(decoding: $0.body, as: UTF8.self) }.joined()
            #expect(!everything.contains("query-secret-1234") && !everything.contains("path-secret-5678"))
            #expect(everything.contains(#""assent""#), "the service's name")
            let spans = try exports.flatMap {
                try JSONDecoder().decode(Export.self, from: $0.body).resourceSpans.flatMap(\.scopeSpans).flatMap(
                    \.spans)
            }

            let healthSpan = try #require(spans.first { $0.name == "GET /health" }, "\(spans.map(\.name))")
            #expect(Span.hex(healthSpan.traceId) == Self.traceID)
            #expect(Span.hex(healthSpan.parentSpanId) == Self.parentID)
            #expect(healthSpan.attribute("http.response.status_code") == "200")
            #expect(healthSpan.attribute("assent.request.id") == healthRequestID)
            #expect(healthSpan.attribute("http.route") == "/health")

            let approvals = spans.filter { $0.name == "POST /api/auth/token/app/operation/authorize" }
            #expect(approvals.count == 2, "\(spans.map(\.name))")
            #expect(
                approvals.allSatisfy { Span.hex($0.parentSpanId) == nil },
                "a request without traceparent starts a trace")
            let children = { (approval: Span) in
                spans.filter { $0.parentSpanId == approval.spanId && $0.traceId == approval.traceId }.map(\.name)
                    .sorted()
            }
            // The approval: its read and its write, no transaction.
            #expect(approvals.contains { children($0) == ["db approval read", "db approval write"] })
            // The refusal: the direct path's read, then the commit.
            #expect(approvals.contains { children($0) == ["db approval read", "db transaction"] })
            #expect(
                spans.filter { $0.name.hasPrefix("db ") }.allSatisfy { $0.attribute("db.system.name") == "postgresql" })

            // The refusal's log line names its span.
            struct Line: Decodable {
                var msg: String
                var requestID: String?
                var traceID: String?
                var spanID: String?
                enum CodingKeys: String, CodingKey {
                    case msg
                    case requestID = "request.id"
                    case traceID = "trace_id"
                    case spanID = "span_id"
                }
            }
            let lines = try String(contentsOf: work.appendingPathComponent("serve.err"), encoding: .utf8)
                .split(separator: "\n").compactMap { try? JSONDecoder().decode(Line.self, from: Data($0.utf8)) }
            let refusal = try #require(
                lines.first { $0.msg == "request refused" && $0.requestID == refusedRequestID }, "\(lines.map(\.msg))")
            let refusedSpan = try #require(spans.first { $0.attribute("assent.request.id") == refusedRequestID })
            #expect(refusedSpan.name == "GET /api/v1/operations/{id}")
            #expect(refusal.traceID == Span.hex(refusedSpan.traceId))
            #expect(refusal.spanID == Span.hex(refusedSpan.spanId))
            #expect(lines.contains { $0.msg == "stopped" && $0.traceID == nil })
        }
    }

    @Test("OTLP/protobuf with a sampling ratio of 0: only a trace a caller sampled is exported, and no path")
    func protobufSampled() async throws {
        let collector = Collector()
        let work = try ConfigFileTests.folder()
        try await collector.run { endpoint in
            let (server, printed) = try await CLITests.serve(
                work,
                arguments: [
                    "--otlp-endpoint", endpoint.absoluteString, "--trace-sample-ratio", "0", "--drain-seconds", "0",
                ])
            defer { if server.isRunning { server.terminate() } }
            let client = HTTPClient(base: try #require(printed["url"].flatMap(URL.init(string:))))
            for _ in 0..<5 { #expect(try await client.send("GET", "/health/ready").status == 200) }
            let sampled = try await client.send(
                "GET", "/health?code=query-secret-1234", headers: ["traceparent": Self.traceparent])
            #expect(sampled.status == 200)
            server.terminate()
            server.waitUntilExit()
            let exports = collector.exports.withLock { $0 }
            #expect(exports.count >= 1 && exports.allSatisfy { $0.type == "application/x-protobuf" })
            let body = exports.reduce(Data()) { $0 + $1.body }
            // The caller's trace id as its 16 bytes, the span's name, and nothing of the unsampled requests.
            let traceBytes = Data(
                stride(from: 0, to: Self.traceID.count, by: 2).compactMap {
                    UInt8(Self.traceID.dropFirst($0).prefix(2), radix: 16)
                })
            #expect(traceBytes.count == 16 && body.range(of: traceBytes) != nil)
            #expect(body.range(of: Data("GET /health".utf8)) != nil)
            #expect(body.range(of: Data("/health/ready".utf8)) == nil, "an unsampled request was exported")
            #expect(body.range(of: Data("query-secret-1234".utf8)) == nil)
        }
    }

    @Test("Tracing settings that cannot work are refused, each with a sentence")
    func refusedSettings() async throws {
        let work = try ConfigFileTests.folder()
        let result = try await CLITests.run([
            "serve", "--data-dir", work.path, "--otlp-endpoint", "ftp://collector", "--otlp-protocol", "grpc",
            "--trace-sample-ratio", "2",
        ])
        #expect(result.status != 0)
        for sentence in [
            "--otlp-endpoint must be an http(s) URL", "--otlp-protocol is http/protobuf or http/json.",
            "--trace-sample-ratio is a number from 0 to 1.",
        ] {
            #expect(result.errors.contains(sentence), "\(result.errors)")
        }
    }
}
