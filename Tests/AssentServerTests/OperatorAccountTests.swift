import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// Operator accounts: named people with a role, a password and Assent's own TOTP, set up through a one-time link.
@Suite("Operator accounts")
struct OperatorAccountTests {
    /// The current TOTP code of a set-up page's key (`secret` as the page shows it, in groups).
    static func code(_ secret: String, at date: Date) throws -> String {
        let key = try Base32.decode(secret.filter { !$0.isWhitespace })
        return try TOTP(secret: key).code(at: date)
    }

    /// The secret of an operator's open set-up link, through the service.
    static func secret(_ server: TestServer, link: String) async throws -> String {
        let token = try #require(URLComponents(string: link)?.queryItems?.first { $0.name == "t" }?.value)
        let (_, uri) = try #require(try await Services(server.environment).operators.setup(token: token))
        return try #require(URLComponents(string: uri)?.queryItems?.first { $0.name == "secret" }?.value)
    }

    @Test(
        "Create, list, disable, enable and reset through the operator API; set-up and sign-in need the password and a fresh code",
        arguments: Backend.all)
    func lifecycle(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            func send(_ method: String, _ path: String, _ body: String = "") async throws -> HTTPClient.Response {
                try await server.operatorSend(client, method, path, body)
            }
            // The first start made the first admin, waiting for its set-up.
            let first = try await server.operatorCall(client, "GET", "/api/v1/operators", as: OperatorList.self)
            #expect(first.operators.map(\.name) == ["admin"] && first.operators.first?.state == "SETUP_PENDING")
            #expect(first.operators.first?.scopes == ["*"])

            let created = try await server.operatorCall(
                client, "POST", "/api/v1/operators",
                body: try OperatorJSON.encoder().encode(CreateOperatorRequest(name: "olga", role: "operator")),
                as: OperatorSetup.self)
            #expect(created.operator.role == "operator" && created.operator.state == "SETUP_PENDING")
            #expect(
                created.operator.scopes.contains("operations:write") && !created.operator.scopes.contains("audit:read"))
            #expect(created.setupLink.hasPrefix("\(server.environment.openID.base)/console/setup?t="))
            // Refusals with a code and a sentence.
            let duplicate = try await send("POST", "/api/v1/operators", #"{"name":"olga","role":"auditor"}"#)
            #expect(duplicate.status == 409 && duplicate.text.contains("already named olga"))
            let badRole = try await send("POST", "/api/v1/operators", #"{"name":"x","role":"root"}"#)
            #expect(badRole.status == 400 && badRole.text.contains("admin, operator, auditor, support"))
            let badName = try await send("POST", "/api/v1/operators", #"{"name":"two words","role":"auditor"}"#)
            #expect(badName.status == 400)
            let badApplication = try await send(
                "POST", "/api/v1/operators", #"{"name":"y","role":"auditor","applications":["nope"]}"#)
            #expect(badApplication.status == 404 && badApplication.text.contains("No application has the id nope"))

            // Set-up: a password of 12 or more and the current code of the key shown.
            let operators = Services(server.environment).operators
            let token = try #require(URLComponents(string: created.setupLink)?.queryItems?.first?.value)
            let secret = try await Self.secret(server, link: created.setupLink)
            let now = server.environment.now()
            await #expect(throws: AssentServerError.self) {
                try await operators.completeSetup(token: token, password: "short", code: try Self.code(secret, at: now))
            }
            await #expect(throws: AssentServerError.self) {
                try await operators.completeSetup(token: token, password: "a long enough password", code: "000000")
            }
            let setUp = try await operators.completeSetup(
                token: token, password: "a long enough password", code: try Self.code(secret, at: now))
            #expect(setUp.isSetUp)
            // The link works once.
            #expect(try await operators.setup(token: token) == nil)

            // Sign-in: the code of the set-up's time step is spent; the next one works, once.
            #expect(
                try await operators.signIn(
                    name: "olga", password: "a long enough password", code: try Self.code(secret, at: now)) == nil)
            server.clock.advance(by: 30)
            let later = server.environment.now()
            let code = try Self.code(secret, at: later)
            #expect(try await operators.signIn(name: "olga", password: "wrong password!!", code: code) == nil)
            #expect(try await operators.signIn(name: "olga", password: "a long enough password", code: code) != nil)
            #expect(try await operators.signIn(name: "olga", password: "a long enough password", code: code) == nil)
            #expect(try await operators.signIn(name: "nobody", password: "a long enough password", code: code) == nil)

            // Disabled: no sign-in; enabled again: yes.
            let disabled = try await server.operatorCall(
                client, "POST", "/api/v1/operators/olga/disable", as: OperatorInfo.self)
            #expect(disabled.state == "DISABLED")
            server.clock.advance(by: 30)
            #expect(
                try await operators.signIn(
                    name: "olga", password: "a long enough password",
                    code: try Self.code(secret, at: server.environment.now())) == nil)
            #expect(
                try await server.operatorCall(client, "POST", "/api/v1/operators/olga/enable", as: OperatorInfo.self)
                    .state == "ACTIVE")
            #expect(
                try await operators.signIn(
                    name: "olga", password: "a long enough password",
                    code: try Self.code(secret, at: server.environment.now())) != nil)

            // Reset: a new link and key; the old password and key stop working at once.
            let reset = try await server.operatorCall(
                client, "POST", "/api/v1/operators/olga/reset", as: OperatorSetup.self)
            #expect(reset.operator.state == "SETUP_PENDING" && reset.setupLink != created.setupLink)
            let newSecret = try await Self.secret(server, link: reset.setupLink)
            #expect(newSecret != secret)
            server.clock.advance(by: 30)
            #expect(
                try await operators.signIn(
                    name: "olga", password: "a long enough password",
                    code: try Self.code(secret, at: server.environment.now())) == nil)
            #expect(try await send("POST", "/api/v1/operators/nobody/reset").status == 404)

            // Only a key with operators:write manages them.
            let limited = try await Services(server.environment).apiKeys.create(
                name: "reader", scopes: [.auditRead], actor: "test")
            let refused = try await client.send(
                "GET", "/api/v1/operators", headers: ["Authorization": "Bearer \(limited.key)"])
            #expect(refused.status == 403)
            let audit = try await server.store.auditEvents(AuditFilter(typePrefix: "operator."), limit: 20)
            #expect(
                Set(audit.map(\.type)).isSuperset(of: [
                    "operator.created", "operator.set_up", "operator.disabled", "operator.enabled", "operator.reset",
                ]))
            #expect(audit.contains { $0.type == "operator.created" && $0.actor == "key:bootstrap" })
        }
    }

    @Test(
        "The console: set up with the link, sign in with password and TOTP; an auditor reads the audit and is refused every change; actions name the operator"
    )
    func console() async throws {
        let server = try await TestServer.withOperatorConsole(.sqlite)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("console/operators"))
            defer { Task { await browser.quit() } }
            let origin = client.base.absoluteString
            func create(_ name: String, _ role: String) async throws -> OperatorSetup {
                try await server.operatorCall(
                    client, "POST", "/api/v1/operators",
                    body: try OperatorJSON.encoder().encode(CreateOperatorRequest(name: name, role: role)),
                    as: OperatorSetup.self)
            }
            /// Sets up an operator in the browser; returns the key the page showed.
            func setUp(_ setup: OperatorSetup, _ shot: String? = nil) async throws -> String {
                try await browser.open(setup.setupLink)
                try await browser.expectText("h1", "Set up your console account")
                try await browser.expectText("#setup-name", setup.operator.name)
                let secret = try await browser.text("#secret")
                if let shot {
                    try await browser.screenshot(shot)
                    try await browser.expectPhoneLayout("\(shot)-phone")
                    try await browser.resize(Browser.desktop)
                }
                try await browser.type("#password", "a long enough password")
                try await browser.type("#confirm", "a long enough password")
                try await browser.type("#code", try Self.code(secret, at: server.environment.now()))
                try await browser.click("#submit")
                try await browser.expectText("h1", "Dashboard")
                return secret
            }
            /// Signs in with the code of now; returns when that was (its time step is spent then).
            @discardableResult
            func signIn(_ name: String, _ secret: String) async throws -> Date {
                server.clock.advance(by: 30)
                try await browser.open("\(origin)/console/sign-in")
                try await browser.type("#name", name)
                try await browser.type("#password", "a long enough password")
                let at = server.environment.now()
                try await browser.type("#code", try Self.code(secret, at: at))
                try await browser.click("#operator-submit")
                return at
            }

            // The sign-in page takes operator accounts only: no API key form on this server.
            try await browser.open("\(origin)/console")
            try await browser.expectText("h1", "Sign in to the console")
            #expect(try await browser.exists("#apiKey") == false)
            try await browser.screenshot("01-sign-in")

            // Set-up with the one-time link signs in; the header names the operator and role.
            let olga = try await setUp(try await create("olga", "operator"), "02-setup")
            try await browser.expectText("#operator", "olga (operator)")
            try await browser.screenshot("03-signed-in")
            // An action names her in the audit trail.
            try await browser.open("\(origin)/console/users")
            try await browser.type("#new-activation #user", "bob")
            try await browser.click("#new-activation #create")
            try await browser.element("#activation-qr")
            let created = try await server.store.auditEvents(AuditFilter(typePrefix: "activation.created"), limit: 5)
            #expect(created.first?.actor == "operator:olga", "\(created)")
            // She may not read the audit trail (an operator's role has no audit:read).
            try await browser.open("\(origin)/console/audit")
            try await browser.expectText("h1", "Not allowed")
            try await browser.signOutOfConsole()

            // Sign-in: a wrong code is refused; name, password and a fresh code sign in.
            try await browser.open("\(origin)/console/sign-in")
            try await browser.type("#name", "olga")
            try await browser.type("#password", "a long enough password")
            try await browser.type("#code", "000000")
            try await browser.click("#operator-submit")
            try await browser.expectText(".message", containing: "The name, password or code is not right")
            // The name stays in the form; the password and code do not.
            #expect(try await browser.attribute("#name", "value") == "olga")
            #expect(try await browser.attribute("#password", "value") ?? "" == "")
            let signedIn = try await signIn("olga", olga)
            try await browser.expectText("#operator", "olga (operator)")
            // Her own page: who she is, and a new password (the current one and a fresh code first).
            try await browser.click("#operator")
            try await browser.expectText("h1", "Your account")
            try await browser.expectText("#me-kind", "operator account, role operator")
            try await browser.expectText("#me-applications", "every one")
            try await browser.type("#current", "a long enough password")
            try await browser.type("#new", "another long password")
            try await browser.type("#confirm", "another long password")
            // The sign-in's code (its time step spent, even if the clock has passed into the next one since).
            try await browser.type("#code", try Self.code(olga, at: signedIn))
            try await browser.click("#change-password")
            // The code of this time step was spent at the sign-in: refused, nothing changed.
            try await browser.expectText(".message", containing: "The current password or the code is not right")
            server.clock.advance(by: 30)
            try await browser.type("#current", "a long enough password")
            try await browser.type("#new", "another long password")
            try await browser.type("#confirm", "another long password")
            try await browser.type("#code", try Self.code(olga, at: server.environment.now()))
            try await browser.click("#change-password")
            try await browser.expectText("#notice", "Password changed.")
            try await browser.screenshot("03b-own-page")
            try await browser.expectPhoneLayout("03b-own-page-phone")
            try await browser.resize(Browser.desktop)
            try await browser.signOutOfConsole()
            server.clock.advance(by: 30)
            try await browser.open("\(origin)/console/sign-in")
            try await browser.type("#name", "olga")
            try await browser.type("#password", "another long password")
            try await browser.type("#code", try Self.code(olga, at: server.environment.now()))
            try await browser.click("#operator-submit")
            try await browser.expectText("#operator", "olga (operator)")
            try await browser.signOutOfConsole()

            // An auditor reads the audit trail and is refused every change.
            let audrey = try await setUp(try await create("audrey", "auditor"))
            try await browser.expectText("#operator", "audrey (auditor)")
            try await browser.open("\(origin)/console/audit")
            try await browser.expectText("h1", "Audit log")
            try await browser.screenshot("04-auditor-audit")
            let activationId = try #require(
                try await server.store.activations(userId: "bob").first?.id)
            for (path, field) in [
                ("/console/application", "name"), ("/console/activations", "userId"),
                ("/console/operations", "userId"), ("/console/activations/\(activationId)/block", "reason"),
            ] {
                try await browser.execute(
                    """
                    var form = document.createElement("form");
                    form.method = "post"; form.action = "\(path)";
                    var csrf = document.createElement("input");
                    csrf.name = "csrf"; csrf.value = document.querySelector("input[name=csrf]").value;
                    var field = document.createElement("input");
                    field.name = "\(field)"; field.value = "x";
                    form.append(csrf, field); document.body.append(form); form.submit();
                    """)
                try await browser.expectText("h1", "Not allowed")
                try await browser.open("\(origin)/console/audit")
            }
            let audit = try await server.store.auditEvents(AuditFilter(typePrefix: "console."), limit: 20)
            #expect(audit.contains { $0.type == "console.signed_in" && $0.actor == "operator:audrey" })

            // Disabled while signed in: the next page asks to sign in again, and so does the sign-in.
            _ = try await server.operatorCall(client, "POST", "/api/v1/operators/audrey/disable", as: OperatorInfo.self)
            try await browser.open("\(origin)/console/audit")
            try await browser.expectText("h1", "Sign in to the console")
            try await signIn("audrey", audrey)
            try await browser.expectText(".message", containing: "The name, password or code is not right")
        }
    }

    @Test(
        "assent serve prints the first admin's set-up link; assent admin operator create, list, disable, enable, reset")
    func commandLine() async throws {
        try await CLITests.withServer("operators") { _, _, printed in
            let url = try #require(printed["url"])
            let link = try #require(printed["First admin's console set-up link (one-time, 24 hours)"])
            #expect(link.hasPrefix("\(url)/console/setup?t="))
            #expect(printed["Operator console"] == "\(url)/console (sign in with an operator account)")
            // Unnamed, the pages show this machine's name, and the start says how to set the organisation's.
            #expect(
                printed["Organisation name on the pages"]?.hasPrefix(
                    "\(ServerBootstrap.hostName(issuer: nil)) (change it")
                    == true, "\(printed)")
            let environment = try CLITests.connection(printed)
            let listed = try await CLITests.admin(
                ["operator", "list"], environment: environment, as: OperatorList.self)
            #expect(listed.operators.map(\.name) == ["admin"] && listed.operators.first?.role == "admin")
            let created = try await CLITests.admin(
                ["operator", "create", "audrey", "--role", "auditor"], environment: environment, as: OperatorSetup.self)
            #expect(created.operator.role == "auditor" && created.setupLink.hasPrefix("\(url)/console/setup?t="))
            let table = try await CLITests.run(["admin", "operator", "list"], environment: environment)
            #expect(table.output.contains("audrey") && table.output.contains("SETUP_PENDING"), "\(table.output)")
            let disabled = try await CLITests.admin(
                ["operator", "disable", "audrey"], environment: environment, as: OperatorInfo.self)
            #expect(disabled.state == "DISABLED")
            let enabled = try await CLITests.admin(
                ["operator", "enable", "audrey"], environment: environment, as: OperatorInfo.self)
            #expect(enabled.state == "SETUP_PENDING")
            let reset = try await CLITests.admin(
                ["operator", "reset", "audrey"], environment: environment, as: OperatorSetup.self)
            #expect(reset.setupLink != created.setupLink)
            let wrongRole = try await CLITests.run(
                ["admin", "operator", "create", "x", "--role", "root"], environment: environment)
            #expect(wrongRole.status == 2 && wrongRole.errors.contains("role is one of"), "\(wrongRole.errors)")
            // The set-up page opens for the printed link; the console's sign-in takes no API key here.
            let page = try await HTTPClient(base: try #require(URL(string: url))).send(
                "GET", String(link.dropFirst(url.count)))
            #expect(page.status == 200 && page.text.contains("Set up your console account"))
            let signIn = try await HTTPClient(base: try #require(URL(string: url))).send("GET", "/console/sign-in")
            #expect(!signIn.text.contains("apiKey"))
        }
    }

    /// Posts the console's sign-in form with `fields`, as a new browser does (the form's cookie and token), from a
    /// client a trusted proxy names as `address`. A sign-in that works ends on the dashboard (the redirect followed).
    static func postSignIn(_ server: HTTPClient, _ fields: [String: String], from address: String? = nil)
        async throws -> HTTPClient.Response
    {
        let client = HTTPClient(base: server.base)
        let forwarded = address.map { ["X-Forwarded-For": $0] } ?? [:]
        let page = try await client.send("GET", "/console/sign-in", headers: forwarded)
        let cookie = try #require(page.header("Set-Cookie")).prefix { $0 != ";" }
        let csrf = try #require(
            page.text.range(of: "name=\"csrf\" value=\"").map { page.text[$0.upperBound...].prefix { $0 != "\"" } })
        let body = (fields.merging(["csrf": String(csrf)]) { $1 }).map {
            "\($0.key)=\(FormEncoding.escape($0.value))"
        }.joined(separator: "&")
        return try await client.send(
            "POST", "/console/sign-in",
            headers: ["Cookie": String(cookie), "Content-Type": "application/x-www-form-urlencoded"].merging(
                forwarded
            ) { $1 },
            body: Data(body.utf8))
    }

    /// An operator `name` set up through the service with the password "a long enough password" and TOTP: the
    /// account and its TOTP secret (Base32).
    static func setUpOperator(_ server: TestServer, _ name: String, role: OperatorRole = .operator) async throws
        -> (OperatorRecord, secret: String)
    {
        let operators = Services(server.environment).operators
        let (_, link) = try await operators.create(name: name, role: role, applications: nil, actor: "test")
        let secret = try await Self.secret(server, link: link)
        let token = try #require(URLComponents(string: link)?.queryItems?.first { $0.name == "t" }?.value)
        let record = try await operators.completeSetup(
            token: token, password: "a long enough password", code: try Self.code(secret, at: server.clock.now))
        return (record, secret)
    }

    /// A server whose console takes operator accounts only, with `limits`; `behindProxy`: loopback is a trusted
    /// proxy, so each request's `X-Forwarded-For` is its client.
    static func signInServer(_ limits: RateLimits, behindProxy: Bool = false) async throws -> TestServer {
        var server = try await TestServer.withOperatorConsole(.sqlite, rateLimits: limits)
        if behindProxy { server.environment.trustedProxies = TrustedProxies([try IPNetwork(parsing: "127.0.0.1")]) }
        return server
    }

    @Test(
        "Every start prints a new set-up link for the first admin until an admin has set up; the one before stops working"
    )
    func firstAdminLinkOnEveryStart() async throws {
        let server = try await TestServer.withOperatorConsole(.sqlite)
        defer { Task { await server.shutdown() } }
        let base = server.environment.openID.base
        // The server started once already (it made `admin`); two more starts before anyone used a link.
        let second = try #require(try await ServerBootstrap.prepare(server.environment).firstAdminSetupPath)
        let third = try #require(try await ServerBootstrap.prepare(server.environment).firstAdminSetupPath)
        #expect(second != third && third.hasPrefix("/console/setup?t="))
        let app = Application(router: server.router)
        try await app.test(.router) { client in
            let stale = try await PageAnswer.fetch(client, .get, second)
            #expect(!stale.body.contains("Set up your console account"), "\(stale.body)")
            let fresh = try await PageAnswer.fetch(client, .get, third)
            #expect(fresh.status == .ok && fresh.body.contains("Set up your console account"))
        }
        // An admin limited to one application, set up, does not end it; the first admin setting up does.
        _ = try await Services(server.environment).operators.create(
            name: "limited", role: .admin, applications: [server.application.id], actor: "test")
        #expect(try await ServerBootstrap.prepare(server.environment).firstAdminSetupPath != nil)
        let link = base + (try #require(try await ServerBootstrap.prepare(server.environment).firstAdminSetupPath))
        let secret = try await Self.secret(server, link: link)
        let token = try #require(URLComponents(string: link)?.queryItems?.first { $0.name == "t" }?.value)
        _ = try await Services(server.environment).operators.completeSetup(
            token: token, password: "a long enough password", code: try Self.code(secret, at: server.clock.now))
        #expect(try await ServerBootstrap.prepare(server.environment).firstAdminSetupPath == nil)
        #expect(try await Services(server.environment).operators.named("admin").isSetUp)
    }

    @Test(
        "The first application is named for the organisation, else the public host or this machine, never a placeholder"
    )
    func organisationName() {
        #expect(ServerBootstrap.hostName(issuer: "https://auth.bank.example/", machine: "srv1") == "auth.bank.example")
        #expect(ServerBootstrap.hostName(issuer: nil, machine: "srv1.dc.bank.example") == "srv1")
        #expect(ServerBootstrap.hostName(issuer: nil, machine: "localhost") == "Assent")
        #expect(ServerBootstrap.hostName(issuer: nil, machine: "") == "Assent")
    }

    @Test("A reset, a disable and a password change end the operator's other console sessions; none comes back")
    func sessionsEnd() async throws {
        let server = try await TestServer.withOperatorConsole(.sqlite)
        defer { Task { await server.shutdown() } }
        let operators = Services(server.environment).operators
        let (_, firstSecret) = try await Self.setUpOperator(server, "bob")
        let app = Application(router: server.router)
        try await app.test(.router) { client in
            var secret = firstSecret
            /// Signs bob in, in a new browser: its console cookie.
            func signIn(password: String) async throws -> String {
                server.clock.advance(by: 30)
                let answer = try await PageAnswer.consoleSignIn(
                    client, ["name": "bob", "password": password, "code": try Self.code(secret, at: server.clock.now)])
                guard let session = answer.consoleSession else {
                    throw TestFailure("The sign-in set no session: \(answer.status) \(answer.body)")
                }
                return session
            }
            func works(_ cookie: String) async throws -> Bool {
                let page = try await PageAnswer.fetch(client, .get, "/console", cookie: cookie)
                return page.status == .ok && page.body.contains("Dashboard")
            }
            // Two browsers; the password changed in the first ends the second.
            let (first, second) = (
                try await signIn(password: "a long enough password"),
                try await signIn(password: "a long enough password")
            )
            #expect(try await works(first))
            #expect(try await works(second))
            server.clock.advance(by: 30)
            let me = try await PageAnswer.fetch(client, .get, "/console/me", cookie: first)
            let changed = try await PageAnswer.fetch(
                client, .post, "/console/me/password", cookie: first,
                form: [
                    "csrf": try #require(me.field("csrf")), "current": "a long enough password",
                    "new": "another long password", "confirm": "another long password",
                    "code": try Self.code(secret, at: server.clock.now),
                ])
            #expect(changed.status == .seeOther, "\(changed.body)")
            #expect(try await works(first))
            #expect(try await !works(second))

            // An admin resets bob: the session ends and does not come back once bob is set up anew.
            let (_, link) = try await operators.reset("bob", actor: "operator:admin")
            secret = try await Self.secret(server, link: link)
            let token = try #require(URLComponents(string: link)?.queryItems?.first { $0.name == "t" }?.value)
            _ = try await operators.completeSetup(
                token: token, password: "a third long password", code: try Self.code(secret, at: server.clock.now))
            #expect(try await !works(first))

            // Disabled: ended; enabled again: still ended.
            let third = try await signIn(password: "a third long password")
            #expect(try await works(third))
            _ = try await operators.setDisabled("bob", true, actor: "operator:admin")
            _ = try await operators.setDisabled("bob", false, actor: "operator:admin")
            #expect(try await !works(third))
        }
    }

    @Test(
        "A wrong current password or code in a password change counts against the account's limits from that address and is audited"
    )
    func passwordChangeLimit() async throws {
        var limits = RateLimits()
        limits.operatorSignInFailuresPerAccountAndAddress = RateLimitRule(limit: 2, window: 900)
        let server = try await Self.signInServer(limits)
        defer { Task { await server.shutdown() } }
        let operators = Services(server.environment).operators
        let (olga, secret) = try await Self.setUpOperator(server, "olga")
        let stored = try #require(try await server.store.operatorRecord(name: "olga")?.passwordHash)
        func change(_ current: String) async throws -> Int? {
            server.clock.advance(by: 30)
            do {
                try await operators.changePassword(
                    olga, current: current, new: "another long password",
                    code: try Self.code(secret, at: server.clock.now), address: "198.51.100.7")
                return nil
            } catch let error as AssentServerError {
                return error.status
            }
        }
        #expect(try await change("not the password at all") == 401)
        #expect(try await change("not the password either") == 401)
        // Over the limit from that address: the right password waits too.
        #expect(try await change("a long enough password") == 429)
        #expect(try await server.store.operatorRecord(name: "olga")?.passwordHash == stored)
        // Olga herself, from her own address, still signs in: the guesses were not hers.
        try await server.live { client in
            server.clock.advance(by: 30)
            let signIn = try await Self.postSignIn(
                client,
                [
                    "name": "olga", "password": "a long enough password",
                    "code": try Self.code(secret, at: server.clock.now),
                ])
            #expect(signIn.status == 200 && signIn.text.contains("Dashboard"), "\(signIn.status)")
        }
        let refused = try await server.store.auditEvents(
            AuditFilter(typePrefix: "operator.password_change_refused"), limit: 5)
        #expect(refused.count == 2 && refused.allSatisfy { $0.actor == "operator:olga" })
        server.clock.advance(by: 901)
        #expect(try await change("a long enough password") == nil)
    }

    @Test(
        "Wrong console sign-ins from one address reach operator-key-failures: 429 with Retry-After, the password step too"
    )
    func signInLimit() async throws {
        var limits = RateLimits()
        limits.operatorKeyFailuresPerAddress = RateLimitRule(limit: 2, window: 300)
        let server = try await Self.signInServer(limits)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let wrong = ["name": "admin", "password": "not the password at all", "code": "000000"]
            #expect(try await Self.postSignIn(client, wrong).status == 401)
            #expect(try await Self.postSignIn(client, wrong.merging(["method": "passkey"]) { $1 }).status == 401)
            let limited = try await Self.postSignIn(client, wrong.merging(["method": "phone"]) { $1 })
            #expect(limited.status == 429 && limited.header("Retry-After") != nil, "\(limited.status)")
            #expect(limited.text.contains("Too many"), "\(limited.text.prefix(400))")
        }
    }

    @Test(
        "No lock-out by strangers: wrong sign-ins naming an account are refused per address; from everywhere they only slow the account down, and its operator signs in"
    )
    func accountSignInLimit() async throws {
        var limits = RateLimits()
        limits.operatorSignInFailuresPerAccountAndAddress = RateLimitRule(limit: 2, window: 900)
        limits.operatorSignInFailuresPerAccount = RateLimitRule(limit: 3, window: 900)
        limits.accountSlowDown = .milliseconds(300)
        let server = try await Self.signInServer(limits, behindProxy: true)
        defer { Task { await server.shutdown() } }
        var secrets: [String: String] = [:]
        for name in ["olga", "otto"] { secrets[name] = try await Self.setUpOperator(server, name).secret }
        let keys = secrets
        try await server.live { client in
            // A stranger at one address: two guesses, then that address is refused for this account (429).
            let wrong = ["name": "olga", "password": "not the password at all", "code": "000000"]
            #expect(try await Self.postSignIn(client, wrong, from: "198.51.100.1").status == 401)
            #expect(
                try await Self.postSignIn(client, wrong.merging(["method": "passkey"]) { $1 }, from: "198.51.100.1")
                    .status == 401)
            let refusedHere = try await Self.postSignIn(client, wrong, from: "198.51.100.1")
            #expect(refusedHere.status == 429 && refusedHere.header("Retry-After") != nil, "\(refusedHere.status)")
            // More guesses from elsewhere put the account over its limit from every address.
            #expect(try await Self.postSignIn(client, wrong, from: "198.51.100.2").status == 401)
            #expect(try await Self.postSignIn(client, wrong, from: "198.51.100.3").status == 401)
            // Olga, from her own address: slowed down, never refused — before, she was locked out for the window.
            server.clock.advance(by: 30)
            let right = [
                "name": "olga", "password": "a long enough password",
                "code": try Self.code(try #require(keys["olga"]), at: server.clock.now),
            ]
            let olga = try await Self.postSignIn(client, right, from: "203.0.113.50")
            #expect(olga.status == 200 && olga.text.contains("Dashboard"), "\(olga.status)")
            let metrics = try await client.send("GET", "/metrics").text
            #expect(
                metrics.contains(#"assent_sign_in_slowed_total{scope="operator.account"}"#), "\(metrics.suffix(500))")
            // Another account is not even slowed down.
            let otto = try await Self.postSignIn(
                client,
                [
                    "name": "otto", "password": "a long enough password",
                    "code": try Self.code(try #require(keys["otto"]), at: server.clock.now),
                ], from: "198.51.100.1")
            #expect(otto.status == 200 && otto.text.contains("Dashboard"), "\(otto.status)")
            // Every counted refusal is in the audit with the account and the address; the one over the limit is not.
            // A name that is no operator's (here a password typed into the name field) is never written.
            let typo = ["name": "correct.horse.battery", "password": "a long enough password", "code": "000000"]
            #expect(try await Self.postSignIn(client, typo, from: "198.51.100.9").status == 401)
            let refused = try await server.store.auditEvents(
                AuditFilter(typePrefix: "console.sign_in_refused"), limit: 20)
            #expect(refused.count == 5, "\(refused.map(\.detail))")
            #expect(
                refused.filter { $0.actor == "operator:olga" }.map(\.detail).sorted() == [
                    "A console sign-in with operator olga was refused: wrong name or password (from 198.51.100.1).",
                    "A console sign-in with operator olga was refused: wrong name, password or code (from 198.51.100.1).",
                    "A console sign-in with operator olga was refused: wrong name, password or code (from 198.51.100.2).",
                    "A console sign-in with operator olga was refused: wrong name, password or code (from 198.51.100.3).",
                ])
            #expect(
                refused.first?.actor == "anonymous"
                    && refused.first?.detail
                        == "A console sign-in with a name that is no operator's was refused: wrong name, password or "
                        + "code (from 198.51.100.9)."
            )
            // Once the window has passed, the stranger's address may try again.
            server.clock.advance(by: 901)
            #expect(try await Self.postSignIn(client, wrong, from: "198.51.100.1").status == 401)
        }
    }
}
