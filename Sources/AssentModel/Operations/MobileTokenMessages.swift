import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `{"requestObject":{"id"}}` of `/operation/detail` and `/operation/detail/claim`.
public struct OperationIdRequest: Codable, Sendable, Equatable {
    public var id: String
    public init(id: String) { self.id = id }
}

/// `{"requestObject":{"id","reason"}}` of `/operation/cancel` (the user rejects).
public struct OperationRejectRequest: Codable, Sendable, Equatable {
    public var id: String
    /// `UNKNOWN`, `INCORRECT_DATA`, `UNEXPECTED_OPERATION` or a custom reason (at most 32 characters).
    public var reason: String?
    public init(id: String, reason: String?) {
        self.id = id
        self.reason = reason
    }
}

/// `{"requestObject":{"id","data","proximityCheck"?}}` of `/operation/authorize`.
public struct OperationAuthorizeRequest: Codable, Sendable, Equatable {
    public var id: String
    /// Must equal the operation's data.
    public var data: String
    public var proximityCheck: ProximityCheck?
    /// Optional Base64 data from the app (at most 4 KiB decoded), signed with the approval and handed to the
    /// relying party (seed 003's mobile context).
    public var mobileContext: String?
    /// The number the person chose or typed, for an operation with ``NumberMatching``.
    public var number: Int?
    public init(
        id: String, data: String, proximityCheck: ProximityCheck? = nil, mobileContext: String? = nil,
        number: Int? = nil
    ) {
        self.number = number
        self.id = id
        self.data = data
        self.proximityCheck = proximityCheck
        self.mobileContext = mobileContext
    }
}

/// The proximity check an app attaches to an approval: the TOTP it received and when.
public struct ProximityCheck: Codable, Sendable, Equatable {
    /// The TOTP from the QR code or deeplink.
    public var otp: String
    /// Where the app read the code.
    public enum Source: String, Sendable, Hashable {
        case qrCode = "QR_CODE"
        case deeplink = "DEEPLINK"
    }

    /// `QR_CODE` or `DEEPLINK` (another value from a newer app is kept as sent).
    public var type: OpenEnum<Source>
    /// When the app received the TOTP (ISO 8601).
    public var timestampReceived: Date
    /// When the app sent the approval (ISO 8601).
    public var timestampSent: Date
    public init(otp: String, type: Source, timestampReceived: Date, timestampSent: Date) {
        self.otp = otp
        self.type = .known(type)
        self.timestampReceived = timestampReceived
        self.timestampSent = timestampSent
    }
}

/// The reasons a user gives for rejecting an operation.
public enum RejectReason {
    public static let unknown = "UNKNOWN"
    public static let incorrectData = "INCORRECT_DATA"
    public static let unexpectedOperation = "UNEXPECTED_OPERATION"
    /// The user reports the operation as fraud (seed 003's `report` status): rejected, and the relying party is told.
    public static let fraud = "FRAUD"
}

/// JSON conventions of the Mobile Token API: dates in requests are ISO 8601 (with or without fractions or a
/// `+0000` offset); operation dates in responses are strings formatted by ``timestamp(_:)``.
public enum MobileTokenJSON {
    /// An encoder writing ISO 8601 dates in the `+0000` form.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(timestamp(date))
        }
        return encoder
    }

    /// A decoder accepting ISO 8601 dates with `Z`, `+00:00` or `+0000` offsets and optional fractions.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = parseTimestamp(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "Expected an ISO 8601 date, found \(text).")
            }
            return date
        }
        return decoder
    }

    /// `yyyy-MM-dd'T'HH:mm:ss+0000` in UTC.
    public static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))+0000"
    }

    /// Parses an ISO 8601 date-time with an offset (`Z`, `±hh:mm` or `±hhmm`) and optional fractional seconds.
    ///
    /// The year must be four digits: Foundation's parser also takes forms such as `-026-11-24T…`, which
    /// ``timestamp(_:)`` cannot write back (found by the `request-json` fuzzer).
    public static func parseTimestamp(_ text: String) -> Date? {
        let year = text.utf8.prefix(5)
        guard year.count == 5, year.prefix(4).allSatisfy({ (48...57).contains($0) }), year.last == UInt8(ascii: "-")
        else { return nil }
        var normalized = text
        // `+0000` → `+00:00`, which the ISO 8601 parser accepts.
        if let sign = normalized.lastIndex(where: { $0 == "+" || $0 == "-" }),
            normalized.distance(from: sign, to: normalized.endIndex) == 5,
            normalized[normalized.index(after: sign)...].allSatisfy(\.isNumber)
        {
            normalized.insert(":", at: normalized.index(sign, offsetBy: 3))
        }
        for options: ISO8601DateFormatter.Options in [
            [.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds],
        ] {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = options
            if let date = formatter.date(from: normalized) { return date }
        }
        return nil
    }
}

/// Any JSON value, for free-form payloads (post-approval screens, template parameters).
public enum JSONValue: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Decimal)
    /// A number beyond `Decimal`'s range (exponents -128…127) but within a double's, such as `1e200` or `2e-311`,
    /// which JSON allows: kept as the double nearest to it.
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Decimal.self) {
            self = .number(value)
        } else if let value = try? container.decode(Double.self), value.isFinite {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The value as text where that is meaningful (strings, numbers, booleans).
    public var text: String? {
        switch self {
        case .string(let value): value
        case .number(let value): "\(value)"
        case .double(let value): "\(value)"
        case .bool(let value): value ? "true" : "false"
        default: nil
        }
    }
}
