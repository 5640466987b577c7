import AssentModel
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// The catalogues: every text a page or the code marks for translation is in the template, and every language has
/// every text with the same placeholders; choosing the language; plural forms.
@Suite("Languages and their catalogues")
struct LanguageTests {
    /// The texts the templates mark with `{{#t}}…{{/t}}`.
    static func templateTexts() throws -> Set<String> {
        var texts = Set<String>()
        for template in PageTemplate.allCases {
            let text = String(decoding: WebPages.resource("\(template.rawValue).mustache"), as: UTF8.self)
            for match in text.matches(of: /\{\{#t\}\}(.*?)\{\{\/t\}\}/.dotMatchesNewlines()) {
                texts.insert(String(match.1))
            }
        }
        return texts
    }

    @Test("Every marked text is in assent.pot; cs and de have each with every plural form and the same placeholders")
    func catalogues() throws {
        let template = try Catalogue.parse(
            String(decoding: Languages.resource("assent.pot"), as: UTF8.self), language: "en")
        let english = Set(template.entries.values.map(\.english))
        let marked = try Self.templateTexts()
        #expect(!marked.isEmpty)
        #expect(marked.subtracting(english).isEmpty, "marked but not in assent.pot: \(marked.subtracting(english))")
        // The code's own texts (titles, the factors' names, what a sign-in was verified with) are in it too.
        var state = LoginState(application: "a")
        for registration in [false, true] {
            state.registration = registration
            for provider in TFAProvider.allCases {
                let label = LoginPages.label(provider, state)
                #expect(english.contains(label), "\(label)")
            }
        }
        for language in Languages.supported where language != "en" {
            let catalogue = try #require(Languages.catalogues[language])
            let translated = Set(catalogue.entries.values.map(\.english))
            #expect(
                translated == english,
                "\(language): missing \(english.subtracting(translated)), stale \(translated.subtracting(english))")
            for entry in Set(catalogue.entries.values.map(\.english)).compactMap({ catalogue.entries[$0] }) {
                let forms = entry.englishPlural == nil ? 1 : Catalogue.pluralForms(language: language)
                #expect(entry.forms.count == forms, "\(language): \(entry.english) has \(entry.forms.count) forms")
                for form in entry.forms {
                    #expect(!form.isEmpty, "\(language): \(entry.english) is not translated")
                    #expect(
                        Catalogue.placeholders(form).sorted() == Catalogue.placeholders(entry.english).sorted(),
                        "\(language): \(form) has other placeholders than \(entry.english)")
                    // A translation is text with {{name}} placeholders only: no sections, partials or raw HTML values,
                    // and nothing that would end an attribute or start markup where a template puts it.
                    #expect(!form.contains("{{{") && !form.contains("{{#") && !form.contains("{{&"), "\(form)")
                    #expect(!form.contains("\"") && !form.contains("<") && !form.contains(">"), "\(form)")
                }
            }
        }
    }

    /// The sentences the person-facing Swift code writes: refusals it throws, messages and notices it sets, the
    /// subjects and texts of account notices (a literal without interpolation, not continued with `+`).
    static func personSentences() throws -> [(file: String, text: String)] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/AssentServer")
        var files: [URL] = []
        for folder in ["Account", "Web", "BrowserApproval"] {
            let directory = root.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
            where name.hasSuffix(".swift") && (folder != "Web" || name.hasPrefix("Login") || name.hasPrefix("Account"))
            {
                files.append(directory.appendingPathComponent(name))
            }
        }
        files.append(root.appendingPathComponent("TFA/TFASettings.swift"))
        let literal =
            /(?:AssentServerError(?:\.\w+)?\(\s*(?:\.\w+,\s*)?|message: |message = |notice = |return |subject: |what: )"((?:[^"\\\n]|\\.)*)"(\s*\+)?/
        var sentences: [(String, String)] = []
        for file in files {
            let source = try String(contentsOf: file, encoding: .utf8)
            for match in source.matches(of: literal) where match.2 == nil {
                let text = String(match.1).replacingOccurrences(of: "\\\"", with: "\"")
                guard !text.contains("\\("), text.contains(" "), text.count >= 12 else { continue }
                sentences.append((file.lastPathComponent, text))
            }
        }
        return sentences
    }

    @Test("Every sentence the sign-in pages, /account and the account notices write in Swift is in the catalogue")
    func codeSentences() throws {
        let sentences = try Self.personSentences()
        #expect(sentences.count > 40, "the scan finds the sentences")
        #expect(sentences.contains { $0.text == "The current password is wrong." })
        let english = Set(try #require(Languages.catalogues["cs"]).entries.values.map(\.english))
        for (file, text) in sentences where !english.contains(text) {
            Issue.record("\(file): \"\(text)\" is not in the catalogue")
        }
        #expect(english.contains(AccountNotices.body))
    }

    @Test("Amounts an operation did not format are written as the language writes them, with the currency's decimals")
    func amounts() throws {
        func plain(_ text: String) -> String {
            text.replacingOccurrences(of: "\u{a0}", with: " ").replacingOccurrences(of: "\u{202f}", with: " ")
        }
        let value = Decimal(string: "2199.4")!
        #expect(plain(Texts("cs").amount(value, currency: "CZK")) == "2 199,40 Kč")
        #expect(plain(Texts("de").amount(value, currency: "EUR")) == "2.199,40 €")
        #expect(plain(Texts("en").amount(value, currency: "GBP")) == "£2,199.40")
        #expect(plain(Texts("en").amount(Decimal(1500), currency: "JPY")).contains("1,500"))
        #expect(!Texts("en").amount(Decimal(1500), currency: "JPY").contains("."))
        #expect(plain(Texts("de").amount(Decimal(string: "0.125")!, currency: nil)) == "0,125")
        // On the pages: an AMOUNT attribute without its own formatting.
        var attribute = OperationAttribute(type: "AMOUNT", id: "operation.amount").with(label: "Částka")
        attribute.amount = value
        attribute.currency = "CZK"
        #expect(plain(ApprovalPages.display(attribute, language: "cs")?.value ?? "") == "2 199,40 Kč")
        attribute.amountFormatted = "2199.40"
        #expect(ApprovalPages.display(attribute, language: "cs")?.value == "2199.40 CZK")
    }

    @Test("ui_locales, then the account's language, then Accept-Language by q, then the application's, then English")
    func choosing() {
        #expect(Languages.choose(uiLocales: "fr cs-CZ", acceptLanguage: "de") == "cs")
        #expect(Languages.choose(uiLocales: "fr", account: "de", acceptLanguage: "cs") == "de")
        #expect(Languages.choose(acceptLanguage: "fr-FR, de;q=0.5, cs;q=0.8") == "cs")
        #expect(Languages.choose(acceptLanguage: "de-AT;q=0.9, cs;q=0.9") == "de")
        #expect(Languages.choose(acceptLanguage: "cs;q=0, de;q=0.1") == "de")
        #expect(Languages.choose(acceptLanguage: "fr, *", application: "cs") == "cs")
        #expect(Languages.choose(acceptLanguage: nil) == "en")
    }

    @Test("A finished sentence is translated with its values and the plural form its count takes")
    func sentences() {
        let czech = Texts("cs")
        #expect(czech("The code is wrong: 1 try left.") == "Kód není správný: zbývá 1 pokus.")
        #expect(czech("The code is wrong: 3 tries left.") == "Kód není správný: zbývají 3 pokusy.")
        #expect(czech("The code is wrong: 5 tries left.") == "Kód není správný: zbývá 5 pokusů.")
        #expect(Texts("de")("The code is wrong: 4 tries left.") == "Der Code ist falsch: noch 4 Versuche.")
        #expect(
            czech("Too many attempts: try again in 30 seconds.") == "Příliš mnoho pokusů: zkuste to znovu za 30 sekund."
        )
        #expect(czech.list(["heslo", "ověřovací aplikace"]) == "heslo a ověřovací aplikace")
        #expect(czech("A sentence no catalogue has.") == "A sentence no catalogue has.")
        // A sentence that only looks like a list stays as written (the list text is for templates).
        #expect(czech("Bread and butter are not in it.") == "Bread and butter are not in it.")
        #expect(
            czech("The code is wrong: 2 tries left. Check it on the phone.")
                == "Kód není správný: zbývají 2 pokusy. Zkontrolujte ho v telefonu.")
        #expect(Texts("en")("The code is wrong: 4 tries left.") == "The code is wrong: 4 tries left.")
        #expect(Texts("xx").language == "en")
        // The code messages (e-mail, text message, call) come from the same catalogues.
        #expect(CodeMessages.subject("cs", application: "Banka") == "Váš přihlašovací kód pro Banka")
        #expect(
            CodeMessages.text("de", code: "123456", application: "Bank", minutes: 5)
                == "Ihr Anmeldecode für Bank ist 123456. Er gilt 5 Minuten. Wenn Sie sich nicht anmelden, geben Sie "
                + "ihn nicht weiter.")
        #expect(
            CodeMessages.text("fr", code: "1", application: "B", minutes: 5).hasPrefix("Your sign-in code for B is 1."))
    }

    @Test("The PO reader: continued strings, escapes, plural forms; a broken file is refused")
    func reader() throws {
        let catalogue = try Catalogue.parse(
            """
            # a comment
            msgid ""
            msgstr ""
            "Language: cs\\n"

            msgid "Say \\"hi\\""
            msgstr "Řekni "
            "\\"ahoj\\""

            msgid "{{count}} apple"
            msgid_plural "{{count}} apples"
            msgstr[0] "{{count}} jablko"
            msgstr[1] "{{count}} jablka"
            msgstr[2] "{{count}} jablek"
            """, language: "cs")
        #expect(catalogue.entries["Say \"hi\""]?.forms == ["Řekni \"ahoj\""])
        #expect(
            Texts.fill(catalogue.form(try #require(catalogue.entries["{{count}} apples"]), count: 2), ["count": "2"])
                == "2 jablka")
        #expect(throws: CatalogueError.self) { try Catalogue.parse("msgid \"a\"\nmsgstr \"b\\q\"", language: "cs") }
        #expect(throws: CatalogueError.self) { try Catalogue.parse("nonsense", language: "cs") }
    }
}
