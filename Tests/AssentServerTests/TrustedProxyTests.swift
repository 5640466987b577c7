import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// The client address behind reverse proxies: `X-Forwarded-For` believed only from trusted peers, read from the
/// right, and the per-address rate limits counting clients (an IPv6 client per /64) instead of the proxy.
@Suite("Trusted proxies")
struct TrustedProxyTests {
    @Test("Networks parse as address/prefix or one address; anything else is refused with a reason")
    func networks() throws {
        let ten = try IPNetwork(parsing: "10.1.2.3/8")
        #expect(ten.description == "10.0.0.0/8")
        #expect(ten.contains(IPNetwork.bytes(of: "10.255.0.1")!))
        #expect(!ten.contains(IPNetwork.bytes(of: "11.0.0.1")!))
        #expect(try IPNetwork(parsing: "192.0.2.7").description == "192.0.2.7/32")
        let v6 = try IPNetwork(parsing: "fd00::/8")
        #expect(v6.contains(IPNetwork.bytes(of: "fd12:3456::1")!))
        #expect(!v6.contains(IPNetwork.bytes(of: "fe80::1")!))
        #expect(try IPNetwork(parsing: "10.0.0.0/12").contains(IPNetwork.bytes(of: "10.15.255.255")!))
        #expect(try !IPNetwork(parsing: "10.0.0.0/12").contains(IPNetwork.bytes(of: "10.16.0.0")!))
        // An IPv4-mapped IPv6 address is the IPv4 address.
        #expect(ten.contains(IPNetwork.bytes(of: "::ffff:10.0.0.9")!))
        // What the per-address limits count: an IPv4 address, an IPv6 address's /64.
        #expect(IPNetwork.limitKey(of: "198.51.100.7") == "198.51.100.7")
        #expect(IPNetwork.limitKey(of: "::ffff:198.51.100.7") == "198.51.100.7")
        #expect(IPNetwork.limitKey(of: "2001:DB8:1:2:aaaa:bbbb:cccc:dddd") == "2001:db8:1:2::/64")
        #expect(IPNetwork.limitKey(of: "2001:db8:1:2::1") == "2001:db8:1:2::/64")
        #expect(IPNetwork.limitKey(of: "2001:db8:1:3::1") == "2001:db8:1:3::/64")
        #expect(IPNetwork.limitKey(of: "::1") == "::/64")
        #expect(IPNetwork.limitKey(of: "unknown") == "unknown")
        for bad in ["10.0.0.0/33", "::/129", "10.0.0.0/-1", "10.0.0.0/", "proxy.example", "10.0.0", ""] {
            #expect(throws: AssentServerError.self, "\(bad)") { try IPNetwork(parsing: bad) }
        }
    }

    @Test("The client is the right-most forwarded address that is not a trusted proxy, and only behind one")
    func resolution() throws {
        let proxies = TrustedProxies([try IPNetwork(parsing: "10.0.0.0/8"), try IPNetwork(parsing: "::1")])
        // From an untrusted peer the header is anyone's words.
        #expect(proxies.clientAddress(peer: "198.51.100.7", forwardedFor: ["203.0.113.1"]) == "198.51.100.7")
        // Behind a proxy: the address it appended.
        #expect(proxies.clientAddress(peer: "10.0.0.2", forwardedFor: ["203.0.113.1"]) == "203.0.113.1")
        // A client that writes the header itself only adds addresses to the left of the one its proxy appended.
        #expect(
            proxies.clientAddress(peer: "10.0.0.2", forwardedFor: ["6.6.6.6, 203.0.113.1, 10.0.0.3"]) == "203.0.113.1")
        // Several header fields are one list, in order.
        #expect(
            proxies.clientAddress(peer: "::1", forwardedFor: ["6.6.6.6", "2001:DB8::1 ,10.9.9.9"]) == "2001:db8::1")
        // Every hop trusted: the left-most is the client. No header: the proxy itself.
        #expect(proxies.clientAddress(peer: "10.0.0.2", forwardedFor: ["10.0.0.5, 10.0.0.6"]) == "10.0.0.5")
        #expect(proxies.clientAddress(peer: "10.0.0.2", forwardedFor: []) == "10.0.0.2")
        // A hop that is not an address (a misconfigured proxy): the peer stands.
        #expect(proxies.clientAddress(peer: "10.0.0.2", forwardedFor: ["203.0.113.1, unknown"]) == "10.0.0.2")
        // Nothing trusted: always the peer, in canonical form.
        #expect(TrustedProxies().clientAddress(peer: "::ffff:10.0.0.2", forwardedFor: ["1.2.3.4"]) == "10.0.0.2")
    }

    @Test(
        "Over HTTP: behind a trusted proxy each client has its own operator-key limit; otherwise the header is ignored")
    func rateLimitsPerClient() async throws {
        var limits = RateLimits()
        limits.operatorKeyFailuresPerAddress = RateLimitRule(limit: 2, window: 300)
        for trusted in [true, false] {
            var configured = try await TestServer.make(.sqlite, rateLimits: limits)
            if trusted {
                configured.environment.trustedProxies = TrustedProxies([try IPNetwork(parsing: "127.0.0.1")])
            }
            let server = configured
            defer { Task { await server.shutdown() } }
            let proxyTrusted = trusted
            try await server.live { client in
                #expect(try await Self.guess(client, from: "198.51.100.1") == 401)
                #expect(try await Self.guess(client, from: "198.51.100.1") == 401)
                #expect(try await Self.guess(client, from: "198.51.100.1") == 429)
                // Another client behind the same proxy is not locked out; without a trusted proxy, the header
                // names nobody and the loopback peer is limited.
                let other = try await Self.guess(client, from: "198.51.100.2")
                #expect(other == (proxyTrusted ? 401 : 429), "trusted: \(proxyTrusted)")
                guard proxyTrusted else { return }
                // IPv6 clients count per /64: a fresh address in the same /64 is the same client.
                #expect(try await Self.guess(client, from: "2001:db8:1:2::a") == 401)
                #expect(try await Self.guess(client, from: "2001:db8:1:2:ffff::b") == 401)
                #expect(try await Self.guess(client, from: "2001:db8:1:2:1234:5678:9abc:def0") == 429)
                #expect(try await Self.guess(client, from: "2001:db8:1:3::a") == 401)
            }
        }
    }

    /// A wrong operator key from a client its proxy names as `address`; the answer's status.
    static func guess(_ client: HTTPClient, from address: String) async throws -> Int {
        try await client.send(
            "GET", "/api/v1/audit", headers: ["Authorization": "Bearer ak_wrong", "X-Forwarded-For": address]
        ).status
    }
}
