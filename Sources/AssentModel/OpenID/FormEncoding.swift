import Foundation

/// `application/x-www-form-urlencoded` bodies (the WHATWG URL standard's serializer: space as `+`, everything but
/// `*-._` and alphanumerics percent-encoded).
public enum FormEncoding {
    /// Encodes `fields` sorted by name.
    public static func encode(_ fields: [String: String]) -> Data {
        Data(
            fields.sorted { $0.key < $1.key }.map { "\(escape($0.key))=\(escape($0.value))" }.joined(separator: "&")
                .utf8)
    }

    /// Why a body is not a form.
    public enum DecodingError: Error, Equatable, Sendable {
        /// A name or value is not valid percent-encoded UTF-8.
        case invalidEncoding
        /// A parameter appears twice (RFC 6749 §3.1 forbids it).
        case repeated(String)
    }

    /// Decodes a body into its fields (`+` is a space; empty pairs are skipped). Invalid percent-encoding or
    /// invalid UTF-8 and repeated names are errors.
    public static func decode(_ body: Data) throws(DecodingError) -> [String: String] {
        let (form, repeated) = try decodeFirst(body)
        if let repeated { throw .repeated(repeated) }
        return form
    }

    /// Decodes a body keeping each name's first value, and names the first name that appears again — for a caller
    /// that must still answer with what it read (an authorization request's error goes back with its `state`).
    public static func decodeFirst(_ body: Data) throws(DecodingError) -> (
        fields: [String: String], repeated: String?
    ) {
        guard let text = String(data: body, encoding: .utf8) else { throw .invalidEncoding }
        var form: [String: String] = [:]
        var repeated: String?
        for pair in text.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = unescape(parts[0]), let value = unescape(parts.count == 2 ? parts[1] : "") else {
                throw .invalidEncoding
            }
            guard form[name] == nil else {
                repeated = repeated ?? name
                continue
            }
            form[name] = value
        }
        return (form, repeated)
    }

    private static func unescape(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// One name or value, percent-encoded.
    public static func escape(_ text: String) -> String {
        let allowed = CharacterSet(
            charactersIn: "*-._ abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return (text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "").replacingOccurrences(
            of: " ", with: "+")
    }
}
