import AssentModel
import AssentTesting
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// Every route of the signed-in console behind its session middleware and its scope group, request by request: a
/// browser without a session goes to the sign-in page, a form without the session's token is refused before anything
/// happens, and each role reaches exactly the routes its scopes allow (the table is the console's contract, written
/// here apart from the code that registers the routes).
@Suite("The console's routes: the session, the form token and the role's scopes")
struct ConsoleRouteTests {
    /// Each route and the scope it needs (`nil`: any signed-in operator).
    static let routes: [(HTTPRequest.Method, String, APIScope?)] = [
        (.get, "/console", nil), (.get, "/console/me", nil), (.post, "/console/me/password", nil),
        (.post, "/console/switch-application", nil), (.post, "/console/application", .applicationWrite),
        (.get, "/console/audit", .auditRead),
        (.get, "/console/users", .activationsRead), (.get, "/console/users/alice", .activationsRead),
        (.get, "/console/activations/none", .activationsRead), (.post, "/console/activations", .activationsWrite),
        (.get, "/console/activations/none/qr.png", .activationsWrite),
        (.get, "/console/activations/none/qr.svg", .activationsWrite),
        (.post, "/console/activations/none/commit", .activationsWrite),
        (.post, "/console/activations/none/block", .activationsWrite),
        (.post, "/console/users/alice/unlock", .tfaWrite),
        (.post, "/console/users/alice/factors/none/remove", .tfaWrite),
        (.post, "/console/users/alice/browsers/none/forget", .tfaWrite),
        (.post, "/console/users/alice/disable", .tfaWrite), (.post, "/console/users/alice/sign-out", .tfaWrite),
        (.get, "/console/clients", .clientsRead), (.get, "/console/application", .applicationRead),
        (.post, "/console/applications", .applicationWrite),
        (.post, "/console/application/versions", .applicationWrite),
        (.post, "/console/application/versions/none/unsupport", .applicationWrite),
        (.post, "/console/application/versions/none/support", .applicationWrite),
        (.post, "/console/application/language", .applicationWrite),
        (.post, "/console/application/webhook", .applicationWrite),
        (.post, "/console/application/webhook/remove", .applicationWrite),
        (.get, "/console/operations", .operationsRead), (.get, "/console/operations/none", .operationsRead),
        (.get, "/console/operations/none/proximity.png", .operationsRead),
        (.get, "/console/operations/new", .operationsWrite), (.post, "/console/operations", .operationsWrite),
        (.post, "/console/operations/none/cancel", .operationsWrite),
        (.post, "/console/operations/none/offline", .operationsWrite),
        (.post, "/console/operations/none/offline-verify", .operationsWrite),
        (.get, "/console/operators", .operatorsWrite), (.post, "/console/operators", .operatorsWrite),
        (.post, "/console/operators/nobody/disable", .operatorsWrite),
        (.post, "/console/me/passkeys/options", nil), (.post, "/console/me/passkeys", nil),
        (.post, "/console/me/passkeys/none/remove", nil), (.post, "/console/me/phone", nil),
        (.post, "/console/me/phone/check", nil), (.post, "/console/me/phone/unlink", nil),
    ]

    @Test("Signed out, a forged form, each role against each route's scope")
    func routes() async throws {
        let server = try await TestServer.withOperatorConsole(.sqlite)
        defer { Task { await server.shutdown() } }
        let roles: [OperatorRole] = [.auditor, .support, .operator, .admin]
        var made: [OperatorRole: String] = [:]
        for role in roles {
            made[role] = try await OperatorAccountTests.setUpOperator(server, "\(role.rawValue)-one", role: role).secret
        }
        let secrets = made
        let clock = server.clock
        try await Application(router: server.router).test(.router) { client in
            /// Signs the role's operator in: the session's cookie and its form token.
            func signIn(_ role: OperatorRole) async throws -> (cookie: String, csrf: String) {
                clock.advance(by: 30)
                let answer = try await PageAnswer.consoleSignIn(
                    client,
                    [
                        "name": "\(role.rawValue)-one", "password": "a long enough password",
                        "code": try OperatorAccountTests.code(try #require(secrets[role]), at: clock.now),
                    ])
                let session = try #require(answer.consoleSession)
                let me = try await PageAnswer.fetch(client, .get, "/console/me", cookie: session)
                return (session, try #require(me.field("csrf")))
            }

            // No session: every route leads to the sign-in page, the live stream too.
            for (method, path, _) in Self.routes + [(.get, "/console/live", nil)] {
                let answer = try await PageAnswer.fetch(client, method, path, form: method == .post ? [:] : nil)
                #expect(answer.status == .seeOther && answer.location == "/console/sign-in", "\(method) \(path)")
            }

            let admin = try await signIn(.admin)
            // A form without the session's token: refused before the route is even looked at.
            for (method, path, _) in Self.routes where method == .post {
                let answer = try await PageAnswer.fetch(
                    client, method, path, cookie: admin.cookie, form: ["csrf": "forged", "confirm": "yes"])
                #expect(answer.status == .forbidden, "\(path)")
                #expect(answer.body.contains("This form is stale or did not come from this console"), "\(path)")
            }

            for role in roles {
                let session = try await signIn(role)
                for (method, path, scope) in Self.routes {
                    // Each form without `confirm`: a dangerous one asks first, a harmless one is refused for its
                    // missing fields; neither changes anything.
                    let answer = try await PageAnswer.fetch(
                        client, method, path, cookie: session.cookie,
                        form: method == .post ? ["csrf": session.csrf] : nil)
                    let allowed = scope.map { role.scopes.contains(.all) || role.scopes.contains($0) } ?? true
                    if allowed {
                        #expect(!answer.body.contains("<h1>Not allowed</h1>"), "\(role) \(method) \(path)")
                        #expect(answer.status != .forbidden, "\(role) \(method) \(path): \(answer.status)")
                    } else {
                        #expect(answer.status == .forbidden, "\(role) \(method) \(path): \(answer.status)")
                        #expect(
                            answer.body.contains("it needs the scope \(scope?.rawValue ?? "")"),
                            "\(role) \(method) \(path)")
                    }
                }
            }
        }
    }
}
