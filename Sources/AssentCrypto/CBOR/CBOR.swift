import Foundation

/// A CBOR data item (RFC 8949) as WebAuthn and COSE use them: what an authenticator sends is decoded into this, never
/// into a program's own types directly.
public indirect enum CBOR: Sendable, Equatable {
    case unsigned(UInt64)
    /// The negative integer `-1 - n`.
    case negative(UInt64)
    case bytes(Data)
    case text(String)
    case array([CBOR])
    /// Pairs in the order they were sent (keys need not be unique in the encoding; ``CBORDecoder`` refuses
    /// duplicates).
    case map([(CBOR, CBOR)])
    case tagged(UInt64, CBOR)
    case simple(UInt8)
    case bool(Bool)
    case null
    case undefined
    case float(Double)

    public static func == (lhs: CBOR, rhs: CBOR) -> Bool {
        switch (lhs, rhs) {
        case (.unsigned(let a), .unsigned(let b)), (.negative(let a), .negative(let b)): a == b
        case (.bytes(let a), .bytes(let b)): a == b
        case (.text(let a), .text(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.map(let a), .map(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.tagged(let a, let x), .tagged(let b, let y)): a == b && x == y
        case (.simple(let a), .simple(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        case (.null, .null), (.undefined, .undefined): true
        // NaN equals NaN here: a decoded item is compared with what was expected, not computed with.
        case (.float(let a), .float(let b)): a == b || (a.isNaN && b.isNaN)
        default: false
        }
    }

    /// The value of `key` in a map (`nil` for anything else, or a missing key).
    public subscript(key: CBOR) -> CBOR? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { $0.0 == key }?.1
    }

    /// An integer as `Int`, when it is one and fits.
    public var int: Int? {
        switch self {
        case .unsigned(let value): value <= UInt64(Int.max) ? Int(value) : nil
        case .negative(let value): value < UInt64(Int.max) ? -1 - Int(value) : nil
        default: nil
        }
    }
}

/// Why bytes are not the CBOR data item they should be.
public struct CBORError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
    init(_ message: String) { self.message = message }
}

/// A strict CBOR decoder for data from authenticators: well-formed definite-length items only (CTAP2's canonical
/// encoding has no indefinite lengths), nesting at most ``maximumDepth`` deep, no declared length beyond the bytes
/// that are there (so a forged length cannot make it allocate), text that is valid UTF-8, map keys that are unique,
/// and simple values in their shortest form.
public struct CBORDecoder: Sendable {
    /// How deeply arrays, maps and tags may nest.
    public var maximumDepth = 16
    /// How many data items one decode may read in all.
    public var maximumItems = 10_000

    public init(maximumDepth: Int = 16, maximumItems: Int = 10_000) {
        self.maximumDepth = maximumDepth
        self.maximumItems = maximumItems
    }

    /// Decodes exactly one data item that fills `data`.
    public func decode(_ data: Data) throws(CBORError) -> CBOR {
        let (item, used) = try decodePrefix(data)
        guard used == data.count else { throw CBORError("\(data.count - used) bytes follow the CBOR data item.") }
        return item
    }

    /// Decodes the data item at the start of `data`; returns it and how many bytes it took (authenticator data
    /// carries a COSE key followed by more bytes).
    public func decodePrefix(_ data: Data) throws(CBORError) -> (CBOR, Int) {
        var reader = Reader(bytes: [UInt8](data), limits: self)
        let item = try reader.item(depth: 0)
        return (item, reader.offset)
    }

    private struct Reader {
        let bytes: [UInt8]
        let limits: CBORDecoder
        var offset = 0
        var items = 0

        mutating func byte() throws(CBORError) -> UInt8 {
            guard offset < bytes.count else { throw CBORError("The CBOR data ends early.") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func take(_ count: UInt64) throws(CBORError) -> ArraySlice<UInt8> {
            guard count <= UInt64(bytes.count - offset) else {
                throw CBORError("A CBOR length of \(count) runs past the end of the data.")
            }
            let start = offset
            offset += Int(count)
            return bytes[start..<offset]
        }

        /// The argument of an item head: the 5-bit value itself, or the 1, 2, 4 or 8 bytes after it.
        mutating func argument(_ info: UInt8) throws(CBORError) -> UInt64 {
            switch info {
            case 0..<24: return UInt64(info)
            case 24, 25, 26, 27:
                let width = 1 << (info - 24)
                var value: UInt64 = 0
                for byte in try take(UInt64(width)) { value = value << 8 | UInt64(byte) }
                return value
            case 31: throw CBORError("Indefinite-length CBOR items are not accepted.")
            default: throw CBORError("The CBOR item head uses reserved additional information \(info).")
            }
        }

        mutating func item(depth: Int) throws(CBORError) -> CBOR {
            items += 1
            guard items <= limits.maximumItems else {
                throw CBORError("The CBOR data has more than \(limits.maximumItems) items.")
            }
            let head = try byte()
            let major = head >> 5
            let info = head & 0x1f
            if major == 7 { return try simpleOrFloat(info) }
            let value = try argument(info)
            switch major {
            case 0: return .unsigned(value)
            case 1: return .negative(value)
            case 2: return .bytes(Data(try take(value)))
            case 3:
                guard let text = String(validating: try take(value), as: UTF8.self) else {
                    throw CBORError("A CBOR text string is not valid UTF-8.")
                }
                return .text(text)
            case 4, 5:
                guard depth < limits.maximumDepth else {
                    throw CBORError("CBOR arrays and maps nest more than \(limits.maximumDepth) deep.")
                }
                // Every element takes at least one byte: a count beyond the bytes left is a lie.
                let elements = major == 4 ? value : value.multipliedReportingOverflow(by: 2).partialValue
                guard value <= UInt64(bytes.count - offset), elements <= UInt64(bytes.count - offset) else {
                    throw CBORError("A CBOR \(major == 4 ? "array" : "map") of \(value) entries runs past the data.")
                }
                if major == 4 {
                    var array: [CBOR] = []
                    for _ in 0..<value { array.append(try item(depth: depth + 1)) }
                    return .array(array)
                }
                var pairs: [(CBOR, CBOR)] = []
                for _ in 0..<value {
                    let key = try item(depth: depth + 1)
                    guard !pairs.contains(where: { $0.0 == key }) else {
                        throw CBORError("A CBOR map has the same key twice.")
                    }
                    pairs.append((key, try item(depth: depth + 1)))
                }
                return .map(pairs)
            default:
                guard depth < limits.maximumDepth else {
                    throw CBORError("CBOR tags nest more than \(limits.maximumDepth) deep.")
                }
                return .tagged(value, try item(depth: depth + 1))
            }
        }

        mutating func simpleOrFloat(_ info: UInt8) throws(CBORError) -> CBOR {
            switch info {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            case 23: return .undefined
            case 0..<20: return .simple(info)
            case 24:
                let value = try byte()
                // RFC 8949 §3.3: the two-byte form carries 32...255 only.
                guard value >= 32 else { throw CBORError("A CBOR simple value below 32 uses the two-byte form.") }
                return .simple(value)
            case 25: return .float(Self.half(UInt16(try argument(25))))
            case 26: return .float(Double(Float(bitPattern: UInt32(try argument(26)))))
            case 27: return .float(Double(bitPattern: try argument(27)))
            case 31: throw CBORError("A CBOR break stop code stands outside an indefinite-length item.")
            default: throw CBORError("The CBOR item head uses reserved additional information \(info).")
            }
        }

        /// IEEE 754 half precision (RFC 8949 Appendix D).
        static func half(_ bits: UInt16) -> Double {
            let exponent = Int(bits >> 10) & 0x1f
            let mantissa = Double(bits & 0x3ff)
            let magnitude: Double =
                switch exponent {
                case 0: mantissa * 0x1p-24
                case 31: mantissa == 0 ? .infinity : .nan
                default: (mantissa + 1024) * Double(sign: .plus, exponent: exponent - 25, significand: 1)
                }
            return bits & 0x8000 != 0 ? -magnitude : magnitude
        }
    }
}
