/// The `X-PowerAuth-Encryption` header that names the ECIES scope of an encrypted request.
public struct EncryptionHeader: Sendable, Equatable {
    /// The header's name.
    public static let name = "X-PowerAuth-Encryption"

    /// Protocol version, `3.3`.
    public var version: String
    /// The application key (Base64 text).
    public var applicationKey: String
    /// The activation, present for activation scope only.
    public var activationId: String?

    /// Creates a header from its parts.
    public init(version: String = "3.3", applicationKey: String, activationId: String? = nil) {
        self.version = version
        self.applicationKey = applicationKey
        self.activationId = activationId
    }

    /// Parses a header value strictly.
    public init(parsing header: String) throws {
        let fields = try PowerAuthHeaderFields.parse(
            header,
            required: ["version", "application_key"],
            optional: ["activation_id"]
        )
        version = fields["version"]!
        guard version == "3.3" else {
            throw AssentCryptoError(.invalidHeader, "Unsupported encryption protocol version.")
        }
        applicationKey = fields["application_key"]!
        _ = try Bytes.base64(applicationKey, field: "Application key", length: 16)
        activationId = fields["activation_id"]
    }

    /// The header value.
    public var value: String {
        var fields = [("version", version), ("application_key", applicationKey)]
        if let activationId { fields.append(("activation_id", activationId)) }
        return PowerAuthHeaderFields.format(fields)
    }
}
