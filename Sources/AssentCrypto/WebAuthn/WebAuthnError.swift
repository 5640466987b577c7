import Foundation

/// Why a WebAuthn response was refused: a code a program can act on and a sentence a person can read.
public struct WebAuthnError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Which check refused the response.
    public enum Code: String, Sendable {
        /// The response is not the JSON, Base64URL, CBOR or binary structure it must be.
        case malformed
        /// `clientDataJSON` is not a collected-client-data object, or names the wrong ceremony.
        case clientData
        /// The challenge is not the one the server issued.
        case challenge
        /// The page that asked is not one of the relying party's origins.
        case origin
        /// The ceremony ran in a cross-origin frame the relying party does not allow.
        case crossOrigin
        /// A token-binding status other than `present` or `supported`.
        case tokenBinding
        /// The authenticator data belongs to another relying-party ID.
        case relyingParty
        /// The user-present flag is missing.
        case userPresence
        /// The user-verified flag is missing where the policy requires it.
        case userVerification
        /// Backup state set on a credential that cannot be backed up.
        case backupFlags
        /// A key type or algorithm the relying party does not accept.
        case algorithm
        /// A public key that cannot be decoded or does not fit its algorithm.
        case key
        /// A signature that does not verify.
        case signature
        /// The signature counter did not go forward: the credential may have been cloned.
        case signCount
        /// The credential's id is not the one the response names.
        case credential
        /// An attestation format this relying party does not know.
        case attestationFormat
        /// An attestation statement that does not verify.
        case attestation
        /// An attestation whose certificate chain does not lead to a trusted root.
        case attestationTrust
        /// An algorithm this build's cryptography cannot verify.
        case unsupported
    }

    public let code: Code
    public let message: String
    public var description: String { "\(code.rawValue): \(message)" }

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension Base64URL {
    /// Decodes WebAuthn's binary fields leniently: the URL-safe alphabet as the standard says, and also the standard
    /// alphabet and `=` padding, which some browsers and libraries send (a TPM's attestation object among them).
    public static func decodeLenient(_ text: String, field: String) throws(WebAuthnError) -> Data {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.hasSuffix("=") { standard.removeLast() }
        while !standard.utf8.count.isMultiple(of: 4) { standard += "=" }
        guard let data = Data(base64Encoded: standard) else {
            throw WebAuthnError(.malformed, "\(field) is not Base64URL.")
        }
        return data
    }
}
