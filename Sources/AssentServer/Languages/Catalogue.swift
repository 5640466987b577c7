import Foundation

/// One language's translations, read from a gettext PO file (`Resources/locales/<language>.po`): the English text is
/// the `msgid`, its translation the `msgstr`. Placeholders are Mustache names (`{{application}}`), the same in every
/// language; a text with a count has `msgid_plural` and one `msgstr[n]` per plural form of the language.
struct Catalogue: Sendable {
    /// One translation: the singular's and (with a count) the plural's English, and the forms of the language.
    struct Entry: Sendable, Equatable {
        var english: String
        var englishPlural: String?
        var forms: [String]
    }

    let language: String
    /// By English singular (and by English plural, for entries with a count).
    let entries: [String: Entry]
    /// Entries with placeholders, tried in turn against a finished English sentence.
    let patterns: [(pattern: Pattern, entry: Entry)]

    init(language: String, entries list: [Entry]) {
        self.language = language
        var entries: [String: Entry] = [:]
        var patterns: [(Pattern, Entry)] = []
        for entry in list {
            entries[entry.english] = entry
            if let plural = entry.englishPlural { entries[plural] = entry }
            // A text that starts with a placeholder ("{{first}} and {{last}}") would match far too much of what
            // the code writes: only a template's section uses it, by its exact English.
            for english in [entry.english] + (entry.englishPlural.map { [$0] } ?? [])
            where english.contains("{{") && !english.hasPrefix("{{") {
                patterns.append((Pattern(english), entry))
            }
        }
        self.entries = entries
        self.patterns = patterns
    }

    /// The form of `entry` for `count` in this language (the first form when the entry has no count).
    func form(_ entry: Entry, count: Int?) -> String {
        guard let count, entry.forms.count > 1 else { return entry.forms.first ?? entry.english }
        let index = Self.pluralForm(language: language, count: count)
        return entry.forms[min(index, entry.forms.count - 1)]
    }

    /// Which plural form a count takes: English and German have one and other; Czech one, few (2–4) and other.
    static func pluralForm(language: String, count: Int) -> Int {
        switch language {
        case "cs": count == 1 ? 0 : (2...4).contains(count) ? 1 : 2
        default: count == 1 ? 0 : 1
        }
    }

    /// How many plural forms the language has.
    static func pluralForms(language: String) -> Int { language == "cs" ? 3 : 2 }

    // MARK: Placeholders

    /// The placeholder names in a text: `{{name}}` (and nothing else: no sections, partials or unescaped values).
    static func placeholders(_ text: String) -> [String] {
        var names: [String] = []
        var rest = Substring(text)
        while let open = rest.range(of: "{{") {
            guard let close = rest[open.upperBound...].range(of: "}}") else { break }
            names.append(String(rest[open.upperBound..<close.lowerBound]))
            rest = rest[close.upperBound...]
        }
        return names
    }

    /// An English text with placeholders, matched against a finished sentence: its literal parts in order, each
    /// placeholder taking the shortest text up to the next literal part.
    struct Pattern: Sendable {
        /// Literal parts around the placeholders: one more than `names`.
        let literals: [String]
        let names: [String]

        init(_ text: String) {
            var literals: [String] = []
            var names: [String] = []
            var rest = Substring(text)
            while let open = rest.range(of: "{{"), let close = rest[open.upperBound...].range(of: "}}") {
                literals.append(String(rest[..<open.lowerBound]))
                names.append(String(rest[open.upperBound..<close.lowerBound]))
                rest = rest[close.upperBound...]
            }
            literals.append(String(rest))
            self.literals = literals
            self.names = names
        }

        /// The placeholders' values when `sentence` is this pattern filled in; `nil` otherwise.
        func match(_ sentence: String) -> [String: String]? {
            guard sentence.hasPrefix(literals[0]) else { return nil }
            var rest = sentence.dropFirst(literals[0].count)
            var values: [String: String] = [:]
            for (index, name) in names.enumerated() {
                let next = literals[index + 1]
                let end: Substring.Index
                if index == names.count - 1 {
                    // The last placeholder runs to the final literal, which ends the sentence.
                    guard rest.hasSuffix(next), rest.count > next.count else { return nil }
                    end = rest.index(rest.endIndex, offsetBy: -next.count)
                } else {
                    guard !next.isEmpty, let found = rest.range(of: next), found.lowerBound > rest.startIndex else {
                        return nil
                    }
                    end = found.lowerBound
                }
                values[name] = String(rest[..<end])
                rest = rest[end...].dropFirst(next.count)
            }
            return rest.isEmpty ? values : nil
        }
    }

    // MARK: Reading PO files

    /// Reads a PO file's entries (the header entry, with an empty `msgid`, is skipped).
    /// - Throws: when the file is not a PO file this reader understands (a line outside an entry, a bad string).
    static func parse(_ text: String, language: String) throws -> Catalogue {
        var entries: [Entry] = []
        var fields: [String: String] = [:]
        var current: String?
        func finish() throws {
            defer { fields = [:] }
            guard let english = fields["msgid"], !english.isEmpty else { return }
            let plural = fields["msgid_plural"]
            let forms =
                plural == nil
                ? [fields["msgstr"] ?? ""]
                : (0..<10).compactMap { fields["msgstr[\($0)]"] }
            entries.append(Entry(english: english, englishPlural: plural, forms: forms))
        }
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty {
                try finish()
                current = nil
            } else if line.hasPrefix("#") {
                continue
            } else if line.hasPrefix("\"") {
                guard let key = current else { throw CatalogueError("a string outside an entry: \(line)") }
                fields[key, default: ""] += try unquote(line)
            } else if let space = line.firstIndex(of: " ") {
                let key = String(line[..<space])
                guard key == "msgid" || key == "msgid_plural" || key == "msgctxt" || key.hasPrefix("msgstr") else {
                    throw CatalogueError("an unknown keyword: \(key)")
                }
                if key == "msgid", fields["msgid"] != nil { try finish() }
                current = key
                fields[key] = try unquote(String(line[line.index(after: space)...]))
            } else {
                throw CatalogueError("a line this reader does not understand: \(line)")
            }
        }
        try finish()
        return Catalogue(language: language, entries: entries)
    }

    /// A PO string literal's text: `"…"` with `\"`, `\\`, `\n` and `\t` escapes.
    static func unquote(_ literal: String) throws -> String {
        guard literal.count >= 2, literal.hasPrefix("\""), literal.hasSuffix("\"") else {
            throw CatalogueError("not a quoted string: \(literal)")
        }
        var result = ""
        var escaped = false
        for character in literal.dropFirst().dropLast() {
            if escaped {
                switch character {
                case "n": result.append("\n")
                case "t": result.append("\t")
                case "\"", "\\": result.append(character)
                default: throw CatalogueError("an unknown escape \\\(character) in \(literal)")
                }
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                result.append(character)
            }
        }
        guard !escaped else { throw CatalogueError("a string ends in a backslash: \(literal)") }
        return result
    }
}

/// A PO file this reader cannot read.
struct CatalogueError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
