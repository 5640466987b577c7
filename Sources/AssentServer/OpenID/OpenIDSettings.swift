import AssentModel
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// The OpenID provider's settings.
public struct OpenIDSettings: Sendable {
    /// The issuer URL set by the operator (`assent serve --issuer`): the public HTTPS URL clients reach.
    public var configuredIssuer: String?
    /// Where this process listens, once it does (shared by every copy of the settings).
    let listening = ListeningAddress()

    /// The issuer (`iss` of every ID token; discovery is served under it): the configured one, else
    /// `http://HOST:PORT` this process listens on.
    public var issuer: String { configuredIssuer ?? listening.url ?? "http://127.0.0.1:8080" }
    /// Lifetime of access and ID tokens, seconds.
    public var tokenLifetime = 600
    /// How long a CIBA request waits for the user when the client asks for nothing else, seconds.
    public var defaultExpiry = 300
    /// The range a client's `requested_expiry` may choose from, seconds.
    public var expiryRange = 30...3_600
    /// The `interval` of poll and ping clients, seconds (a too-early poll adds ``slowDownPenalty``).
    public var pollInterval = 5
    /// Seconds added to a request's interval by each `slow_down`.
    public var slowDownPenalty = 5
    /// The longest `binding_message`, in characters.
    public var bindingMessageLimit = 128
    /// How long an authorization code may wait for its redemption, seconds (OpenID Connect Core §3.1.2.5 asks for
    /// a short life; RFC 6749 §4.1.2 recommends at most ten minutes).
    public var codeLifetime = 60
    /// How long a refresh token may wait for its use, seconds (each refresh issues a new one with a new lifetime).
    public var refreshTokenLifetime = 2_592_000
    /// How long the hosted pages' signed-in session (the single-sign-on session) lasts after its latest use, seconds.
    public var sessionLifetime = 28_800
    /// How long a retired signing key stays published after it stopped signing (at least the token lifetime).
    public var retiredKeyLifetime = 86_400

    public init() {}

    /// The issuer without a trailing slash, for building endpoint URLs.
    public var base: String { issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer }
}

/// The URL a running server listens on, known only once it runs (port 0 picks one).
final class ListeningAddress: Sendable {
    private let value = Mutex<String?>(nil)
    var url: String? { value.withLock { $0 } }
    func set(host: String, port: Int) { value.withLock { $0 = "http://\(host):\(port)" } }
}

/// An OAuth error answer (RFC 6749 §5.2; CIBA Core §11, §13) with its HTTP status.
struct OAuthError: RenderedError, Sendable {
    let error: OAuthErrorCode
    let description: String
    let status: HTTPResponse.Status
    var code: String { error.rawValue }

    static let pragma = HTTPField.Name("Pragma")!

    init(_ error: OAuthErrorCode, _ description: String, status: HTTPResponse.Status = .badRequest) {
        self.error = error
        self.description = description
        self.status = status
    }

    static func invalidRequest(_ description: String) -> OAuthError { OAuthError(.invalidRequest, description) }
    static func invalidClient(_ description: String = "Client authentication failed.") -> OAuthError {
        OAuthError(.invalidClient, description, status: .unauthorized)
    }
    static func invalidGrant(_ description: String) -> OAuthError { OAuthError(.invalidGrant, description) }

    /// The JSON answer, never cached; a 401 names the Basic scheme (RFC 6749 §5.2).
    var response: Response {
        let body = OAuthErrorResponse(error: code, errorDescription: Self.printable(description))
        var headers: HTTPFields = [
            .contentType: "application/json", .cacheControl: "no-store", OAuthError.pragma: "no-cache",
        ]
        if status == .unauthorized { headers[.wwwAuthenticate] = #"Basic realm="assent""# }
        let data = (try? JSONEncoder().encode(body)) ?? Data()
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// `error_description` allows %x20-21 / %x23-5B / %x5D-7E only (no quote, no backslash, ASCII).
    static func printable(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { scalar in
                    (0x20...0x7E).contains(scalar.value) && scalar != "\"" && scalar != "\\" ? scalar : "'"
                }))
    }
}
