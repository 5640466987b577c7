import Foundation

/// Voluntary Application Server Identification (RFC 8292): an ES256 JWT naming the push service's origin, an expiry
/// and the sender's contact, sent as `Authorization: vapid t=<jwt>, k=<public key>`.
public enum VAPID {
    /// The longest a token may be valid (RFC 8292 §2: no more than 24 hours from the request).
    public static let maximumLifetime: TimeInterval = 86_400

    /// The claims of a VAPID token.
    public struct Claims: Codable, Sendable, Equatable {
        /// The push resource's origin, e.g. `https://push.example.net`.
        public var aud: String
        /// Expiry, seconds since 1970.
        public var exp: Int64
        /// The sender's contact: `mailto:` or `https:`.
        public var sub: String?

        public init(aud: String, exp: Int64, sub: String?) {
            self.aud = aud
            self.exp = exp
            self.sub = sub
        }
    }

    /// The origin of a push endpoint (`scheme://host[:port]`, the port only when not the scheme's default).
    /// - Throws: `invalidEncoding` for a URL without scheme or host.
    public static func audience(of endpoint: URL) throws -> String {
        guard let scheme = endpoint.scheme?.lowercased(), let host = endpoint.host?.lowercased(), !host.isEmpty else {
            throw AssentCryptoError(.invalidEncoding, "The push endpoint has no origin.")
        }
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let defaultPort = scheme == "https" ? 443 : scheme == "http" ? 80 : nil
        if let port = endpoint.port, port != defaultPort { return "\(scheme)://\(bracketed):\(port)" }
        return "\(scheme)://\(bracketed)"
    }

    /// The `Authorization` header value for a request to a push resource of `audience`.
    public static func authorization(audience: String, subject: String?, expiresAt: Date, key: ECPrivateKey) throws
        -> String
    {
        let claims = Claims(aud: audience, exp: Int64(expiresAt.timeIntervalSince1970.rounded(.down)), sub: subject)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let token = try CompactJWS.sign(payload: try encoder.encode(claims), with: .es256(key))
        return "vapid t=\(token), k=\(Base64URL.encode(key.publicKey.x963))"
    }

    /// What a push service checks of a request's `Authorization` (RFC 8292 §3 and §4): the `vapid` scheme with `t`
    /// and `k`, the token signed by `k`, its `aud` equal to `audience`, and its `exp` in the future but no more than
    /// 24 hours ahead of `now`. `expectedKey` (the `applicationServerKey` of a restricted subscription), when
    /// given, must equal `k`.
    /// - Returns: the claims and the sender's public key.
    /// - Throws: `invalidHeader` for another scheme or missing parameters, `invalidSignature` for a bad signature,
    ///   another audience, an expired or too distant expiry, or a key other than the expected one.
    public static func verify(
        authorization header: String, audience: String, now: Date = Date(), expectedKey: ECPublicKey? = nil
    ) throws -> (claims: Claims, key: ECPublicKey) {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("vapid ") else {
            throw AssentCryptoError(.invalidHeader, "The Authorization header does not use the vapid scheme.")
        }
        var parameters: [String: String] = [:]
        for part in trimmed.dropFirst(6).split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            parameters[pair[0].lowercased()] = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        guard let token = parameters["t"], let keyText = parameters["k"] else {
            throw AssentCryptoError(.invalidHeader, "A vapid authorization carries t (the token) and k (the key).")
        }
        let keyBytes = try Base64URL.decode(keyText)
        guard keyBytes.count == 65 else {
            throw AssentCryptoError(.invalidKey, "k is an uncompressed P-256 public key (65 octets).")
        }
        let key = try ECPublicKey(x963: keyBytes)
        if let expectedKey, expectedKey != key {
            throw AssentCryptoError(.invalidSignature, "The token is signed by another key than the subscription's.")
        }
        let payload = try CompactJWS.verify(token, with: .es256(key))
        guard let claims = try? JSONDecoder().decode(Claims.self, from: payload) else {
            throw AssentCryptoError(.invalidEncoding, "The VAPID claims are not aud, exp and sub.")
        }
        guard claims.aud == audience else {
            throw AssentCryptoError(.invalidSignature, "The token is for \(claims.aud), not \(audience).")
        }
        let seconds = now.timeIntervalSince1970
        guard Double(claims.exp) > seconds else {
            throw AssentCryptoError(.invalidSignature, "The token has expired.")
        }
        guard Double(claims.exp) <= seconds + maximumLifetime else {
            throw AssentCryptoError(.invalidSignature, "The token expires more than 24 hours from now.")
        }
        return (claims, key)
    }
}
