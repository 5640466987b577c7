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
}
