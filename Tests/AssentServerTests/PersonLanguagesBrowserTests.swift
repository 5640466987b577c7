import AssentModel
import AssentSDK
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// Every hosted page a person meets, in English, German and Czech as their browser asks (`Accept-Language`, set through
/// Chromium's DevTools), at 1280 px and on a phone: the page says its language, nothing scrolls sideways, and no
/// English sentence the catalogue translates is left on it. Screenshots in
/// `.build/test-artefacts/person-pages/<language>/`.
@Suite("The hosted pages in every language, in a real browser", .serialized)
struct PersonLanguagesBrowserTests {
    /// English sentences of the catalogue that a page in `language` must not show: each text the language
    /// translates differently, or for a text with placeholders, its longer literal parts the translation lacks.
    static func untranslatedTells(_ language: String) throws -> [String] {
        guard language != "en" else { return [] }
        let catalogue = try #require(Languages.catalogues[language])
        var tells = Set<String>()
        for entry in catalogue.entries.values {
            let translated = entry.forms.joined(separator: "\n")
            let parts = entry.english.split(separator: /\{\{\w+\}\}/).map {
                $0.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            for part in parts where part.count >= 20 && !translated.contains(part) {
                tells.insert(part)
            }
        }
        return tells.sorted()
    }

    /// The checks on the page now shown, at 1280 px and on a phone.
    static func check(_ browser: Browser, _ name: String, language: String, tells: [String]) async throws {
        for (size, label) in [(Browser.wideDesktop, "desktop"), (Browser.phone, "phone")] {
            try await browser.resize(size)
            try await browser.screenshot("\(name)-\(label)")
            #expect(try await browser.attribute("html", "lang") == language, "\(name): the page's language")
            let over = try await browser.sidewaysOverflow()
            #expect(over == 0, "\(name) at \(label): the page is \(over) px wider than the window")
        }
        let text = try await browser.execute("return document.body.innerText;") as? String ?? ""
        for tell in tells where text.contains(tell) {
            Issue.record("\(name) in \(language) shows English: \"\(tell)\"")
        }
        try await browser.resize(Browser.desktop)
    }

    @Test(
        "English, German and Czech browsers: home, not found, sign-in, TOTP set-up, signed in, /account, sign-out, the waiting and offline pages",
        arguments: ["en", "de", "cs"])
    func walk(_ language: String) async throws {
        try await SDKClients.withActivatedClient(.sqlite) { server, http, _, _ in
            let tells = try Self.untranslatedTells(language)
            #expect(language == "en" || tells.count > 100, "the catalogue gives English sentences to look for")
            _ = try await server.operatorCall(
                http, "PATCH", "/api/v1/application",
                body: try OperatorJSON.encoder().encode(UpdateApplicationRequest(name: "Example Savings Bank")),
                as: ApplicationInfo.self)
            try await TFAClient(server: server, client: http).createAccount("alice")
            let base = http.base.absoluteString
            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("person-pages/\(language)"))
            defer { Task { await browser.quit() } }
            // The browser asks for the language, as one set up in it does.
            let agent = try await browser.execute("return navigator.userAgent;") as? String ?? ""
            _ = try await browser.devTools(
                "Network.setUserAgentOverride", ["userAgent": agent, "acceptLanguage": "\(language),en;q=0.5"])
            func check(_ name: String) async throws {
                try await Self.check(browser, name, language: language, tells: tells)
            }

            try await browser.open("\(base)/")
            _ = try await browser.element("h1")
            try await check("01-home")
            try await browser.open("\(base)/console/nope")
            _ = try await browser.element("#not-found")
            try await check("02-not-found")

            // The sign-in, a wrong password, the set-up of an authenticator app, signed in.
            try await browser.open("\(base)/login")
            _ = try await browser.element("#userId")
            try await check("03-sign-in")
            try await browser.type("#userId", "alice")
            try await browser.type("#password", "not her password")
            try await browser.click("#submit")
            _ = try await browser.element(".message")
            try await check("04-wrong-password")
            try await browser.type("#password", "correct horse battery")
            try await browser.click("#submit")
            _ = try await browser.element("#provider-totp")
            try await check("05-choose-factor")
            try await browser.click("#provider-totp")
            _ = try await browser.element("#code")
            let shot = try await browser.screenshot("06-totp")
            let uri = try #require(try await QRReader.scan(png: shot), "no QR code on the page")
            try await check("06-totp")
            try await browser.type("#code", try await Oathtool.code(uri: uri, at: server.environment.now()))
            try await browser.click("#verify")
            _ = try await browser.element("#signed-in")
            try await check("07-signed-in")

            // Her account's page, and a new phone's QR code on it.
            try await browser.click("#account")
            _ = try await browser.element("#change-password")
            try await check("08-account")
            try await browser.clickLoadingPage("#new-phone")
            _ = try await browser.element("#notice")
            try await check("09-account-new-phone")

            // Signing out asks first.
            try await browser.open("\(base)/oauth2/logout")
            _ = try await browser.element("#question")
            try await check("10-sign-out")
            try await browser.click("#logout")
            _ = try await browser.element("#signed-out")
            try await check("11-signed-out")

            // A payment waiting for the phone, and its offline QR code.
            let operation = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            let link = try await server.operatorCall(
                http, "POST", "/api/v1/operations/\(operation.id)/approval-link",
                body: try OperatorJSON.encoder().encode(
                    ApprovalLinkRequest(returnUrl: "http://localhost:9/shop", offline: true)),
                as: ApprovalLinkResponse.self)
            let url = try #require(URLComponents(string: link.url))
            try await browser.open("\(base)\(url.path)?\(url.query ?? "")")
            _ = try await browser.element("#status")
            try await check("12-waiting")
            try await browser.click("#offline")
            _ = try await browser.element("#code")
            try await check("13-offline")
        }
    }
}
