import Foundation

/// MAC-token authentication: the `X-PowerAuth-Token` header and its digest.
public struct TokenHeader: Sendable, Equatable {
    /// The header's name.
    public static let name = "X-PowerAuth-Token"

    /// Protocol version, `3.3`.
    public var version: String
    /// The token's id.
    public var tokenId: String
    /// The digest, Base64 of 32 bytes.
    public var digest: Data
    /// The 16-byte nonce.
    public var nonce: Data
    /// Milliseconds since 1970.
    public var timestamp: UInt64

    /// Creates a header from its parts.
    public init(version: String = "3.3", tokenId: String, digest: Data, nonce: Data, timestamp: UInt64) {
        self.version = version
        self.tokenId = tokenId
        self.digest = digest
        self.nonce = nonce
        self.timestamp = timestamp
    }

    /// Parses a header value strictly.
    public init(parsing header: String) throws {
        let fields = try PowerAuthHeaderFields.parse(
            header,
            required: ["version", "token_id", "token_digest", "nonce", "timestamp"]
        )
        version = fields["version"]!
        guard version == "3.3" else {
            throw AssentCryptoError(.invalidHeader, "Unsupported token protocol version.")
        }
        tokenId = fields["token_id"]!
        guard tokenId.utf8.count <= 128 else {
            throw AssentCryptoError(.invalidHeader, "The token id is too long.")
        }
        digest = try Bytes.base64(fields["token_digest"]!, field: "Token digest", length: 32)
        nonce = try Bytes.base64(fields["nonce"]!, field: "Token nonce", length: 16)
        let timestampText = fields["timestamp"]!
        guard timestampText.utf8.count <= 19, timestampText.utf8.allSatisfy({ (48...57).contains($0) }),
            let timestamp = UInt64(timestampText)
        else {
            throw AssentCryptoError(.invalidEncoding, "The token timestamp must be decimal milliseconds.")
        }
        self.timestamp = timestamp
    }

    /// The header value.
    public var value: String {
        PowerAuthHeaderFields.format([
            ("version", version),
            ("token_id", tokenId),
            ("token_digest", digest.base64EncodedString()),
            ("nonce", nonce.base64EncodedString()),
            ("timestamp", String(timestamp)),
        ])
    }
}
