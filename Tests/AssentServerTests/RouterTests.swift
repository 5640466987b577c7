import AssentServer
import AssentTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@Suite("Routes")
struct RouterTests {
    @Test("The OpenAPI document lists exactly the operator routes the router serves")
    func openAPIMatchesRoutes() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        let router = server.router
        let served = Set(
            router.routes.map { "\($0.method.rawValue) \($0.path)" }.filter { $0.contains("/api/v1/") })
        let app = Application(router: router)
        let documented = try await app.test(.router) { client in
            try await client.execute(uri: "/api/v1/openapi.json", method: .get) { response in
                #expect(response.status == .ok)
                let object = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView))
                let document = try #require(object as? [String: Any])
                #expect(document["openapi"] as? String == "3.1.0")
                let paths = try #require(document["paths"] as? [String: [String: Any]])
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
            try await client.execute(uri: "/nowhere", method: .get) { response in
                #expect(response.status == .notFound)
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains("assent_http_requests_total"))
            }
        }
    }
}
