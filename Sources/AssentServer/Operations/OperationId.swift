import AssentCrypto

/// An operation's id: a UUID of version 7 (RFC 9562 §5.7), whose first 48 bits are its creation time in Unix
/// milliseconds, written in lowercase. The operation's `created_at` is that same time, so a lookup by id also names the
/// month the row was made in: on PostgreSQL, where operations are partitioned by `created_at`, it reads one partition.
/// Ids of operations made before (random UUIDs, version 4) carry no time; their lookups read every partition.
enum OperationId {
    /// A new id for an operation created at `millis`: the time, the version, 74 random bits and the variant.
    static func make(at millis: Millis) -> String {
        var bytes = [UInt8](Bytes.random(count: 16))
        let time = UInt64(max(0, min(millis, 0xFFFF_FFFF_FFFF)))
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: time >> (40 - 8 * UInt64(index))) }
        bytes[6] = 0x70 | (bytes[6] & 0x0F)
        bytes[8] = 0x80 | (bytes[8] & 0x3F)
        return text(bytes)
    }

    /// `id`'s creation time when it is a version-7 UUID in lowercase canonical form, else nil.
    static func createdAt(_ id: String) -> Millis? {
        let characters = Array(id.utf8)
        guard characters.count == 36, characters[14] == UInt8(ascii: "7"),
            [UInt8(ascii: "8"), UInt8(ascii: "9"), UInt8(ascii: "a"), UInt8(ascii: "b")].contains(characters[19])
        else { return nil }
        var time: Millis = 0
        for (index, character) in characters.enumerated() {
            if [8, 13, 18, 23].contains(index) {
                guard character == UInt8(ascii: "-") else { return nil }
                continue
            }
            let digit: Millis
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = Millis(character - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = Millis(character - UInt8(ascii: "a") + 10)
            default: return nil
            }
            // The first twelve hex digits (before the second hyphen) are the time.
            if index < 13 { time = time << 4 | digit }
        }
        return time
    }

    /// Sixteen bytes as `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    static func text(_ bytes: [UInt8]) -> String {
        let hex = Hex.encode(bytes)
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
            String(hex.dropFirst(range.lowerBound).prefix(range.count))
        }
        return parts.joined(separator: "-")
    }
}
