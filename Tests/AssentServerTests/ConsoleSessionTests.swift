import AssentTesting
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// How long a console session lasts: the idle timeout counts from the operator's last page or action, and no session
/// outlives its longest life however busy the operator is; the cookie lives that long. Request by request, with the
/// server's clock moved on.
@Suite("Console sessions: idle timeout and longest session")
struct ConsoleSessionTests {
    @Test(
        "Pages keep a session alive; ten idle minutes end it; a busy one ends thirty minutes after signing in",
        arguments: Backend.all)
    func lifetimes(_ backend: Backend) async throws {
        var configured = try await TestServer.withOperatorConsole(backend)
        var lifetimes = ConsoleSessionSettings()
        (lifetimes.idleTimeout, lifetimes.maxLifetime) = (600, 1800)
        configured.environment.consoleSessions = lifetimes
        let server = configured
        defer { Task { await server.shutdown() } }
        let secret = try await OperatorAccountTests.setUpOperator(server, "olga").secret
        let (clock, environment) = (server.clock, server.environment)
        try await Application(router: server.router).test(.router) { client in
            /// Signs olga in; the session's cookie.
            func signIn() async throws -> String {
                clock.advance(by: 30)
                let answer = try await PageAnswer.consoleSignIn(
                    client,
                    [
                        "name": "olga", "password": "a long enough password",
                        "code": try OperatorAccountTests.code(secret, at: clock.now),
                    ])
                #expect(answer.status == .seeOther && answer.location == "/console")
                let cookies = answer.headers[values: .setCookie].filter { $0.hasPrefix("__Host-assent-console=") }
                guard let cookie = cookies.first else { throw TestFailure("The sign-in set no session cookie.") }
                // The browser keeps it as long as the longest session; the server ends it sooner when idle.
                #expect(cookie.hasSuffix("; Path=/; Max-Age=1800; Secure; HttpOnly; SameSite=Strict"), "\(cookie)")
                return String(cookie.prefix { $0 != ";" })
            }
            /// Whether the dashboard opens with the cookie (else the sign-in page, saying the session ended).
            func stillSignedIn(_ cookie: String) async throws -> Bool {
                let page = try await PageAnswer.fetch(client, .get, "/console", cookie: cookie)
                if page.status == .ok, page.body.contains("<h1>Dashboard</h1>") { return true }
                #expect(page.status == .seeOther && page.location == "/console/sign-in?expired=1")
                return false
            }

            // Each page keeps it: 500 s, then 500 s more (past the first 600), are fine.
            let busy = try await signIn()
            for _ in 0..<2 {
                clock.advance(by: 500)
                #expect(try await stillSignedIn(busy))
            }
            // A visit that does not touch the session (the live stream's: the page, not the person) keeps nothing
            // alive.
            clock.advance(by: 500)
            var head = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1", path: "/console/live")
            head.headerFields[.cookie] = busy
            let untouched = try await ConsolePages(Services(environment), environment).admit(
                Request(head: head, body: RequestBody(buffer: ByteBuffer())), touches: false)
            guard case .admitted = untouched else {
                Issue.record("the live stream's visit was refused")
                return
            }
            // Ten minutes and a second after the last page: ended.
            clock.advance(by: 101)
            #expect(try await stillSignedIn(busy) == false)

            // However busy, thirty minutes after signing in it ends.
            let active = try await signIn()
            for _ in 0..<3 {
                clock.advance(by: 550)
                #expect(try await stillSignedIn(active))
            }
            clock.advance(by: 150)
            #expect(try await stillSignedIn(active) == false)
        }
    }

    @Test("The defaults; lifetimes out of range, or an idle timeout longer than the longest session, are refused")
    func limits() throws {
        var settings = ConsoleSessionSettings()
        #expect(settings.idleTimeout == 1800 && settings.maxLifetime == 43_200)
        try settings.validate()
        for (idle, longest) in [(59, 43_200), (86_401, 604_800), (1800, 299), (1800, 604_801), (3600, 1800)] {
            (settings.idleTimeout, settings.maxLifetime) = (idle, longest)
            #expect(throws: AssentServerError.self) { try settings.validate() }
        }
    }
}
