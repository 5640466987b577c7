import AssentModel
import AssentQR
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// Each application's look on the hosted pages: an accent colour white text stays readable on, and a logo; checked
/// when set, served from the server's own origin, linked by that application's pages only.
@Suite("Branding per application")
struct ApplicationBrandingTests {
    @Test(
        "An application's accent colour and logo: refused when unreadable or not an image, linked by its pages only, served with their types",
        arguments: Backend.all)
    func branding(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            func send(_ method: String, _ path: String, _ body: String = "") async throws -> HTTPClient.Response {
                try await server.operatorSend(client, method, path, body)
            }
            let business = try await server.createApplication(client)
            let path = "/api/v1/applications/\(business.applicationId)/branding"
            let none = try await server.operatorCall(client, "GET", path, as: ApplicationBrandingInfo.self)
            #expect(none.accentColor == nil && none.logo == nil && none.name == "Business")

            // Refused with the reason: unreadable colours, other spellings, images that are not PNG or JPEG.
            let yellow = try await send("PATCH", path, ##"{"accentColor":"#ffd400"}"##)
            #expect(yellow.status == 400 && yellow.text.contains("contrast of 1.4:1"), "\(yellow.text)")
            let named = try await send("PATCH", path, #"{"accentColor":"green"}"#)
            #expect(named.status == 400 && named.text.contains("#rrggbb"))
            let gif = Data("GIF89a....".utf8).base64EncodedString()
            let notImage = try await send("PATCH", path, #"{"logo":"\#(gif)"}"#)
            #expect(notImage.status == 400 && notImage.text.contains("PNG or JPEG"))
            let huge = (Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data(count: 110_000))
                .base64EncodedString()
            let tooLarge = try await send("PATCH", path, #"{"logo":"\#(huge)"}"#)
            #expect(tooLarge.status == 400 && tooLarge.text.contains("100 KB"))

            // Set: a dark green and a PNG.
            let logo = try QRCode(text: "Business", errorCorrection: .low).png(scale: 2)
            let set = try await server.operatorCall(
                client, "PATCH", path,
                body: try OperatorJSON.encoder().encode(
                    UpdateApplicationBrandingRequest(accentColor: "#0A6E4F", logo: logo.base64EncodedString())),
                as: ApplicationBrandingInfo.self)
            #expect(
                set.accentColor == "#0a6e4f" && set.logoType == "image/png" && set.logo == logo.base64EncodedString())
            // An absent field keeps what was set.
            let kept = try await server.operatorCall(
                client, "PATCH", path, body: Data(##"{"accentColor":"#1f3a93"}"##.utf8),
                as: ApplicationBrandingInfo.self)
            #expect(kept.accentColor == "#1f3a93" && kept.logo != nil)

            // Its sign-in page links its style and logo; the first application's does not.
            let page = try await client.send("GET", "/login?application=\(business.applicationId)")
            #expect(page.status == 200)
            #expect(page.text.contains("/web/brand/\(business.applicationId)/style.css?v="), "\(page.text)")
            #expect(page.text.contains("<img class=\"logo\" id=\"application-logo\""))
            let first = try await client.send("GET", "/login")
            #expect(!first.text.contains("/web/brand/") && !first.text.contains("application-logo"))

            // Served from this origin, with their types, never sniffed.
            let css = try await client.send("GET", "/web/brand/\(business.applicationId)/style.css")
            #expect(css.status == 200 && css.text == ":root { --accent: #1f3a93; }\n")
            #expect(css.header("Content-Type")?.hasPrefix("text/css") == true)
            let image = try await client.send("GET", "/web/brand/\(business.applicationId)/logo")
            #expect(image.status == 200 && image.body == logo)
            #expect(image.header("Content-Type") == "image/png")
            #expect(image.header("X-Content-Type-Options") == "nosniff")
            #expect(try await client.send("GET", "/web/brand/\(server.application.id)/logo").status == 404)
            let plain = try await client.send("GET", "/web/brand/\(server.application.id)/style.css")
            #expect(plain.status == 200 && plain.text.isEmpty)

            // A default language for people whose browser names none the pages are written in; a browser that does
            // still wins.
            let french = try await send("PATCH", path, #"{"language":"fr"}"#)
            #expect(french.status == 400 && french.text.contains("en, cs, de"), "\(french.text)")
            let czech = try await server.operatorCall(
                client, "PATCH", path, body: Data(#"{"language":"cs"}"#.utf8), as: ApplicationBrandingInfo.self)
            #expect(czech.language == "cs" && czech.accentColor == "#1f3a93")
            let czechPage = try await client.send(
                "GET", "/login?application=\(business.applicationId)", headers: ["Accept-Language": "fr-FR, fr;q=0.9"])
            #expect(czechPage.text.contains("<html lang=\"cs\">") && czechPage.text.contains("Přihlásit se"))
            let germanBrowser = try await client.send(
                "GET", "/login?application=\(business.applicationId)", headers: ["Accept-Language": "de-DE"])
            #expect(germanBrowser.text.contains("<html lang=\"de\">"))
            let other = try await client.send("GET", "/login", headers: ["Accept-Language": "fr"])
            #expect(other.text.contains("<html lang=\"en\">"))

            // Cleared with empty fields; audited with who did it.
            let cleared = try await server.operatorCall(
                client, "PATCH", path, body: Data(#"{"accentColor":"","logo":"","language":""}"#.utf8),
                as: ApplicationBrandingInfo.self)
            #expect(cleared.accentColor == nil && cleared.logo == nil && cleared.language == nil)
            let english = try await client.send(
                "GET", "/login?application=\(business.applicationId)", headers: ["Accept-Language": "fr"])
            #expect(english.text.contains("<html lang=\"en\">"))
            #expect(try await client.send("GET", "/web/brand/\(business.applicationId)/logo").status == 404)
            let audit = try await server.store.auditEvents(
                AuditFilter(typePrefix: "application.branding_changed"), limit: 10)
            #expect(audit.count == 4 && audit.allSatisfy { $0.actor == "key:bootstrap" })
        }
    }

    @Test("A branded sign-in page as a person sees it: the logo above the title, buttons in the accent colour")
    func inBrowser() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let logo = try QRCode(text: "Example Bank Business", errorCorrection: .low).png(scale: 2)
            _ = try await server.operatorCall(
                client, "PATCH", "/api/v1/applications/\(server.application.id)/branding",
                body: try OperatorJSON.encoder().encode(
                    UpdateApplicationBrandingRequest(accentColor: "#0a6e4f", logo: logo.base64EncodedString())),
                as: ApplicationBrandingInfo.self)
            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("branding"))
            defer { Task { await browser.quit() } }
            try await browser.open("\(client.base.absoluteString)/login")
            try await browser.expectText("h1", "Sign in")
            let width =
                try await browser.execute(
                    "return document.getElementById('application-logo').naturalWidth") as? Int
            #expect((width ?? 0) > 0, "the logo did not load")
            let color =
                try await browser.execute(
                    "return getComputedStyle(document.querySelector('main button')).backgroundColor") as? String
            #expect(color == "rgb(10, 110, 79)")
            try await browser.screenshot("01-sign-in")
            try await browser.expectPhoneLayout("01-sign-in-phone")
        }
    }
}
