import AssentModel
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// Each application's own rate limits over the server's: a tighter limit of one application holds for its accounts
/// only; an unknown name or a malformed value is refused; going back to the server's undoes it.
@Suite("Rate limits per application")
struct ApplicationRateLimitTests {
    @Test(
        "An application's own login limit holds for its accounts, not the other application's; refused names and values; back to the server's",
        arguments: Backend.all)
    func perApplication(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            func send(_ method: String, _ path: String, _ body: String = "") async throws -> HTTPClient.Response {
                try await server.operatorSend(client, method, path, body)
            }
            let business = try await server.createApplication(client)
            let q = "?application=\(business.applicationId)"
            let path = "/api/v1/applications/\(business.applicationId)/rate-limits"

            // Every application-level limit, the server's until set.
            let initial = try await server.operatorCall(client, "GET", path, as: ApplicationRateLimitsInfo.self)
            let loginUser = try #require(initial.limits.first { $0.name == "login-user" })
            #expect(loginUser.limit == 10 && loginUser.window == 900 && loginUser.source == "server")
            #expect(!initial.limits.contains { $0.name == "operator-key-failures" })

            let unknown = try await send("PATCH", path, #"{"limits":{"operator-key-failures":"1/60"}}"#)
            #expect(unknown.status == 400 && unknown.text.contains("is not"), "\(unknown.text)")
            let malformed = try await send("PATCH", path, #"{"limits":{"login-user":"five per minute"}}"#)
            #expect(malformed.status == 400 && malformed.errorMessage?.contains("LIMIT/SECONDS") == true)
            let set = try await server.operatorCall(
                client, "PATCH", path,
                body: try OperatorJSON.encoder().encode(
                    UpdateApplicationRateLimitsRequest(limits: ["login-user-address": "2/300"])),
                as: ApplicationRateLimitsInfo.self)
            #expect(
                set.limits.first { $0.name == "login-user-address" }.map {
                    "\($0.limit)/\($0.window) \($0.source)"
                } == "2/300 application")

            // The same user id in both applications: two wrong passwords from this address refuse the second's
            // account only (from this address).
            for query in ["", q] {
                _ = try await server.operatorCall(
                    client, "POST", "/api/v1/tfa/accounts\(query)",
                    body: try OperatorJSON.encoder().encode(
                        CreateTFAAccountRequest(userId: "carol", password: "correct horse battery")),
                    as: TFAAccountInfo.self)
            }
            let tfa = TFAClient(server: server, client: client)
            func login(_ application: String?, _ password: String) async throws -> Int {
                try await tfa.post(
                    "/api/tfa/login",
                    TFALoginRequest(application: application, userId: "carol", password: password)
                ).status
            }
            for _ in 0..<2 { #expect(try await login(business.applicationId, "guess guess") == 401) }
            #expect(try await login(business.applicationId, "correct horse battery") == 429)
            for _ in 0..<3 { #expect(try await login(nil, "guess guess") == 401) }
            #expect(try await login(nil, "correct horse battery") != 429)

            // Back to the server's: five failures again before the refusal.
            let back = try await server.operatorCall(
                client, "PATCH", path, body: Data(#"{"limits":{"login-user-address":""}}"#.utf8),
                as: ApplicationRateLimitsInfo.self)
            #expect(back.limits.first { $0.name == "login-user-address" }?.source == "server")
            #expect(try await login(business.applicationId, "correct horse battery") != 429)
            let audit = try await server.store.auditEvents(
                AuditFilter(typePrefix: "application.rate_limits_changed"), limit: 5)
            #expect(audit.count == 2 && audit.last?.detail.contains("login-user-address=2/300") == true)
        }
    }
}
