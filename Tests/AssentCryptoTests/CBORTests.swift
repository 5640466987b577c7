import AssentCrypto
import Foundation
import Testing

/// The CBOR decoder against RFC 8949 Appendix A's examples (every definite-length one; the indefinite-length ones must
/// be refused, as CTAP2's canonical encoding never uses them) and against inputs made to break it.
@Suite("CBOR decoding (RFC 8949 Appendix A)")
struct CBORTests {
    static func bytes(_ hex: String) -> Data {
        Data(
            stride(from: 0, to: hex.count, by: 2).map { index in
                let start = hex.index(hex.startIndex, offsetBy: index)
                return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
            })
    }

    static func text(_ value: String) -> CBOR { .text(value) }

    /// RFC 8949 Appendix A: the encoding and the data item it stands for.
    static let examples: [(String, CBOR)] = [
        ("00", .unsigned(0)), ("01", .unsigned(1)), ("0a", .unsigned(10)), ("17", .unsigned(23)),
        ("1818", .unsigned(24)), ("1819", .unsigned(25)), ("1864", .unsigned(100)), ("1903e8", .unsigned(1000)),
        ("1a000f4240", .unsigned(1_000_000)), ("1b000000e8d4a51000", .unsigned(1_000_000_000_000)),
        ("1bffffffffffffffff", .unsigned(UInt64.max)),
        ("c249010000000000000000", .tagged(2, .bytes(bytes("010000000000000000")))),
        ("3bffffffffffffffff", .negative(UInt64.max)),
        ("c349010000000000000000", .tagged(3, .bytes(bytes("010000000000000000")))),
        ("20", .negative(0)), ("29", .negative(9)), ("3863", .negative(99)), ("3903e7", .negative(999)),
        ("f90000", .float(0.0)), ("f98000", .float(-0.0)), ("f93c00", .float(1.0)),
        ("fb3ff199999999999a", .float(1.1)), ("f93e00", .float(1.5)), ("f97bff", .float(65504.0)),
        ("fa47c35000", .float(100000.0)), ("fa7f7fffff", .float(3.4028234663852886e+38)),
        ("fb7e37e43c8800759c", .float(1.0e+300)), ("f90001", .float(5.960464477539063e-8)),
        ("f90400", .float(0.00006103515625)), ("f9c400", .float(-4.0)), ("fbc010666666666666", .float(-4.1)),
        ("f97c00", .float(.infinity)), ("f97e00", .float(.nan)), ("f9fc00", .float(-.infinity)),
        ("fa7f800000", .float(.infinity)), ("fa7fc00000", .float(.nan)), ("faff800000", .float(-.infinity)),
        ("fb7ff0000000000000", .float(.infinity)), ("fb7ff8000000000000", .float(.nan)),
        ("fbfff0000000000000", .float(-.infinity)),
        ("f4", .bool(false)), ("f5", .bool(true)), ("f6", .null), ("f7", .undefined), ("f0", .simple(16)),
        ("f8ff", .simple(255)),
        ("c074323031332d30332d32315432303a30343a30305a", .tagged(0, text("2013-03-21T20:04:00Z"))),
        ("c11a514b67b0", .tagged(1, .unsigned(1_363_896_240))),
        ("c1fb41d452d9ec200000", .tagged(1, .float(1_363_896_240.5))),
        ("d74401020304", .tagged(23, .bytes(bytes("01020304")))),
        ("d818456449455446", .tagged(24, .bytes(bytes("6449455446")))),
        ("d82076687474703a2f2f7777772e6578616d706c652e636f6d", .tagged(32, text("http://www.example.com"))),
        ("40", .bytes(Data())), ("4401020304", .bytes(bytes("01020304"))),
        ("60", text("")), ("6161", text("a")), ("6449455446", text("IETF")), ("62225c", text("\"\\")),
        ("62c3bc", text("\u{00fc}")), ("63e6b0b4", text("\u{6c34}")), ("64f0908591", text("\u{10151}")),
        ("80", .array([])), ("83010203", .array([.unsigned(1), .unsigned(2), .unsigned(3)])),
        (
            "8301820203820405",
            .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])])
        ),
        (
            "98190102030405060708090a0b0c0d0e0f101112131415161718181819",
            .array((1...25).map { .unsigned(UInt64($0)) })
        ),
        ("a0", .map([])), ("a201020304", .map([(.unsigned(1), .unsigned(2)), (.unsigned(3), .unsigned(4))])),
        ("a26161016162820203", .map([(text("a"), .unsigned(1)), (text("b"), .array([.unsigned(2), .unsigned(3)]))])),
        ("826161a161626163", .array([text("a"), .map([(text("b"), text("c"))])])),
        (
            "a56161614161626142616361436164614461656145",
            .map(["a", "b", "c", "d", "e"].map { (text($0), text($0.uppercased())) })
        ),
    ]

    /// RFC 8949 Appendix A's indefinite-length examples.
    static let indefinite = [
        "5f42010243030405ff", "7f657374726561646d696e67ff", "9fff", "9f018202039f0405ffff", "9f01820203820405ff",
        "83018202039f0405ff", "83019f0203ff820405", "9f0102030405060708090a0b0c0d0e0f101112131415161718181819ff",
        "bf61610161629f0203ffff", "826161bf61626163ff", "bf6346756ef563416d7421ff",
    ]

    @Test("Every definite-length example of Appendix A decodes to its data item")
    func appendixA() throws {
        var passed = 0
        for (hex, expected) in Self.examples {
            let decoded = try CBORDecoder().decode(Self.bytes(hex))
            #expect(decoded == expected, "\(hex)")
            if decoded == expected { passed += 1 }
        }
        // -0.0 and 0.0 compare equal as doubles: the sign is checked on its own.
        if case .float(let zero) = try CBORDecoder().decode(Self.bytes("f98000")) {
            #expect(zero.sign == .minus)
        }
        print("RFC 8949 Appendix A: \(passed)/\(Self.examples.count) definite-length examples decoded")
        #expect(passed == Self.examples.count)
    }

    @Test("The encoder writes every non-float example of Appendix A byte for byte, and floats back to equal values")
    func encoding() throws {
        var exact = 0
        for (hex, item) in Self.examples {
            if case .float = item {
                #expect(try CBORDecoder().decode(item.encoded) == item, "\(hex)")
            } else {
                #expect(item.encoded == Self.bytes(hex), "\(hex)")
                if item.encoded == Self.bytes(hex) { exact += 1 }
            }
        }
        print("RFC 8949 Appendix A: \(exact) non-float examples encoded byte for byte")
        #expect(exact > 40)
    }

    @Test("Indefinite lengths, and what is not well-formed, are refused with a reason")
    func refusals() {
        var cases = Self.indefinite.map { ($0, "Indefinite-length") }
        cases += [
            ("", "ends early"), ("18", "runs past"), ("1900", "runs past"), ("62c3", "runs past"),
            ("5b00000000ffffffff", "runs past"), ("9bffffffffffffffff", "runs past"),
            ("bb7fffffffffffffff", "runs past"), ("a2010201", "runs past"), ("c1", "ends early"),
            ("a201020102", "same key twice"),
            ("62c328", "not valid UTF-8"), ("1c", "reserved"), ("fc", "reserved"), ("f818", "below 32"),
            ("ff", "break"), ("0000", "1 bytes follow"),
        ]
        for (hex, reason) in cases {
            do {
                _ = try CBORDecoder().decode(Self.bytes(hex))
                Issue.record("\(hex) was accepted")
            } catch {
                #expect(error.message.contains(reason), "\(hex): \(error.message)")
            }
        }
    }

    @Test("Depth and item limits hold; a prefix decode says how much it read")
    func limits() throws {
        let deep = Data(repeating: 0x81, count: 17) + Data([0x00])
        #expect(throws: CBORError.self) { try CBORDecoder().decode(deep) }
        #expect(try CBORDecoder(maximumDepth: 17).decode(deep) != .null)
        let tags = Data(repeating: 0xc1, count: 17) + Data([0x00])
        #expect(throws: CBORError.self) { try CBORDecoder().decode(tags) }
        let many = Data([0x99, 0x01, 0x00]) + Data(repeating: 0x00, count: 256)
        #expect(throws: CBORError.self) { try CBORDecoder(maximumItems: 100).decode(many) }
        #expect(try CBORDecoder().decode(many) == .array(Array(repeating: .unsigned(0), count: 256)))
        let (item, used) = try CBORDecoder().decodePrefix(Self.bytes("a201020304ffee"))
        #expect(used == 5 && item[.unsigned(3)]?.int == 4)
        #expect(CBOR.negative(6).int == -7 && CBOR.unsigned(UInt64.max).int == nil)
    }
}
