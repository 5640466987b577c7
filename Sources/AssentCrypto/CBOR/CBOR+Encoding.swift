import Foundation

extension CBOR {
    /// The item in CBOR's preferred serialization (RFC 8949 §4.1: shortest heads, definite lengths; floats as
    /// 64-bit), map pairs in the order they hold. ``CBORDecoder`` reads it back to an equal item.
    public var encoded: Data {
        var out = Data()
        append(to: &out)
        return out
    }

    private func append(to out: inout Data) {
        switch self {
        case .unsigned(let value): Self.head(0, value, &out)
        case .negative(let value): Self.head(1, value, &out)
        case .bytes(let data):
            Self.head(2, UInt64(data.count), &out)
            out.append(data)
        case .text(let text):
            Self.head(3, UInt64(text.utf8.count), &out)
            out.append(contentsOf: text.utf8)
        case .array(let items):
            Self.head(4, UInt64(items.count), &out)
            for item in items { item.append(to: &out) }
        case .map(let pairs):
            Self.head(5, UInt64(pairs.count), &out)
            for (key, value) in pairs {
                key.append(to: &out)
                value.append(to: &out)
            }
        case .tagged(let tag, let item):
            Self.head(6, tag, &out)
            item.append(to: &out)
        case .simple(let value):
            if value < 24 { out.append(0xe0 | value) } else { out.append(contentsOf: [0xf8, value]) }
        case .bool(let flag): out.append(flag ? 0xf5 : 0xf4)
        case .null: out.append(0xf6)
        case .undefined: out.append(0xf7)
        case .float(let value):
            out.append(0xfb)
            out.append(Bytes.bigEndian(value.bitPattern))
        }
    }

    private static func head(_ major: UInt8, _ value: UInt64, _ out: inout Data) {
        let type = major << 5
        switch value {
        case 0..<24: out.append(type | UInt8(value))
        case 24...0xff: out.append(contentsOf: [type | 24, UInt8(value)])
        case 0x100...0xffff: out.append(contentsOf: [type | 25, UInt8(value >> 8), UInt8(value & 0xff)])
        case 0x1_0000...0xffff_ffff:
            out.append(type | 26)
            out.append(Bytes.bigEndian(UInt32(value)))
        default:
            out.append(type | 27)
            out.append(Bytes.bigEndian(value))
        }
    }
}
