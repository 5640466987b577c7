import Foundation

/// Making and checking the token digest, apart from the header's parsing, which the fuzzer builds without the crypto
/// library.
extension TokenHeader {
    /// Creates a fresh header for a request: a random nonce and the digest over it.
    public static func make(
        tokenId: String,
        tokenSecret: Data,
        timestamp: UInt64,
        nonce: Data = Bytes.random(count: 16),
        version: String = "3.3"
    ) -> TokenHeader {
        TokenHeader(
            version: version,
            tokenId: tokenId,
            digest: digest(tokenSecret: tokenSecret, nonce: nonce, timestamp: timestamp, version: version),
            nonce: nonce,
            timestamp: timestamp
        )
    }

    /// `HMAC-SHA256(tokenSecret, nonce ‖ "&" ‖ timestamp ‖ "&" ‖ version)`.
    public static func digest(tokenSecret: Data, nonce: Data, timestamp: UInt64, version: String = "3.3") -> Data {
        var data = nonce
        data.append(Data("&\(timestamp)&\(version)".utf8))
        return HMACSHA256.mac(key: tokenSecret, data: data)
    }

    /// Whether the digest was made with `tokenSecret`, compared in constant time.
    ///
    /// Freshness of the timestamp and uniqueness of the nonce are the server's to check.
    public func isDigestValid(tokenSecret: Data) -> Bool {
        Bytes.constantTimeEqual(
            Self.digest(tokenSecret: tokenSecret, nonce: nonce, timestamp: timestamp, version: version),
            digest
        )
    }
}
