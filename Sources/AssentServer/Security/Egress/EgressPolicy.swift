import Foundation

/// Which addresses the server may send requests to when someone other than the server's operator chose the URL (a
/// device's Web Push endpoint, an application's webhook, a relying party's callback): public unicast addresses
/// only, unless the operator allow-lists a network (`serve --egress-allow 10.1.0.0/16`).
///
/// Pure: every decision is a function of the address bytes and the allow list, so the rules are tested without a
/// network. ``Egress`` applies them to the addresses a host name resolves to, and connects to the address it checked.
public struct EgressPolicy: Sendable, Equatable {
    /// Networks the operator allows although their addresses are not public (a lab's loopback, an internal
    /// webhook receiver). Plain `http` is allowed only to these.
    public var allowed: [IPNetwork]

    /// A policy allowing public addresses and `allowed`.
    public init(allowing allowed: [IPNetwork] = []) { self.allowed = allowed }

    /// Why an address is not public, in the words a refusal uses.
    public enum Category: String, Sendable, Equatable, CaseIterable {
        case unspecified = "an unspecified address"
        case loopback = "a loopback address (this machine)"
        case privateUse = "a private address (RFC 1918 / RFC 4193)"
        case linkLocal = "a link-local address (as the cloud metadata service 169.254.169.254)"
        case sharedAddressSpace = "a carrier-grade NAT address (RFC 6598)"
        case multicast = "a multicast or broadcast address"
        case reserved = "a reserved or documentation address"
    }

    /// What the policy says of one address.
    public enum Decision: Sendable, Equatable {
        case allowed
        /// Not public and not allow-listed.
        case refused(Category)
    }

    /// The decision for an address of 4 (IPv4) or 16 (IPv6) bytes. An IPv6 address that carries an IPv4 one
    /// (IPv4-mapped, IPv4-compatible, NAT64, 6to4) is judged as that IPv4 address.
    public func decision(for address: [UInt8]) -> Decision {
        if isAllowListed(address) { return .allowed }
        return Self.category(of: address).map(Decision.refused) ?? .allowed
    }

    /// Whether `address` lies in a network the operator allow-listed (where plain `http` is allowed).
    public func isAllowListed(_ address: [UInt8]) -> Bool {
        let judged = Self.embeddedIPv4(address) ?? address
        return allowed.contains { $0.contains(judged) || $0.contains(address) }
    }

    /// Why `address` (4 or 16 bytes) is not a public unicast address, or `nil` when it is.
    public static func category(of address: [UInt8]) -> Category? {
        if let v4 = embeddedIPv4(address) { return category(of: v4) }
        switch address.count {
        case 4: return ipv4Category(address)
        case 16: return ipv6Category(address)
        default: return .reserved
        }
    }

    private static func ipv4Category(_ a: [UInt8]) -> Category? {
        switch (a[0], a[1], a[2]) {
        case (0, _, _): return .unspecified
        case (10, _, _): return .privateUse
        case (100, 64...127, _): return .sharedAddressSpace
        case (127, _, _): return .loopback
        case (169, 254, _): return .linkLocal
        case (172, 16...31, _): return .privateUse
        case (192, 0, 0), (192, 0, 2), (198, 51, 100), (203, 0, 113): return .reserved
        case (192, 88, 99): return .reserved
        case (192, 168, _): return .privateUse
        case (198, 18...19, _): return .reserved
        case (224...239, _, _): return .multicast
        case (255, 255, 255) where a[3] == 255: return .multicast
        case (240...255, _, _): return .reserved
        default: return nil
        }
    }

    private static func ipv6Category(_ a: [UInt8]) -> Category? {
        if a.allSatisfy({ $0 == 0 }) { return .unspecified }
        if a.prefix(15).allSatisfy({ $0 == 0 }) && a[15] == 1 { return .loopback }
        switch (a[0], a[1]) {
        case (0xFF, _): return .multicast
        case (0xFE, 0x80...0xBF): return .linkLocal
        case (0xFE, 0xC0...0xFF): return .privateUse  // site-local, deprecated (RFC 3879)
        case (0xFC...0xFD, _): return .privateUse  // unique local (RFC 4193)
        default: break
        }
        // 64:ff9b:1::/48, NAT64 for local use (RFC 8215); 100::/64, discard-only (RFC 6666).
        if a.prefix(6) == [0x00, 0x64, 0xFF, 0x9B, 0x00, 0x01] { return .privateUse }
        if a.prefix(8) == [0x01, 0, 0, 0, 0, 0, 0, 0] { return .reserved }
        // 2001::/23 IETF protocol assignments (Teredo 2001::/32 among them), 2001:db8::/32 documentation,
        // 3fff::/20 documentation (RFC 9637).
        if a[0] == 0x20, a[1] == 0x01, a[2] < 0x02 { return .reserved }
        if a.prefix(4) == [0x20, 0x01, 0x0D, 0xB8] { return .reserved }
        if a[0] == 0x3F, a[1] == 0xFF, a[2] < 0x10 { return .reserved }
        // Only global unicast (2000::/3) is public; the rest of the space is unassigned.
        if a[0] & 0xE0 != 0x20 { return .reserved }
        return nil
    }

    /// The IPv4 address an IPv6 address carries: IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64
    /// `64:ff9b::a.b.c.d` (RFC 6052) and 6to4 `2002:AABB:CCDD::/48` (RFC 3056); `nil` for any other address.
    public static func embeddedIPv4(_ address: [UInt8]) -> [UInt8]? {
        guard address.count == 16 else { return nil }
        let zeros10 = address.prefix(10).allSatisfy { $0 == 0 }
        if zeros10, address[10] == 0xFF, address[11] == 0xFF { return Array(address.suffix(4)) }
        // IPv4-compatible, but not :: and ::1, which are IPv6's own.
        if zeros10, address[10] == 0, address[11] == 0, address[12] != 0 || address[13] != 0 {
            return Array(address.suffix(4))
        }
        if address.prefix(12) == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] { return Array(address.suffix(4)) }
        if address[0] == 0x20, address[1] == 0x02 { return Array(address[2..<6]) }
        return nil
    }

    /// The address a URL's host spells, as the system's resolver reads it, or `nil` for a host name.
    ///
    /// IPv6 in brackets or bare; IPv4 as `inet_aton` takes it (and so `getaddrinfo`): one to four parts separated by
    /// dots, each decimal, octal (a leading `0`) or hexadecimal (`0x`), the last part filling the remaining bytes —
    /// `2130706433`, `0177.0.0.1`, `0x7f.1` and `127.1` all spell 127.0.0.1.
    public static func literalAddress(_ host: String) -> [UInt8]? {
        var text = host
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if text.contains(":") {
            // A zone (`fe80::1%eth0`) names an interface of this machine: judged by its address.
            let address = text.split(separator: "%", maxSplits: 1).first.map(String.init) ?? text
            return IPNetwork.bytes(of: address, keepingMappedIPv6: true)
        }
        return ipv4Literal(text)
    }

    private static func ipv4Literal(_ text: String) -> [UInt8]? {
        var parts = text.split(separator: ".", omittingEmptySubsequences: false)
        // A trailing dot is allowed by the resolver ("127.0.0.1.").
        if parts.count > 1, parts.last?.isEmpty == true { parts.removeLast() }
        guard (1...4).contains(parts.count) else { return nil }
        var values: [UInt64] = []
        for part in parts {
            guard let value = number(part) else { return nil }
            values.append(value)
        }
        let leading = values.dropLast()
        guard leading.allSatisfy({ $0 <= 0xFF }) else { return nil }
        let lastBytes = 4 - leading.count
        guard let last = values.last, last < (UInt64(1) << (8 * UInt64(lastBytes))) else { return nil }
        var bytes = leading.map { UInt8($0) }
        for shift in stride(from: lastBytes - 1, through: 0, by: -1) {
            bytes.append(UInt8(truncatingIfNeeded: last >> (8 * UInt64(shift))))
        }
        return bytes
    }

    private static func number(_ part: Substring) -> UInt64? {
        guard !part.isEmpty, part.count <= 32 else { return nil }
        let lowered = part.lowercased()
        if lowered.hasPrefix("0x") {
            let digits = lowered.dropFirst(2)
            return digits.isEmpty ? 0 : UInt64(digits, radix: 16)
        }
        if lowered.count > 1, lowered.hasPrefix("0") { return UInt64(lowered.dropFirst(), radix: 8) }
        return UInt64(lowered, radix: 10)
    }
}
