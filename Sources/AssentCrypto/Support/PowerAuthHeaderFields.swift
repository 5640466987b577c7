/// Strict parsing of the `PowerAuth key="value", key="value"` header syntax shared by the
/// `X-PowerAuth-Authorization`, `X-PowerAuth-Token` and `X-PowerAuth-Encryption` headers.
enum PowerAuthHeaderFields {
    static let prefix = "PowerAuth "
    static let maximumLength = 4096

    /// Parses the fields, requiring exactly the `required` keys plus any of `optional`, each once, non-empty.
    static func parse(_ header: String, required: Set<String>, optional: Set<String> = []) throws -> [String: String] {
        guard header.utf8.count <= maximumLength else {
            throw AssentCryptoError(.invalidHeader, "The PowerAuth header is too long.")
        }
        guard header.hasPrefix(prefix) else {
            throw AssentCryptoError(.invalidHeader, "The header must start with \"PowerAuth \".")
        }
        var fields: [String: String] = [:]
        var rest = Substring(header.dropFirst(prefix.count))
        while true {
            rest = rest.drop { $0 == " " }
            guard let equals = rest.firstIndex(of: "=") else {
                throw AssentCryptoError(.invalidHeader, "Each header field reads key=\"value\".")
            }
            let key = String(rest[..<equals])
            guard !key.isEmpty,
                key.utf8.allSatisfy({ (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || $0 == UInt8(ascii: "_") })
            else {
                throw AssentCryptoError(.invalidHeader, "A header field name is malformed.")
            }
            rest = rest[rest.index(after: equals)...]
            guard rest.first == "\"" else {
                throw AssentCryptoError(.invalidHeader, "The value of \(key) must be quoted.")
            }
            rest = rest.dropFirst()
            guard let closing = rest.firstIndex(of: "\"") else {
                throw AssentCryptoError(.invalidHeader, "The value of \(key) is not terminated.")
            }
            let value = String(rest[..<closing])
            guard !value.isEmpty else {
                throw AssentCryptoError(.invalidHeader, "The value of \(key) is empty.")
            }
            guard required.contains(key) || optional.contains(key) else {
                throw AssentCryptoError(.invalidHeader, "The header field \(key) is not allowed here.")
            }
            guard fields.updateValue(value, forKey: key) == nil else {
                throw AssentCryptoError(.invalidHeader, "The header field \(key) appears twice.")
            }
            rest = rest[rest.index(after: closing)...].drop { $0 == " " }
            if rest.isEmpty { break }
            guard rest.first == "," else {
                throw AssentCryptoError(.invalidHeader, "Header fields are separated by commas.")
            }
            rest = rest.dropFirst()
        }
        if let missing = required.subtracting(fields.keys).sorted().first {
            throw AssentCryptoError(.invalidHeader, "The header field \(missing) is missing.")
        }
        return fields
    }

    /// Writes fields in the given order.
    static func format(_ fields: [(String, String)]) -> String {
        prefix + fields.map { "\($0.0)=\"\($0.1)\"" }.joined(separator: ", ")
    }
}
