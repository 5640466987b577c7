import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import AssentServerTesting

@Suite("Routes")
struct RouterTests {
    @Test("The OpenAPI document lists exactly the operator and device routes the router serves, each with its own id")
    func openAPIMatchesRoutes() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        let router = server.router
        let documentedPrefixes = ["/api/v1/", "/pa/v3/", "/api/auth/token/app/", "/api/push/", "/api/device/"]
        let served = Set(
            router.routes.map { "\($0.method.rawValue) \($0.path)" }.filter { route in
                documentedPrefixes.contains { route.contains(" \($0)") }
            })
        let app = Application(router: router)
        let documented = try await app.test(.router) { client in
            try await client.execute(uri: "/api/v1/openapi.json", method: .get) { response in
                #expect(response.status == .ok)
                let object = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView))
                let document = try #require(object as? [String: Any])
                #expect(document["openapi"] as? String == "3.1.0")
                let paths = try #require(document["paths"] as? [String: [String: Any]])
                // Operation ids name operations in links and generated clients: each must be unique.
                let ids = paths.values.flatMap {
                    $0.values.compactMap { ($0 as? [String: Any])?["operationId"] as? String }
                }
                #expect(ids.count == paths.values.reduce(0) { $0 + $1.count })
                #expect(Set(ids).count == ids.count, "\(Dictionary(grouping: ids) { $0 }.filter { $1.count > 1 }.keys)")
                return Set(paths.flatMap { path, operations in operations.keys.map { "\($0.uppercased()) \(path)" } })
            }
        }
        #expect(!served.isEmpty)
        #expect(documented == served)
    }

    @Test("Health and metrics answer without authentication")
    func healthAndMetrics() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        let app = Application(router: server.router)
        try await app.test(.router) { client in
            try await client.execute(uri: "/health", method: .get) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/health/ready", method: .get) { response in
                #expect(response.status == .ok)
                let answer = try JSONDecoder().decode([String: JSONValue].self, from: Data(buffer: response.body))
                #expect(
                    answer == [
                        "status": .string("UP"), "database": .string("UP"), "schema": .string("CURRENT"),
                        "draining": .bool(false),
                    ])
            }
            try await client.execute(uri: "/nowhere", method: .get) { response in
                #expect(response.status == .notFound)
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains("assent_http_requests_total"))
            }
        }
    }

    @Test("A known path with another method is 405 with Allow; list limits outside 1…1000 are 400")
    func methodsAndLimits() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        let app = Application(router: server.router)
        let key: HTTPFields = [.authorization: "Bearer \(server.apiKey)"]
        try await app.test(.router) { client in
            for (method, uri, allowed) in [
                (HTTPRequest.Method("TRACE")!, "/api/v1/audit", "GET"), (.post, "/health", "GET"),
                (.get, "/api/v1/operations/abc/cancel", "POST"), (.patch, "/api/v1/operations", "POST"),
                (.post, "/api/v1/activations/abc", "DELETE, GET"),
                (HTTPRequest.Method("TRACE")!, "/pa/v3/token/create", "POST"),
                (.get, "/api/auth/token/app/operation/list", "POST"),
            ] {
                try await client.execute(uri: uri, method: method, headers: key) { response in
                    #expect(response.status == .methodNotAllowed, "\(method) \(uri)")
                    #expect(response.headers[.allow] == allowed, "\(method) \(uri)")
                    // The Mobile Token API has its own, closed list of codes.
                    let code = uri.hasPrefix("/api/auth/") ? "ERROR_GENERIC" : "ERR_METHOD"
                    #expect(String(buffer: response.body).contains(code), "\(method) \(uri)")
                }
            }
            try await client.execute(uri: "/api/v1/nothing-here", method: .get, headers: key) { response in
                #expect(response.status == .notFound)
            }
            for limit in ["0", "1001", "null", "ten", "-5"] {
                for path in ["/api/v1/audit", "/api/v1/users/alice/operations"] {
                    try await client.execute(uri: "\(path)?limit=\(limit)", method: .get, headers: key) { response in
                        #expect(response.status == .badRequest, "\(path) limit=\(limit)")
                    }
                }
            }
            for limit in ["1", "1000"] {
                try await client.execute(uri: "/api/v1/audit?limit=\(limit)", method: .get, headers: key) { response in
                    #expect(response.status == .ok)
                }
            }
        }
    }
}
