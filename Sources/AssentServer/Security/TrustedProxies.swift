import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IP network — `10.0.0.0/8`, `fd00::/8` or one address — given as a trusted reverse proxy.
public struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    /// The network's address: 4 bytes (IPv4) or 16 (IPv6), host bits cleared.
    let address: [UInt8]
    let prefixLength: Int

    /// Parses `ADDRESS[/PREFIX]`; an address alone is a network of one.
    public init(parsing text: String) throws {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = Self.bytes(of: String(parts[0])) else {
            throw AssentServerError.configuration("\(text) is not an IP address or network (e.g. 10.0.0.0/8).")
        }
        let bits = address.count * 8
        let prefix = parts.count == 2 ? Int(parts[1]) : bits
        guard let prefix, (0...bits).contains(prefix) else {
            throw AssentServerError.configuration("\(text): the prefix length is 0 to \(bits).")
        }
        self.address = Self.masked(address, prefix)
        prefixLength = prefix
    }

    public var description: String { "\(Self.text(of: address) ?? "?")/\(prefixLength)" }

    /// Whether `address` (4 or 16 bytes) lies in the network.
    func contains(_ address: [UInt8]) -> Bool {
        address.count == self.address.count && Self.masked(address, prefixLength) == self.address
    }

    private static func masked(_ address: [UInt8], _ prefix: Int) -> [UInt8] {
        address.indices.map { index in
            let kept = min(8, max(0, prefix - index * 8))
            return address[index] & UInt8(truncatingIfNeeded: 0xFF00 >> kept)
        }
    }

    /// The bytes of an IPv4 or IPv6 address in text (an IPv4-mapped IPv6 address as its IPv4 bytes unless
    /// `keepingMappedIPv6`), or `nil`.
    static func bytes(of text: String, keepingMappedIPv6: Bool = false) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        guard !keepingMappedIPv6 else { return bytes }
        return bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] ? Array(bytes.suffix(4)) : bytes
    }

    /// What the per-address rate limits count for a client at `address`: an IPv4 address itself, an IPv6 address's
    /// /64 network (`2001:db8:1:2::/64`) — one host commonly holds a whole /64 and could otherwise take a fresh
    /// address for every try — and text that is no address unchanged.
    static func limitKey(of address: String) -> String {
        guard let bytes = bytes(of: address) else { return address }
        guard bytes.count == 16 else { return text(of: bytes) ?? address }
        return (text(of: masked(bytes, 64)) ?? address) + "/64"
    }

    /// The canonical text of 4 or 16 address bytes.
    static func text(of bytes: [UInt8]) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let done = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        guard done != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The reverse proxies whose `X-Forwarded-For` the server believes, so that the per-address rate limits count
/// clients, not the proxy in front of them. With none (the default) the TCP peer is the client and the header is
/// ignored: anyone can write it.
public struct TrustedProxies: Sendable, Equatable {
    public var networks: [IPNetwork]

    public init(_ networks: [IPNetwork] = []) { self.networks = networks }

    /// The client's address in canonical text: the TCP peer's, or — when the peer is a trusted proxy — the
    /// right-most address of `X-Forwarded-For` (all its fields, in order) that is not a trusted proxy; the left-most
    /// when all are. Only addresses that trusted proxies appended are read, so a client cannot choose its own; if
    /// one of them is not an address (a misconfigured proxy), the peer stands.
    func clientAddress(peer: String?, forwardedFor: [String]) -> String? {
        guard let peer, let peerBytes = IPNetwork.bytes(of: peer) else { return peer }
        let canonicalPeer = IPNetwork.text(of: peerBytes) ?? peer
        guard isTrusted(peerBytes) else { return canonicalPeer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        var client = canonicalPeer
        for hop in hops.reversed() {
            guard let bytes = IPNetwork.bytes(of: hop), let text = IPNetwork.text(of: bytes) else {
                return canonicalPeer
            }
            client = text
            if !isTrusted(bytes) { break }
        }
        return client
    }

    /// Whether the TCP peer `peer` is one of the trusted proxies.
    func trusts(peer: String?) -> Bool {
        guard let peer, let bytes = IPNetwork.bytes(of: peer) else { return false }
        return isTrusted(bytes)
    }

    private func isTrusted(_ address: [UInt8]) -> Bool { networks.contains { $0.contains(address) } }
}
