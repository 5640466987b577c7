import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one way the server sends a request to a URL someone else chose — Web Push endpoints, webhooks, CIBA
/// callbacks, back-channel logouts, the phone gateway: it resolves the host once, refuses what ``EgressPolicy``
/// refuses, connects to exactly the address it checked (no second look-up, so a DNS answer that changes between
/// check and connection — rebinding — reaches nothing new), never follows a redirect, and bounds the time and the
/// size of the answer. Registrations call ``check(_:)`` to refuse such a URL at once, with a sentence.
public struct Egress: Sendable {
    /// Which addresses may be reached.
    public var policy: EgressPolicy
    /// Certificate authorities trusted besides the system's (`serve --push-ca-file`).
    public var trustRoots: [NIOSSLCertificate]
    /// How long one request may take, connection included.
    public var timeout: Duration = .seconds(10)
    /// The largest answer read; a longer one is a failure.
    public var maximumResponseBytes = 256 * 1024
    /// Resolves a host name to its addresses (4 or 16 bytes each); the system's resolver unless a test says.
    let resolve: @Sendable (String) async throws -> [[UInt8]]

    /// The longest URL accepted, in characters.
    public static let maximumURLLength = 2_048

    public init(
        policy: EgressPolicy = EgressPolicy(), trustRoots: [NIOSSLCertificate] = [],
        resolve: @escaping @Sendable (String) async throws -> [[UInt8]] = Egress.systemResolve
    ) {
        self.policy = policy
        self.trustRoots = trustRoots
        self.resolve = resolve
    }

    /// A URL the policy allows, and the address requests to it go to.
    public struct Target: Sendable, Equatable {
        public var url: String
        /// The URL's host as written (brackets removed).
        public var host: String
        /// The address checked, in canonical text; `nil` when ``check(_:)`` could not resolve the host (it is
        /// checked again at every request).
        public var address: String?
    }

    /// Why a URL is refused: a sentence for whoever gave it.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public var description: String { message }

        /// Plain `http` to a network the operator did not allow.
        static let plainHTTP = Refusal(
            message: "The URL must be https: plain http goes only to networks the server's operator allows "
                + "(assent serve --egress-allow).")
    }

    /// Why a request got no usable answer.
    public enum Failure: Error, Sendable, Equatable {
        /// The policy refused the URL: sending again will not help.
        case refused(String)
        /// No answer (network, TLS, timeout) or one too large: another attempt may succeed.
        case noAnswer(String)

        public var reason: String {
            switch self {
            case .refused(let reason), .noAnswer(let reason): reason
            }
        }
    }

    /// Checks `text` as a destination someone registers: an absolute `https` URL (plain `http` only to an
    /// allow-listed network) with a host and no credentials or fragment, whose host is or resolves to an address the
    /// policy allows. A host name that does not resolve now is accepted (without an address): every request checks
    /// again.
    public func check(_ text: String) async throws(Refusal) -> Target {
        try await evaluate(text, requiringAddress: false)
    }

    private func evaluate(_ text: String, requiringAddress: Bool) async throws(Refusal) -> Target {
        guard text.utf8.count <= Self.maximumURLLength,
            text.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 32 && $0.value < 127 })
        else {
            throw Refusal(message: "The URL must be at most \(Self.maximumURLLength) printable ASCII characters.")
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "https" || scheme == "http", let rawHost = components.host, !rawHost.isEmpty,
            components.user == nil, components.password == nil, components.fragment == nil
        else {
            throw Refusal(
                message: "The URL must be an absolute http(s) URL with a host, without credentials or fragment.")
        }
        let host = Self.unbracketed(rawHost)
        // The HTTP client reads the URL with `URL`: a host it would read otherwise would escape the check.
        guard let clientHost = URL(string: text)?.host, Self.unbracketed(clientHost) == host else {
            throw Refusal(message: "The URL's host is ambiguous.")
        }
        let addresses: [[UInt8]]
        if let literal = EgressPolicy.literalAddress(host) {
            addresses = [literal]
        } else {
            let found = try? await resolve(host)
            guard let found, !found.isEmpty else {
                if requiringAddress { throw Refusal(message: "The host \(host) has no address.") }
                guard scheme == "https" else {
                    throw Refusal.plainHTTP
                }
                return Target(url: text, host: host, address: nil)
            }
            addresses = found
        }
        var refusal: (address: [UInt8], category: EgressPolicy.Category)?
        for address in addresses {
            switch policy.decision(for: address) {
            case .refused(let category):
                if refusal == nil { refusal = (address, category) }
            case .allowed:
                let addressText = IPNetwork.text(of: address) ?? host
                guard scheme == "https" || policy.isAllowListed(address) else {
                    throw Refusal.plainHTTP
                }
                return Target(url: text, host: host, address: addressText)
            }
        }
        let (address, category) = refusal!
        let addressText = IPNetwork.text(of: address) ?? host
        let named = addressText == host ? addressText : "\(host) (\(addressText))"
        throw Refusal(
            message: "\(named) is \(category.rawValue): the server sends nothing there unless its operator allows "
                + "that network (assent serve --egress-allow).")
    }

    /// Sends one request to `url` after ``check(_:)``, to the checked address, and reads at most
    /// ``maximumResponseBytes`` of the answer.
    public func send(_ method: HTTPMethod, _ url: String, headers: [(String, String)], body: Data?)
        async
        throws(Failure) -> OutboundResponse
    {
        let target: Target
        let address: String
        do {
            target = try await evaluate(url, requiringAddress: true)
            address = target.address ?? target.host
        } catch {
            throw .refused(error.message)
        }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tlsConfiguration, redirectConfiguration: .disallow,
            timeout: .init(
                connect: .seconds(Int64(timeout.components.seconds)),
                read: .seconds(Int64(timeout.components.seconds))))
        configuration.httpVersion = .automatic
        // A host that is no literal address would be looked up again when connecting: map it to the address
        // checked. A literal (as the HTTP client reads it) is connected to as written, which is what was checked.
        if IPNetwork.bytes(of: target.host, keepingMappedIPv6: true) == nil {
            configuration.dnsOverride = [target.host: address]
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let outcome: Result<OutboundResponse, Failure>
        do {
            let response = try await client.execute(request, timeout: .seconds(timeout.components.seconds))
            do {
                let bytes = try await response.body.collect(upTo: maximumResponseBytes)
                outcome = .success(
                    OutboundResponse(
                        status: Int(response.status.code), headers: response.headers,
                        body: Data(bytes.readableBytesView)))
            } catch is NIOTooManyBytesError {
                outcome = .failure(.noAnswer("The answer was longer than \(maximumResponseBytes) bytes."))
            }
        } catch {
            outcome = .failure(.noAnswer("No answer from \(target.host): \(type(of: error))"))
        }
        try? await client.shutdown()
        return try outcome.get()
    }

    private static func unbracketed(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    private var tlsConfiguration: TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if !trustRoots.isEmpty { tls.additionalTrustRoots = [.certificates(trustRoots)] }
        return tls
    }

    /// The addresses the system's resolver (`getaddrinfo`) gives for `host`, run off the event loops. Special-use
    /// names (RFC 6761) are answered without asking the network: `localhost` and `*.localhost` are loopback,
    /// `*.invalid`, `*.test` and `*.example` have no address.
    public static func systemResolve(_ host: String) async throws -> [[UInt8]] {
        let name = host.lowercased().hasSuffix(".") ? String(host.lowercased().dropLast()) : host.lowercased()
        if name == "localhost" || name.hasSuffix(".localhost") {
            return [[127, 0, 0, 1], Array(repeating: 0, count: 15) + [1]]
        }
        for reserved in ["invalid", "test", "example"] where name == reserved || name.hasSuffix("." + reserved) {
            return []
        }
        return try await NIOThreadPool.singleton.runIfActive {
            var hints = addrinfo()
            hints.ai_family = AF_UNSPEC
            #if canImport(Glibc)
                hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            #else
                hints.ai_socktype = SOCK_STREAM
            #endif
            var list: UnsafeMutablePointer<addrinfo>?
            let status = getaddrinfo(host, nil, &hints, &list)
            guard status == 0, let first = list else { throw Refusal(message: "no address") }
            defer { freeaddrinfo(first) }
            var addresses: [[UInt8]] = []
            var next: UnsafeMutablePointer<addrinfo>? = first
            while let entry = next {
                if let address = entry.pointee.ai_addr {
                    switch Int32(entry.pointee.ai_family) {
                    case AF_INET:
                        var v4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                        addresses.append(withUnsafeBytes(of: &v4) { Array($0) })
                    case AF_INET6:
                        var v6 = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                            $0.pointee.sin6_addr
                        }
                        addresses.append(withUnsafeBytes(of: &v6) { Array($0) })
                    default: break
                    }
                }
                next = entry.pointee.ai_next
            }
            var seen = Set<[UInt8]>()
            return addresses.filter { seen.insert($0).inserted }
        }
    }

    /// Reads PEM certificates (a CA file's contents).
    public static func certificates(pem: String) throws -> [NIOSSLCertificate] {
        do {
            return try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8))
        } catch {
            throw AssentServerError.configuration("The CA file is not PEM certificates.")
        }
    }
}

/// What a server answered to a request the server made: status, headers and (a bounded) body.
public struct OutboundResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: Data

    /// The `Retry-After` header as a delay: seconds, or an HTTP date.
    var retryAfter: Duration? {
        guard let value = headers.first(name: "retry-after")?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let seconds = Int(value) { return .seconds(max(0, seconds)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return .seconds(max(0, Int(date.timeIntervalSinceNow.rounded(.up))))
    }
}
