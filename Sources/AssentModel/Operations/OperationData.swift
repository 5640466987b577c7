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
    public init(parsing text: String) throws {
        let parts = try Self.split(text)
        guard let header = parts.first, let versionLetter = header.first, versionLetter.isASCII,
            versionLetter.isUppercase
        else { throw Self.invalid("The operation data must start with a version letter A–Z.") }
        let templateText = header.dropFirst()
        guard (1...2).contains(templateText.count), templateText.allSatisfy(\.isASCII),
            let template = Int(templateText), (0...99).contains(template)
        else { throw Self.invalid("The template after the version letter must be a number 0–99.") }
        guard parts.count - 1 <= Self.maximumFields else {
            throw Self.invalid("Operation data has at most \(Self.maximumFields) fields after the header.")
        }
        version = versionLetter
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

    /// Splits on unescaped `*`, keeping escapes for the field parser.
    static func split(_ text: String) throws -> [String] {
        guard !text.isEmpty, text.utf8.count <= 4096 else { throw invalid("Operation data is empty or too long.") }
        var parts: [String] = []
        var current = ""
        var escaped = false
        for character in text {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                current.append(character)
                escaped = true
            } else if character == "*" {
                parts.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        guard !escaped else { throw invalid("Operation data ends with a lone backslash.") }
        parts.append(current)
        return parts
    }

    static func field(_ raw: String) throws -> Field {
        guard let type = raw.first else { return .empty }
        let body = String(raw.dropFirst())
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
            guard body.count == 8, body.allSatisfy({ $0.isASCII && $0.isNumber }),
                let year = Int(body.prefix(4)), let month = Int(body.dropFirst(4).prefix(2)),
                let day = Int(body.suffix(2)), isDate(year: year, month: month, day: day)
            else { throw invalid("A date field is D{YYYYMMDD} with a real date.") }
            return .date(year: year, month: month, day: day)
        case "Q": return .anyAccount(try unescape(body))
        case "R": return .reference(try unescape(body))
        case "N": return .note(try unescape(body))
        case "T": return .text(try unescape(body))
        default:
            guard type.isASCII, type.isLetter else { throw invalid("A field starts with its type letter.") }
            return .other(type: type, text: try unescape(body))
        }
    }

    static func amount(_ body: String) throws -> Field {
        let number = body.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
        let currency = body.dropFirst(number.count)
        let digits = number.filter(\.isNumber)
        guard !digits.isEmpty, number.filter({ $0 == "." }).count <= 1, number.last != ".",
            currency.count == 3, currency.allSatisfy({ $0.isASCII && $0.isUppercase })
        else { throw invalid("An amount field is A{decimal}{currency}, e.g. A1492.50EUR.") }
        return .amount(String(number), currency: String(currency))
    }

    /// ISO 13616: two letters, two check digits, up to 30 alphanumerics, and the mod-97 check.
    static func isIBAN(_ text: String) -> Bool {
        let characters = Array(text)
        guard (5...34).contains(characters.count), characters[0...1].allSatisfy({ $0.isASCII && $0.isUppercase }),
            characters[2...3].allSatisfy({ $0.isASCII && $0.isNumber }),
            characters.allSatisfy({ $0.isASCII && ($0.isNumber || $0.isUppercase) })
        else { return false }
        var remainder = 0
        for character in characters[4...] + characters[0..<4] {
            let value = character.isNumber ? Int(String(character))! : Int(character.asciiValue! - 55)
            remainder = (remainder * (value >= 10 ? 100 : 10) + value) % 97
        }
        return remainder == 1
    }

    /// ISO 9362: 4 letters (bank), 2 letters (country), 2 alphanumerics (location), optional 3 (branch).
    static func isBIC(_ text: String) -> Bool {
        let characters = Array(text)
        guard characters.count == 8 || characters.count == 11 else { return false }
        let upperAlphanumeric = { (c: Character) in c.isASCII && (c.isNumber || c.isUppercase) }
        return characters[0..<6].allSatisfy { $0.isASCII && $0.isUppercase }
            && characters[6...].allSatisfy(upperAlphanumeric)
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
        _ text: String, literals: Set<Character>, forbidControlCharacters: Bool,
        error: (String) -> OperationDataError
    ) throws -> String {
        var result = ""
        var escaped = false
        for character in text {
            if escaped {
                if character == "n" {
                    result.append("\n")
                } else if literals.contains(character) {
                    result.append(character)
                } else {
                    throw error("Unknown escape \\\(character).")
                }
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                if forbidControlCharacters, let ascii = character.asciiValue, ascii < 32 {
                    throw error("Text must not contain control characters.")
                }
                result.append(character)
            }
        }
        guard !escaped else { throw error("Text ends with a lone backslash.") }
        return result
    }

    static func escape(_ text: String, literals: Set<Character>) -> String {
        var result = ""
        for character in text {
            if character == "\n" {
                result += "\\n"
            } else if literals.contains(character) {
                result += "\\\(character)"
            } else {
                result.append(character)
            }
        }
        return result
    }
}
