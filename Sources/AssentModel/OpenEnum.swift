/// A wire value from a known set that keeps a value it does not know, so that a message from a newer peer still
/// decodes and the receiver decides what an unknown value means (usually a clear refusal).
public enum OpenEnum<Known>: RawRepresentable, Codable, Sendable, Hashable
where Known: RawRepresentable & Sendable & Hashable, Known.RawValue == String {
    /// A value this version knows.
    case known(Known)
    /// Another value, as sent.
    case unknown(String)

    public init(rawValue: String) { self = Known(rawValue: rawValue).map(Self.known) ?? .unknown(rawValue) }

    public init(_ known: Known) { self = .known(known) }

    public var rawValue: String {
        switch self {
        case .known(let value): value.rawValue
        case .unknown(let value): value
        }
    }

    /// The known value, `nil` for an unknown one.
    public var known: Known? {
        if case .known(let value) = self { value } else { nil }
    }

    public static func == (lhs: Self, rhs: Known) -> Bool { lhs.known == rhs }
}
