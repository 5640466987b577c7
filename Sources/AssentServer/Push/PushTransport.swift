import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization

/// How one push attempt ended, before the registration is looked at.
enum PushDelivery: Sendable, Equatable {
    case delivered
    /// The service says the device token is dead; `since` is when it last confirmed that (APNs 410), if said.
    case tokenInvalid(reason: String, since: Millis?)
    case retry(String, after: Duration?)
    case failed(String)
}

/// What a push service's answer means for the credential that went with it.
enum CredentialOutcome: Equatable {
    /// The answer, whatever it was.
    case delivery(PushDelivery)
    /// The service refused the credential as expired: renew it and send again.
    case renewCredential
}

extension PushTransport {
    /// Posts `body` to `url` with the credential `credential` gives (its argument: the credential just refused, or
    /// `nil`), and posts once more with a renewed one when `interpret` says the service refused it.
    /// - Parameters:
    ///   - service: the service's name, for failure messages.
    ///   - authorization: the `authorization` header value for a credential.
    func send(
        _ service: String, url: String, body: Data, headers: [(String, String)],
        credential: (_ refused: String?) async throws -> String, authorization: (String) -> String,
        interpret: (OutboundResponse) -> CredentialOutcome
    ) async -> PushDelivery {
        var refused: String?
        for _ in 0..<2 {
            let current: String
            do {
                current = try await credential(refused)
            } catch {
                return .retry("No \(service) credential: \(error)", after: nil)
            }
            let response: OutboundResponse
            do {
                response = try await self.send(
                    .POST, url, headers: [("authorization", authorization(current))] + headers, body: body)
            } catch {
                return .retry("\(service) did not answer: \(type(of: error))", after: nil)
            }
            PushAttemptRecorder.current?.record(status: response.status)
            switch interpret(response) {
            case .delivery(let delivery): return delivery
            case .renewCredential: refused = current
            }
        }
        return .retry("\(service) refused a renewed credential.", after: nil)
    }
}

/// Notes the HTTP status of the last push request made within a scope (``PushAttemptRecorder/current``), for the
/// delivery trace: the services' clients answer a ``PushDelivery``, which says what to do, not what was said.
final class PushAttemptRecorder: Sendable {
    @TaskLocal static var current: PushAttemptRecorder?
    private let status = Mutex<Int?>(nil)

    func record(status code: Int) { status.withLock { $0 = code } }

    /// The last status recorded, if a request got an answer.
    var lastStatus: Int? { status.withLock { $0 } }
}

/// One HTTP client per push credential, speaking HTTP/2 where the service offers it (ALPN), following no
/// redirects, and trusting the system's certificate authorities plus any configured ones.
final class PushTransport: Sendable {
    let client: HTTPClient
    let timeout: Duration

    init(settings: PushSettings) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let pem = settings.additionalTrustRootsPEM {
            do {
                tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))]
            } catch {
                throw AssentServerError.configuration("The push CA file is not PEM certificates.")
            }
        }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(
                connect: .seconds(Int64(settings.timeout.components.seconds)),
                read: .seconds(Int64(settings.timeout.components.seconds))))
        configuration.httpVersion = .automatic
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        timeout = settings.timeout
    }

    /// Sends one request; throws only when no answer came (network, TLS, timeout).
    func send(_ method: HTTPMethod, _ url: String, headers: [(String, String)], body: Data?) async throws
        -> OutboundResponse
    {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await client.execute(request, timeout: .seconds(timeout.components.seconds))
        let bytes = try await response.body.collect(upTo: 256 * 1024)
        return OutboundResponse(
            status: Int(response.status.code), headers: response.headers, body: Data(bytes.readableBytesView))
    }

    func shutdown() async {
        try? await client.shutdown()
    }

    /// A form-encoded body (`application/x-www-form-urlencoded`).
    static func form(_ fields: [(String, String)]) -> Data {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return Data(
            fields.map {
                "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
            }.joined(separator: "&").utf8)
    }
}

/// An OAuth access token kept until shortly before it expires, fetched by one caller at a time.
actor AccessTokenCache {
    private var current: (token: String, validUntil: ContinuousClock.Instant)?
    private var fetching: Task<(String, Duration), any Error>?
    /// How long before its expiry a token is replaced.
    let margin: Duration

    init(margin: Duration = .seconds(300)) { self.margin = margin }

    /// The cached token, or a new one from `fetch` (which returns the token and its lifetime).
    func token(fetch: @escaping @Sendable () async throws -> (String, Duration)) async throws -> String {
        if let current, ContinuousClock.now < current.validUntil { return current.token }
        let task = fetching ?? Task { try await fetch() }
        fetching = task
        defer { fetching = nil }
        let (token, lifetime) = try await task.value
        let usable = max(lifetime - margin, lifetime / 2)
        current = (token, .now + usable)
        return token
    }

    /// Forgets `token` after the service refused it, so the next call fetches a new one.
    func invalidate(_ token: String) {
        if current?.token == token { current = nil }
    }

    /// The cached token, or a new one when the cached one is `refused`.
    func token(replacing refused: String?, fetch: @escaping @Sendable () async throws -> (String, Duration))
        async throws -> String
    {
        if let refused { invalidate(refused) }
        return try await token(fetch: fetch)
    }
}
