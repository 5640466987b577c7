import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

@Suite("No lock-out: the last admin stays, nobody resets themselves out, strangers only slow an account down")
struct LockOutTests {
    /// Sets up admins `ada` and `bea` (besides the first admin, whose link is unused); returns the service.
    static func twoAdmins(_ server: TestServer) async throws -> OperatorService {
        for name in ["ada", "bea"] { _ = try await OperatorAccountTests.setUpOperator(server, name, role: .admin) }
        return Services(server.environment).operators
    }

    static func status(_ body: () async throws -> Void) async -> Int? {
        do {
            try await body()
            return nil
        } catch let error as AssentServerError {
            return error.status
        } catch {
            return -1
        }
    }

    @Test("The last enabled admin who can sign in is never disabled or reset; others are", arguments: Backend.all)
    func lastAdmin(backend: Backend) async throws {
        let server = try await TestServer.withOperatorConsole(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            // The first admin's link is unused: it can be reset (its link lost) with no other admin set up.
            let fresh = try await server.operatorSend(client, "POST", "/api/v1/operators/admin/reset")
            #expect(fresh.status == 200, "\(fresh.text)")
            let operators = try await Self.twoAdmins(server)
            #expect(try await server.operatorSend(client, "POST", "/api/v1/operators/ada/disable").status == 200)
            // Bea is the last: refused over the API with a sentence, and by the service (the CLI and console's).
            let last = try await server.operatorSend(client, "POST", "/api/v1/operators/bea/disable")
            #expect(last.status == 409 && last.text.contains("last enabled admin"), "\(last.text)")
            let reset = try await server.operatorSend(client, "POST", "/api/v1/operators/bea/reset")
            #expect(reset.status == 409 && reset.text.contains("last enabled admin"), "\(reset.text)")
            #expect(await Self.status { _ = try await operators.setDisabled("bea", true, actor: "test") } == 409)
            let bea = try #require(try await server.store.operatorRecord(name: "bea"))
            #expect(bea.disabledAt == nil && bea.isSetUp)
            // With Ada back, Bea can go; an operator who is no admin always can.
            #expect(try await server.operatorSend(client, "POST", "/api/v1/operators/ada/enable").status == 200)
            #expect(try await server.operatorSend(client, "POST", "/api/v1/operators/bea/disable").status == 200)
            _ = try await OperatorAccountTests.setUpOperator(server, "olga")
            #expect(try await server.operatorSend(client, "POST", "/api/v1/operators/olga/disable").status == 200)
        }
    }

    @Test(
        "Two admins disabling each other at once (from two processes on PostgreSQL): exactly one wins",
        arguments: Backend.all)
    func concurrentDisables(backend: Backend) async throws {
        let server = try await TestServer.withOperatorConsole(backend)
        defer { Task { await server.shutdown() } }
        // Several processes share PostgreSQL only; on SQLite one process serves, and its requests race.
        let other = backend == .postgres ? try await server.sibling() : server
        defer { if backend == .postgres { Task { await other.shutdown() } } }
        let here = try await Self.twoAdmins(server)
        let there = Services(other.environment).operators
        for round in 0..<10 {
            async let first = Self.status { _ = try await here.setDisabled("ada", true, actor: "operator:bea") }
            async let second = Self.status { _ = try await there.setDisabled("bea", true, actor: "operator:ada") }
            let outcomes = await [first, second]
            #expect(outcomes.filter { $0 == nil }.count == 1 && outcomes.contains(409), "round \(round): \(outcomes)")
            let enabled = try await server.store.operators().filter { $0.role == .admin && $0.disabledAt == nil }
            #expect(enabled.filter(\.isSetUp).count == 1, "round \(round)")
            for name in ["ada", "bea"] { _ = try await here.setDisabled(name, false, actor: "test") }
        }
    }

    @Test("A reset clears the linked phone; nobody resets their own account", arguments: Backend.all)
    func resetUnlinksAndSelf(backend: Backend) async throws {
        let server = try await TestServer.withOperatorConsole(backend)
        defer { Task { await server.shutdown() } }
        let operators = try await Self.twoAdmins(server)
        let ada = try #require(try await server.store.operatorRecord(name: "ada"))
        try await server.store.setOperatorPhone(operatorId: ada.id, activationId: "a-phone")
        #expect(try await server.store.operatorPhone(operatorId: ada.id) == "a-phone")
        #expect(await Self.status { _ = try await operators.reset("ada", actor: "operator:ada") } == 409)
        #expect(try await server.store.operatorRecord(name: "ada")?.isSetUp == true)
        #expect(await Self.status { _ = try await operators.reset("ada", actor: "operator:bea") } == nil)
        #expect(try await server.store.operatorPhone(operatorId: ada.id) == nil)
        let audit = try await server.store.auditEvents(AuditFilter(typePrefix: "operator.reset"), limit: 5)
        #expect(audit.first?.detail.contains("linked phone cleared") == true, "\(audit.map(\.detail))")
    }

    @Test(
        "The only admin is offered no new set-up link on their own row; one posted anyway is refused and they stay signed in"
    )
    func consoleSelfReset() async throws {
        let server = try await TestServer.withOperatorConsole(.sqlite)
        defer { Task { await server.shutdown() } }
        let (_, secret) = try await OperatorAccountTests.setUpOperator(server, "ada", role: .admin)
        try await server.live { client in
            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("console/lock-out"))
            defer { Task { await browser.quit() } }
            let origin = client.base.absoluteString
            server.clock.advance(by: 30)
            try await browser.open("\(origin)/console/sign-in")
            try await browser.type("#name", "ada")
            try await browser.type("#password", "a long enough password")
            try await browser.type("#code", try OperatorAccountTests.code(secret, at: server.environment.now()))
            try await browser.click("#operator-submit")
            try await browser.expectText("h1", "Dashboard")
            try await browser.open("\(origin)/console/operators")
            try await browser.expectText("tr[data-operator=ada]", containing: "active")
            // Her own row offers neither Disable nor a new link.
            #expect(try await browser.exists("tr[data-operator=ada] form") == false)
            // A form made by hand (an old page, a crafted post) is refused with a sentence, not obeyed.
            _ = try await browser.execute(
                """
                const form = document.createElement('form');
                form.method = 'post';
                form.action = '/console/operators/ada/reset';
                for (const [name, value] of [['csrf', document.querySelector('input[name=csrf]').value],
                                             ['confirm', 'yes']]) {
                    const input = document.createElement('input');
                    input.type = 'hidden'; input.name = name; input.value = value;
                    form.appendChild(input);
                }
                document.body.appendChild(form);
                form.submit();
                """)
            try await browser.expectText("#notice", containing: "You cannot give yourself a new set-up link")
            try await browser.screenshot("01-self-reset-refused")
            try await browser.expectPhoneLayout("01-self-reset-refused-phone")
            // Still signed in, still set up.
            try await browser.open("\(origin)/console")
            try await browser.expectText("h1", "Dashboard")
            #expect(try await server.store.operatorRecord(name: "ada")?.isSetUp == true)
        }
    }
}
