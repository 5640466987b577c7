import Foundation
import Hummingbird
import Mustache

/// The languages people read Assent's pages in, and how one is chosen for a request.
enum Languages {
    /// English (the texts as written) and the languages with a catalogue, `Resources/locales/<code>.po`.
    static let supported = ["en", "cs", "de"]

    /// Each language's name in itself, as a person looking for their own language reads it.
    static let names = ["en": "English", "cs": "Čeština", "de": "Deutsch"]

    /// Every catalogue, read once per process.
    static let catalogues: [String: Catalogue] = {
        var catalogues: [String: Catalogue] = [:]
        for language in supported where language != "en" {
            let text = String(decoding: resource("\(language).po"), as: UTF8.self)
            do {
                catalogues[language] = try Catalogue.parse(text, language: language)
            } catch {
                preconditionFailure("The bundled catalogue \(language).po does not parse: \(error)")
            }
        }
        return catalogues
    }()

    /// A bundled file of `Resources/locales`.
    static func resource(_ name: String) -> Data {
        guard let directory = Bundle.module.url(forResource: "locales", withExtension: nil),
            let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path)
        else { preconditionFailure("The bundled catalogue \(name) is missing: the build is broken.") }
        return data
    }

    /// The request's `Accept-Language`, for everything the request renders (set by ``LanguageMiddleware``).
    @TaskLocal static var acceptLanguage: String?

    /// The language to answer in: the first supported of the client's `ui_locales` (space-separated), else the
    /// account's language, else the best of the browser's `Accept-Language`, else the application's default, else
    /// English.
    static func choose(
        uiLocales: String? = nil, account: String? = nil, acceptLanguage: String? = Languages.acceptLanguage,
        application: String? = nil
    ) -> String {
        if let chosen = uiLocales?.split(separator: " ").lazy.compactMap({ supportedPrimary(String($0)) }).first {
            return chosen
        }
        if let chosen = account.flatMap(supportedPrimary) { return chosen }
        if let chosen = acceptLanguage.flatMap(best) { return chosen }
        return application.flatMap(supportedPrimary) ?? "en"
    }

    /// The language to write to an account in when no browser asks (mail, a code, a browser's notification): the
    /// one the person chose on `/account`, else the application's default, else English.
    static func of(
        applicationId: String, userId: String, in store: any TFAStore & ApplicationBrandingStore
    ) async throws -> String {
        let account = try await store.tfaAccount(applicationId: applicationId, userId: userId)?.language
        let branding = try await store.applicationBranding(applicationId: applicationId)?.language
        return choose(account: account, acceptLanguage: nil, application: branding)
    }

    /// The supported language a tag names by its primary subtag (`cs-CZ` → `cs`), if any.
    static func supportedPrimary(_ tag: String) -> String? {
        let primary = tag.split(separator: "-").first.map { $0.lowercased() } ?? ""
        return supported.contains(primary) ? primary : nil
    }

    /// The supported language an `Accept-Language` value prefers most (highest `q`, then the order written).
    static func best(_ header: String) -> String? {
        var ranked: [(language: String, q: Double, order: Int)] = []
        for (order, item) in header.split(separator: ",").enumerated() {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let tag = parts.first, let language = supportedPrimary(tag) else { continue }
            var q = 1.0
            for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
                q = Double(parameter.dropFirst(2)) ?? 0
            }
            if q > 0 { ranked.append((language, q, order)) }
        }
        return ranked.min { ($0.q, -$0.order) > ($1.q, -$1.order) }?.language
    }
}

/// Texts in one language: the English a page or a service wrote, translated by the language's catalogue (English,
/// and any text the catalogue lacks, stays as written).
struct Texts: Sendable {
    let language: String

    init(_ language: String) {
        self.language = Languages.supported.contains(language) ? language : "en"
    }

    var catalogue: Catalogue? { Languages.catalogues[language] }

    /// `english` in this language: a text of the catalogue as it is, or a finished sentence matching a text with
    /// placeholders (`The code is wrong: 4 tries left.`), filled in again — the plural form chosen by its `count`.
    func callAsFunction(_ english: String) -> String {
        guard let catalogue else { return english }
        if let entry = catalogue.entries[english], !english.contains("{{") {
            return catalogue.form(entry, count: nil)
        }
        for (pattern, entry) in catalogue.patterns {
            guard let values = pattern.match(english) else { continue }
            let count = values["count"].flatMap { Int($0) }
            return Self.fill(catalogue.form(entry, count: count), values)
        }
        return english
    }

    /// A template's text (`{{#t}}…{{/t}}`, placeholders left for the template to fill): the form for one of a count.
    func template(_ english: String) -> String {
        guard let catalogue, let entry = catalogue.entries[english] else { return english }
        return catalogue.form(entry, count: nil)
    }

    /// A text of the catalogue filled with `values` (`texts("added {{date}}", ["date": …])`); with a `count` value,
    /// its plural form.
    func callAsFunction(_ english: String, _ values: [String: String]) -> String {
        guard let catalogue, let entry = catalogue.entries[english] else { return Self.fill(english, values) }
        return Self.fill(catalogue.form(entry, count: values["count"].flatMap { Int($0) }), values)
    }

    /// A time as the account pages show it, with the month's name in this language: `28 Nov 2026, 14:58 UTC`.
    func date(_ millis: Millis) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: Self.locales[language] ?? "en_GB")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "d MMM yyyy, HH:mm 'UTC'"
        return formatter.string(from: Date(millis: millis))
    }

    /// An amount as people of this language write it, with its currency when it has one: `2 199,40 Kč` in Czech,
    /// `2.199,40 €` in German, `CZK 2,199.40` in English; the currency's own number of decimals.
    func amount(_ value: Decimal, currency: String?) -> String {
        let formatter = NumberFormatter()
        formatter.locale = Locale(identifier: Self.locales[language] ?? "en_GB")
        if let currency, !currency.isEmpty {
            formatter.numberStyle = .currency
            formatter.currencyCode = currency
        } else {
            formatter.numberStyle = .decimal
            formatter.maximumFractionDigits = 6
        }
        return formatter.string(from: value as NSDecimalNumber) ?? "\(value) \(currency ?? "")"
    }

    /// The locale each language formats dates and numbers in.
    static let locales = ["en": "en_GB", "cs": "cs_CZ", "de": "de_DE"]

    /// The lambda templates translate their `{{#t}}…{{/t}}` sections with.
    var lambda: MustacheLambda { MustacheLambda { text in template(text) } }

    /// `text` with its placeholders replaced by `values`.
    static func fill(_ text: String, _ values: [String: String]) -> String {
        var result = text
        for (name, value) in values { result = result.replacingOccurrences(of: "{{\(name)}}", with: value) }
        return result
    }

    /// `items` as a list in this language: "a, b and c".
    func list(_ items: [String]) -> String {
        guard items.count > 1, let last = items.last else { return items.first ?? "" }
        return Self.fill(
            template("{{first}} and {{last}}"), ["first": items.dropLast().joined(separator: ", "), "last": last])
    }
}

/// A page frame whose words are translated: its language, and its sentences in that language.
protocol TranslatedFrame: Sendable {
    /// The page's language (`<html lang>`, and what `{{#t}}` sections are translated into).
    var language: String { get }
    /// The frame with its sentences (title, message, notice) translated.
    func translated() -> Self
}

/// Keeps the request's `Accept-Language` for whatever it renders.
struct LanguageMiddleware: RouterMiddleware {
    typealias Context = AssentRequestContext

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        try await Languages.$acceptLanguage.withValue(request.headers[.acceptLanguage]) {
            try await next(request, context)
        }
    }
}
