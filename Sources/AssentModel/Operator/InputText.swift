/// The characters the server's text rules treat as spaces and as control characters, written once for its checks
/// and for the patterns of the OpenAPI document (the tests hold the two together). Foundation's and the regex
/// engines' notions of whitespace differ (U+0085, U+FEFF), so neither is used.
public enum InputText {
    /// Control characters (C0, DEL, C1), the Unicode space separators and the byte-order mark, as the body of an
    /// ECMA-262 character class. U+2000…U+200A are listed one by one: some regex engines (Swift's among them) refuse
    /// a range that starts at U+2000.
    public static let spaceClass =
        #"\u0000-\u0020\u007f-\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"#
        + #"\u2028\u2029\u202f\u205f\u3000\ufeff"#

    /// C0 and C1 control characters and DEL, as the body of an ECMA-262 character class.
    public static let controlClass = #"\u0000-\u001f\u007f-\u009f"#

    /// Whether `scalar` is in ``spaceClass``.
    public static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0...0x20, 0x7F...0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF: true
        default: false
        }
    }

    /// Whether `scalar` is in ``controlClass``.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// The most Unicode scalars a display name (of an API key, an OpenID client) has, counted as sent.
    public static let displayNameMaximumLength = 100

    /// A display name's pattern: it holds a character that is not a space.
    public static let displayNamePattern = "[^" + spaceClass + "]"

    /// A display name as kept — without surrounding spaces — or `nil` unless it has 1 to
    /// ``displayNameMaximumLength`` scalars as sent and is not only spaces.
    public static func displayName(_ text: String) -> String? {
        let scalars = text.unicodeScalars
        guard scalars.count <= displayNameMaximumLength,
            let start = scalars.firstIndex(where: { !isSpace($0) }),
            let last = scalars.lastIndex(where: { !isSpace($0) })
        else { return nil }
        return String(scalars[start...last])
    }
}
