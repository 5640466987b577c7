import AssentModel
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// What a person meets where no page was planned for them, in headless Chromium at 1280 px and on a phone:
/// screenshots in `.build/test-artefacts/person-pages/`.
@Suite("What a person meets in a browser", .serialized)
struct PersonPagesBrowserTests {
    @Test(
        "A browser at / or at a mistyped address gets a page that leads to the console and the sign-in; API clients keep JSON"
    )
    func homeAndNotFound() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        try await server.live { http in
            // Machines asking for anything keep the JSON answer, at every path.
            for (path, accept) in [("/", "*/*"), ("/console/nope", "application/json"), ("/api/v1/nope", "text/html")] {
                let answer = try await http.send("GET", path, headers: ["Accept": accept])
                #expect(answer.status == 404 && answer.errorCode == "NOT_FOUND", "\(path) \(answer.text)")
            }
            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("person-pages/home"))
            defer { Task { await browser.quit() } }
            let base = http.base.absoluteString
            try await browser.resize(Browser.wideDesktop)
            try await browser.open("\(base)/")
            try await browser.expectText("h1", "Welcome")
            #expect(try await browser.text(".application").lowercased() == "default")
            #expect(try await browser.attribute("#to-console", "href") == "/console")
            #expect(try await browser.attribute("#to-login", "href") == "/login")
            #expect(try await !browser.exists("#not-found"))
            try await browser.screenshot("01-home-desktop")
            try await browser.click("#to-console")
            try await browser.expectText("h1", "Sign in to the console")

            try await browser.open("\(base)/console/typo")
            try await browser.expectText("h1", "Page not found")
            try await browser.expectText("#not-found", containing: "no page at this address")
            #expect(try await browser.sidewaysOverflow() == 0)
            try await browser.screenshot("02-not-found-desktop")
            try await browser.resize(Browser.phone)
            #expect(try await browser.sidewaysOverflow() == 0)
            try await browser.screenshot("03-not-found-phone")
        }
    }

    /// How far each of the page's tables runs past its box (it would scroll inside it), by table id.
    static func tableOverflow(_ browser: Browser) async throws -> [String: Int] {
        let widths = try await browser.execute(
            """
            const out = {};
            document.querySelectorAll('table').forEach((t, i) => {
              out[t.id || ('table' + i)] = t.scrollWidth - t.clientWidth;
              const box = t.parentElement.getBoundingClientRect();
              const own = t.getBoundingClientRect();
              out[(t.id || ('table' + i)) + ':box'] = Math.round(own.right - box.right);
            });
            return out;
            """)
        return (widths as? [String: Any] ?? [:]).compactMapValues { ($0 as? Int) ?? ($0 as? Double).map(Int.init) }
    }

    @Test(
        "Every console page fits 1280 px and a phone: no page and no table scrolls sideways, with a long application name"
    )
    func consoleFits() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        try await server.live { http in
            _ = try await server.operatorCall(
                http, "PATCH", "/api/v1/application",
                body: try OperatorJSON.encoder().encode(["name": "Example Savings Bank"]), as: ApplicationInfo.self)
            // A second application with a long name: every page has the switcher.
            _ = try await server.createApplication(http, name: "Example Savings Bank — Business")
            let activation = try await server.createActivation(http, userId: "customer-0042@example.com")
            let operation = try await server.createOperation(
                http, try OperationFixtures.payment(userId: "customer-0042@example.com"))
            _ = try await http.send(
                "POST", "/api/v1/activations/\(activation.activationId)/block",
                headers: ["Authorization": "Bearer \(server.apiKey)"],
                body: Data(#"{"reason":"a long reason the operator typed about what happened to the phone"}"#.utf8))
            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("person-pages/console"))
            defer { Task { await browser.quit() } }
            let base = http.base.absoluteString
            try await browser.signInToConsole(base, apiKey: server.apiKey)
            let user = FormEncoding.escape("customer-0042@example.com")
            let pages = [
                "dashboard": "/console", "users": "/console/users", "user": "/console/users/\(user)",
                "activation": "/console/activations/\(activation.activationId)", "operations": "/console/operations",
                "operation": "/console/operations/\(operation.id)", "audit": "/console/audit",
                "application": "/console/application", "operators": "/console/operators", "clients": "/console/clients",
                "me": "/console/me",
            ]
            for (size, label) in [(Browser.wideDesktop, "desktop"), (Browser.phone, "phone")] {
                try await browser.resize(size)
                for (name, path) in pages.sorted(by: { $0.key < $1.key }) {
                    try await browser.open("\(base)\(path)")
                    _ = try await browser.element("h1")
                    try await browser.screenshot("\(name)-\(label)")
                    let page = try await browser.sidewaysOverflow()
                    #expect(page == 0, "\(name) at \(label): the page is \(page) px wider than the window")
                    for (table, over) in try await Self.tableOverflow(browser) where over > 0 {
                        Issue.record("\(name) at \(label): table \(table) runs \(over) px past its box")
                    }
                    // The dashboard chart's hour labels are text a person can read, on a phone too.
                    if name == "dashboard" {
                        let height = try await browser.execute(
                            "return document.querySelector('#chart text').getBoundingClientRect().height;")
                        let pixels = (height as? Double) ?? (height as? Int).map(Double.init) ?? 0
                        #expect(pixels >= 9, "the chart's labels are \(pixels) px high at \(label)")
                    }
                }
            }
        }
    }

    @Test("Live pages say when the server went away: the waiting page and the console")
    func connectionLost() async throws {
        let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("person-pages/connection-lost"))
        defer { Task { await browser.quit() } }
        for page in ["waiting", "console"] {
            try await CLITests.withServer("lost-\(page)", arguments: ["--console-api-key-sign-in"]) {
                _, server, printed in
                let environment = try CLITests.connection(printed)
                let url = try #require(printed["url"])
                let created = try await CLITests.run(
                    [
                        "admin", "operation", "create", "--user", "alice", "--data",
                        "A1*A100CZK*ICZ2730300000001165254011",
                        "--title", "Confirm payment", "--message", "Pay 100 CZK to Nela?",
                    ], environment: environment)
                let id = try #require(
                    created.output.split(separator: "\n").first { $0.hasPrefix("id ") }?.split(separator: " ").last
                        .map(String.init))
                if page == "waiting" {
                    let link = try await CLITests.run(
                        ["admin", "operation", "approval-link", id, "--return", "http://localhost:9/done"],
                        environment: environment)
                    try await browser.open(link.output.trimmingCharacters(in: .whitespacesAndNewlines))
                    _ = try await browser.element("#status")
                } else {
                    try await browser.signInToConsole(url, apiKey: try #require(environment["ASSENT_API_KEY"]))
                    try await browser.open("\(url)/console/operations/\(id)")
                    _ = try await browser.element("#status")
                }
                #expect(
                    try await browser.execute("return document.getElementById('connection-lost').hidden") as? Bool
                        == true)
                server.terminate()
                server.waitUntilExit()
                let shown = try await browser.execute(
                    "return new Promise(r => { const t = Date.now(); (function look() { "
                        + "const e = document.getElementById('connection-lost'); "
                        + "if (!e.hidden || Date.now() - t > 20000) r(!e.hidden); else setTimeout(look, 100); })(); });"
                )
                #expect(shown as? Bool == true, "\(page): no sign that the connection is lost")
                try await browser.screenshot("\(page)-lost")
            }
        }
    }
}
