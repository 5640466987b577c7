import Foundation

/// The `X-PowerAuth-Authorization` header of a signed request.
public struct AuthorizationHeader: Sendable, Equatable {
    /// The header's name.
    public static let name = "X-PowerAuth-Authorization"

    /// Protocol version, `3.0` to `3.3`.
    public var version: String
    /// The activation that signed.
    public var activationId: String
    /// The application key (Base64 of 16 bytes).
    public var applicationKey: String
    /// The 16-byte request nonce.
    public var nonce: Data
    /// The factors used.
    public var signatureType: SignatureType
    /// The signature text (decimal for 3.0, Base64 for 3.1+).
    public var signature: String

    /// Creates a header from its parts.
    public init(
        version: String = "3.3",
        activationId: String,
        applicationKey: String,
        nonce: Data,
        signatureType: SignatureType,
        signature: String
    ) {
        self.version = version
        self.activationId = activationId
        self.applicationKey = applicationKey
        self.nonce = nonce
        self.signatureType = signatureType
        self.signature = signature
    }

    /// Parses and validates a header value: every field present once, a known version and signature type,
    /// a 16-byte nonce and application key, and a signature whose shape matches version and type.
    public init(parsing header: String) throws {
        let fields = try PowerAuthHeaderFields.parse(
            header,
            required: [
                "pa_version", "pa_activation_id", "pa_application_key", "pa_nonce", "pa_signature_type",
                "pa_signature",
            ]
        )
        version = fields["pa_version"]!
        let format = try SignatureFormat(protocolVersion: version)
        activationId = fields["pa_activation_id"]!
        guard activationId.utf8.count <= 128 else {
            throw AssentCryptoError(.invalidHeader, "The activation id is too long.")
        }
        applicationKey = fields["pa_application_key"]!
        _ = try Bytes.base64(applicationKey, field: "Application key", length: 16)
        nonce = try Bytes.base64(fields["pa_nonce"]!, field: "Nonce", length: 16)
        signatureType = try SignatureType(parsing: fields["pa_signature_type"]!)
        signature = fields["pa_signature"]!
        guard Self.signature(signature, fits: format, factorCount: signatureType.factors.count) else {
            throw AssentCryptoError(.invalidSignature, "The signature does not have the shape its type requires.")
        }
    }

    /// The header value.
    public var value: String {
        PowerAuthHeaderFields.format([
            ("pa_version", version),
            ("pa_activation_id", activationId),
            ("pa_application_key", applicationKey),
            ("pa_nonce", nonce.base64EncodedString()),
            ("pa_signature_type", signatureType.rawValue),
            ("pa_signature", signature),
        ])
    }

    static func signature(_ signature: String, fits format: SignatureFormat, factorCount: Int) -> Bool {
        switch format {
        case .base64:
            return Data(base64Encoded: signature)?.count == 16 * factorCount
        case .decimal(let length):
            let parts = signature.split(separator: "-", omittingEmptySubsequences: false)
            return parts.count == factorCount
                && parts.allSatisfy { $0.utf8.count == length && $0.utf8.allSatisfy { (48...57).contains($0) } }
        }
    }
}
