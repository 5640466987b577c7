import AssentModel
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// Each request's id: answered in `X-Request-Id`, taken from a trusted proxy only, and on every log line written
/// while serving it — a service's lines too.
@Suite("Request ids in responses and logs")
struct RequestIDTests {
    @Test("An id a proxy sends may stand only when it is short and plain")
    func wellFormed() {
        for id in ["0f1e2d3c4b5a69788796a5b4c3d2e1f0", "req-1", "a.b_c:d", String(repeating: "x", count: 64)] {
            #expect(RequestID.isWellFormed(id), "\(id)")
        }
        for id in ["", String(repeating: "x", count: 65), "a b", "a\"b", "a\nb", "é", "{\"level\":\"error\"}"] {
            #expect(!RequestID.isWellFormed(id), "\(id)")
        }
    }

    @Test("Every answer names its id; a trusted proxy's id is kept, anyone else's replaced")
    func overHTTP() async throws {
        for trusted in [true, false] {
            var configured = try await TestServer.make(.sqlite)
            if trusted {
                configured.environment.trustedProxies = TrustedProxies([try IPNetwork(parsing: "127.0.0.1")])
            }
            let server = configured
            defer { Task { await server.shutdown() } }
            try await server.live { client in
                let first = try await client.send("GET", "/health")
                let second = try await client.send("GET", "/api/v1/operations/unknown")
                let ids = [first.header("X-Request-Id"), second.header("X-Request-Id")].compactMap { $0 }
                #expect(ids.count == 2 && Set(ids).count == 2, "\(ids)")
                #expect(ids.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) }, "\(ids)")
                #expect(second.status == 401, "refusals carry it too")
                let sent = try await client.send("GET", "/health", headers: ["X-Request-Id": "nginx-5f3a9c"])
                #expect((sent.header("X-Request-Id") == "nginx-5f3a9c") == trusted, "\(trusted)")
                let forged = try await client.send(
                    "GET", "/health", headers: ["X-Request-Id": String(repeating: "a", count: 65)])
                #expect(forged.header("X-Request-Id")?.count == 32)
            }
        }
    }

    @Test("A served request's log lines carry its id, the service's as well as the refusal's")
    func inTheLogs() async throws {
        let work = try ConfigFileTests.folder()
        let (server, printed) = try await CLITests.serve(work, arguments: ["--log-level", "info"])
        defer { if server.isRunning { server.terminate() } }
        let environment = try CLITests.connection(printed)
        let address = try #require(printed["url"])
        let client = HTTPClient(base: try #require(URL(string: address)))
        let key = try #require(environment["ASSENT_API_KEY"])
        _ = try await CLITests.admin(
            ["activation", "create", "--user", "alice"], environment: environment, as: CreateActivationResponse.self)
        let operation = try await CLITests.admin(
            ["operation", "create", "--user", "alice", "--data", "A1*A100CZK", "--title", "Pay"],
            environment: environment, as: OperationInfo.self)
        let canceled = try await client.send(
            "POST", "/api/v1/operations/\(operation.id)/cancel", headers: ["Authorization": "Bearer \(key)"])
        #expect(canceled.status == 200, "\(canceled.text)")
        let refused = try await client.send("GET", "/api/v1/operations/\(operation.id)")
        #expect(refused.status == 401)
        let cancelID = try #require(canceled.header("X-Request-Id"))
        let refusedID = try #require(refused.header("X-Request-Id"))
        server.terminate()
        server.waitUntilExit()
        struct Line: Decodable {
            var msg: String
            var requestID: String?
            enum CodingKeys: String, CodingKey {
                case msg
                case requestID = "request.id"
            }
        }
        let lines = try String(contentsOf: work.appendingPathComponent("serve.err"), encoding: .utf8)
            .split(separator: "\n").compactMap { try? JSONDecoder().decode(Line.self, from: Data($0.utf8)) }
        // The service's own line (OperationService logs with its logger, not the request's).
        #expect(lines.contains { $0.msg == "operation canceled" && $0.requestID == cancelID }, "\(lines)")
        #expect(lines.contains { $0.msg == "request refused" && $0.requestID == refusedID }, "\(lines)")
        // Lines outside a request carry none.
        #expect(lines.contains { $0.msg == "stopped" && $0.requestID == nil })
    }
}
