import Foundation

/// The operation data string a device signs: `{version}{template}*field*field…`, e.g.
/// `A1*A100CZK*ICZ2730300000001165254011*D20180425`.
///
/// The first letter of each field names its type; text fields escape `\n`, `\\` and `\*`. Version `A` allows
/// templates 0–99 and up to six fields; empty fields keep positions (`A1*A100CZK*ICZ…***Nnote`).
public struct OperationData: Sendable, Equatable, CustomStringConvertible {
    /// One field after the header.
    public enum Field: Sendable, Equatable {
        /// An empty position.
        case empty
        /// `A{decimal}{ISO 4217}`: the amount as written (dot separator) and the currency.
        case amount(String, currency: String)
        /// `I{IBAN}[,{BIC}]`.
        case account(iban: String, bic: String?)
        /// `Q{text}`: an account in any format.
        case anyAccount(String)
        /// `D{YYYYMMDD}`.
        case date(year: Int, month: Int, day: Int)
        /// `R{text}`.
        case reference(String)
        /// `N{text}`.
        case note(String)
        /// `T{text}`.
        case text(String)
        /// Any other letter: shown as text.
        case other(type: Character, text: String)
    }

    /// The known templates.
    public enum Template: Int, Sendable {
        case generic = 0
        case payment = 1
        case login = 2
    }

    /// The version letter, `A` today.
    public var version: Character
    /// The template number, 0–99.
    public var template: Int
    /// The fields after the header.
    public var fields: [Field]

    /// The most fields version `A` allows after the header.
    public static let maximumFields = 6

    /// Creates operation data from its parts.
    public init(version: Character = "A", template: Int, fields: [Field]) {
        self.version = version
        self.template = template
        self.fields = fields
    }

    /// Parses and validates an operation data string.
    ///
    /// The text is read as Unicode scalars, not as characters: a combining mark after a type letter, `*` or `\\`
    /// does not merge with it, so the grammar is the one the OpenAPI document's pattern states.
    public init(parsing text: String) throws {
        let parts = try Self.split(text)
        let header = parts[0].unicodeScalars
        guard let versionLetter = header.first, ("A"..."Z").contains(versionLetter) else {
            throw Self.invalid("The operation data must start with a version letter A–Z.")
        }
        let templateText = header.dropFirst()
        guard (1...2).contains(templateText.count), templateText.allSatisfy({ ("0"..."9").contains($0) }),
            let template = Int(String(templateText))
        else { throw Self.invalid("The template after the version letter must be a number 0–99.") }
        guard parts.count - 1 <= Self.maximumFields else {
            throw Self.invalid("Operation data has at most \(Self.maximumFields) fields after the header.")
        }
        version = Character(versionLetter)
        self.template = template
        fields = try parts.dropFirst().map(Self.field)
    }

    /// The canonical text (trailing empty fields dropped).
    public var description: String {
        var encoded = fields.map(Self.encode)
        while encoded.last == "" { encoded.removeLast() }
        return ([String(version) + String(template)] + encoded).joined(separator: "*")
    }

    static func invalid(_ message: String) -> OperationDataError { OperationDataError(message: message) }

    /// The longest operation data, in Unicode scalars (the OpenAPI document's `maxLength`).
    public static let maximumLength = 4096

    /// Splits on unescaped `*`, keeping escapes for the field parser.
    static func split(_ text: String) throws -> [String] {
        let scalars = text.unicodeScalars
        guard !scalars.isEmpty, scalars.count <= maximumLength else {
            throw invalid("Operation data is empty or longer than \(maximumLength) characters.")
        }
        var parts: [String] = []
        var current = String.UnicodeScalarView()
        var escaped = false
        for scalar in scalars {
            if escaped {
                current.append(scalar)
                escaped = false
            } else if scalar == "\\" {
                current.append(scalar)
                escaped = true
            } else if scalar == "*" {
                parts.append(String(current))
                current = String.UnicodeScalarView()
            } else {
                current.append(scalar)
            }
        }
        guard !escaped else { throw invalid("Operation data ends with a lone backslash.") }
        parts.append(String(current))
        return parts
    }

    static func field(_ raw: String) throws -> Field {
        guard let type = raw.unicodeScalars.first else { return .empty }
        let body = String(raw.unicodeScalars.dropFirst())
        switch type {
        case "A":
            return try amount(body)
        case "I":
            let pieces = body.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard (1...2).contains(pieces.count), isIBAN(pieces[0]), pieces.count == 1 || isBIC(pieces[1]) else {
                throw invalid("An account field is I{IBAN} or I{IBAN},{BIC} with a valid IBAN and BIC.")
            }
            return .account(iban: pieces[0], bic: pieces.count == 2 ? pieces[1] : nil)
        case "D":
            let digits = body.unicodeScalars
            guard digits.count == 8, digits.allSatisfy({ ("0"..."9").contains($0) }),
                let year = Int(body.prefix(4)), let month = Int(body.dropFirst(4).prefix(2)),
                let day = Int(body.suffix(2)), isDate(year: year, month: month, day: day)
            else { throw invalid("A date field is D{YYYYMMDD} with a real date.") }
            return .date(year: year, month: month, day: day)
        case "Q": return .anyAccount(try unescape(body))
        case "R": return .reference(try unescape(body))
        case "N": return .note(try unescape(body))
        case "T": return .text(try unescape(body))
        default:
            guard ("A"..."Z").contains(type) || ("a"..."z").contains(type) else {
                throw invalid("A field starts with its type letter.")
            }
            return .other(type: Character(type), text: try unescape(body))
        }
    }

    static func amount(_ body: String) throws -> Field {
        let scalars = body.unicodeScalars
        let number = scalars.prefix { ("0"..."9").contains($0) || $0 == "." }
        let currency = scalars.dropFirst(number.count)
        guard number.contains(where: { $0 != "." }), number.filter({ $0 == "." }).count <= 1, number.last != ".",
            currency.count == 3, currency.allSatisfy({ ("A"..."Z").contains($0) })
        else { throw invalid("An amount field is A{decimal}{currency}, e.g. A1492.50EUR.") }
        return .amount(String(String.UnicodeScalarView(number)), currency: String(String.UnicodeScalarView(currency)))
    }

    /// ISO 13616: two letters, two check digits, up to 30 alphanumerics, and the mod-97 check.
    static func isIBAN(_ text: String) -> Bool {
        let scalars = Array(text.unicodeScalars)
        let upperAlphanumeric = { (c: Unicode.Scalar) in ("A"..."Z").contains(c) || ("0"..."9").contains(c) }
        guard (5...34).contains(scalars.count), scalars[0...1].allSatisfy({ ("A"..."Z").contains($0) }),
            scalars[2...3].allSatisfy({ ("0"..."9").contains($0) }), scalars.allSatisfy(upperAlphanumeric)
        else { return false }
        var remainder = 0
        for scalar in scalars[4...] + scalars[0..<4] {
            let value = ("0"..."9").contains(scalar) ? Int(scalar.value) - 48 : Int(scalar.value) - 55
            remainder = (remainder * (value >= 10 ? 100 : 10) + value) % 97
        }
        return remainder == 1
    }

    /// ISO 9362: 4 letters (bank), 2 letters (country), 2 alphanumerics (location), optional 3 (branch).
    static func isBIC(_ text: String) -> Bool {
        let scalars = Array(text.unicodeScalars)
        guard scalars.count == 8 || scalars.count == 11 else { return false }
        let upperAlphanumeric = { (c: Unicode.Scalar) in ("A"..."Z").contains(c) || ("0"..."9").contains(c) }
        return scalars[0..<6].allSatisfy { ("A"..."Z").contains($0) } && scalars[6...].allSatisfy(upperAlphanumeric)
    }

    static func isDate(year: Int, month: Int, day: Int) -> Bool {
        var components = DateComponents()
        components.calendar = Calendar(identifier: .gregorian)
        components.timeZone = TimeZone(identifier: "UTC")
        (components.year, components.month, components.day) = (year, month, day)
        return year >= 1 && components.isValidDate
    }

    /// Resolves `\n`, `\\` and `\*`; other escapes and control characters are errors.
    static func unescape(_ text: String) throws -> String {
        try TextEscaping.unescape(text, literals: ["\\", "*"], forbidControlCharacters: true) { invalid($0) }
    }

    static func escape(_ text: String) -> String { TextEscaping.escape(text, literals: ["\\", "*"]) }

    static func encode(_ field: Field) -> String {
        switch field {
        case .empty: ""
        case .amount(let amount, let currency): "A\(amount)\(currency)"
        case .account(let iban, let bic): "I\(iban)\(bic.map { ",\($0)" } ?? "")"
        case .anyAccount(let text): "Q\(escape(text))"
        case .date(let year, let month, let day): String(format: "D%04d%02d%02d", year, month, day)
        case .reference(let text): "R\(escape(text))"
        case .note(let text): "N\(escape(text))"
        case .text(let text): "T\(escape(text))"
        case .other(let type, let text): "\(type)\(escape(text))"
        }
    }
}

/// Malformed operation data, with a sentence saying which rule it broke.
public struct OperationDataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public var message: String
    public var description: String { message }
}

/// Backslash escaping shared by operation data and offline QR texts: `\n` is a newline, and `\c` stands for each
/// character `c` in a format's set of literals (always including the backslash).
enum TextEscaping {
    static func unescape(
        _ text: String, literals: Set<Unicode.Scalar>, forbidControlCharacters: Bool,
        error: (String) -> OperationDataError
    ) throws -> String {
        var result = String.UnicodeScalarView()
        var escaped = false
        for scalar in text.unicodeScalars {
            if escaped {
                if scalar == "n" {
                    result.append("\n")
                } else if literals.contains(scalar) {
                    result.append(scalar)
                } else {
                    throw error("Unknown escape \\\(scalar).")
                }
                escaped = false
            } else if scalar == "\\" {
                escaped = true
            } else {
                if forbidControlCharacters, scalar.value < 32 {
                    throw error("Text must not contain control characters.")
                }
                result.append(scalar)
            }
        }
        guard !escaped else { throw error("Text ends with a lone backslash.") }
        return String(result)
    }

    static func escape(_ text: String, literals: Set<Unicode.Scalar>) -> String {
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if scalar == "\n" {
                result.append(contentsOf: "\\n".unicodeScalars)
            } else if literals.contains(scalar) {
                result.append("\\")
                result.append(scalar)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }
}
