import Crypto
import Foundation

/// The browser's `clientDataJSON` (WebAuthn §5.8.1): which ceremony, the challenge, the page's origin. The relying
/// party checks it and signs nothing of it directly: authenticators sign its SHA-256.
public struct CollectedClientData: Sendable, Equatable {
    /// A token-binding entry (RFC 8471), still sent by some older browsers.
    public struct TokenBinding: Sendable, Equatable {
        public let status: String
        public let id: String?
    }

    /// `webauthn.create` or `webauthn.get`.
    public let type: String
    /// The challenge, decoded from its Base64URL text.
    public let challenge: Data
    public let origin: String
    /// Present when the browser says; `nil` when the key is absent.
    public let crossOrigin: Bool?
    /// The top-level origin when the ceremony ran in a frame.
    public let topOrigin: String?
    /// The token-binding object; `nil` when absent, or when an early browser sent a bare string (e.g. `"unused"`)
    /// instead of the object.
    public let tokenBinding: TokenBinding?
    /// SHA-256 of the exact bytes, which the authenticator signed.
    public let hash: Data

    /// Parses the bytes the browser sent; every member this relying party reads must have its type.
    public static func parse(_ json: Data) throws(WebAuthnError) -> CollectedClientData {
        guard let object = try? JSONSerialization.jsonObject(with: json), let fields = object as? [String: Any] else {
            throw WebAuthnError(.clientData, "Unable to decode clientDataJSON as a JSON object.")
        }
        func string(_ key: String, required: Bool) throws(WebAuthnError) -> String? {
            guard let value = fields[key] else {
                if required {
                    throw WebAuthnError(.clientData, "clientDataJSON is missing required property \"\(key)\".")
                }
                return nil
            }
            guard let text = value as? String else {
                throw WebAuthnError(.clientData, "clientDataJSON's \"\(key)\" is not a string.")
            }
            return text
        }
        let type = try string("type", required: true) ?? ""
        let challengeText = try string("challenge", required: true) ?? ""
        let origin = try string("origin", required: true) ?? ""
        let challenge = try Base64URL.decodeLenient(challengeText, field: "clientDataJSON's challenge")
        var crossOrigin: Bool?
        if let value = fields["crossOrigin"], !(value is NSNull) {
            guard let flag = value as? Bool else {
                throw WebAuthnError(.clientData, "clientDataJSON's \"crossOrigin\" is not a boolean.")
            }
            crossOrigin = flag
        }
        var tokenBinding: TokenBinding?
        if let value = fields["tokenBinding"] {
            if let entry = value as? [String: Any] {
                guard let status = entry["status"] as? String else {
                    throw WebAuthnError(
                        .clientData, "clientDataJSON's tokenBinding is missing required property \"status\".")
                }
                tokenBinding = TokenBinding(status: status, id: entry["id"] as? String)
            } else if !(value is String), !(value is NSNull) {
                throw WebAuthnError(.clientData, "clientDataJSON's tokenBinding is neither an object nor a string.")
            }
        }
        return CollectedClientData(
            type: type, challenge: challenge, origin: origin, crossOrigin: crossOrigin,
            topOrigin: try string("topOrigin", required: false), tokenBinding: tokenBinding,
            hash: Data(SHA256.hash(data: json)))
    }

    /// Checks the parts every ceremony checks (§7.1 steps 7–10, §7.2 steps 11–14).
    func check(type expectedType: String, challenge expected: Data, origins: [String], allowCrossOrigin: Bool)
        throws(WebAuthnError)
    {
        guard type == expectedType else {
            throw WebAuthnError(
                .clientData, "clientDataJSON names the ceremony \"\(type)\", expected \"\(expectedType)\".")
        }
        guard Bytes.constantTimeEqual(challenge, expected) else {
            throw WebAuthnError(.challenge, "The response answers another challenge than the one this server issued.")
        }
        guard origins.contains(origin) else {
            throw WebAuthnError(.origin, "The origin \(origin) is not one of this relying party's origins.")
        }
        if crossOrigin == true, !allowCrossOrigin {
            throw WebAuthnError(
                .crossOrigin, "The ceremony ran in a cross-origin frame, which this relying party does not allow.")
        }
        if let tokenBinding, tokenBinding.status != "present", tokenBinding.status != "supported" {
            throw WebAuthnError(.tokenBinding, "Unexpected token_binding status \"\(tokenBinding.status)\".")
        }
    }
}
