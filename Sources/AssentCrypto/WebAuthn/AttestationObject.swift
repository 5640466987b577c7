import Foundation
import X509

/// What `navigator.credentials.create()` returns inside `attestationObject` (WebAuthn §6.5): the authenticator
/// data with the new credential, and a statement in some format that vouches for it.
public struct AttestationObject: Sendable {
    /// `none`, `packed`, `fido-u2f`, `apple`, `android-key`, `android-safetynet`, `tpm`, or what an unknown
    /// authenticator sends.
    public let format: String
    /// The attestation statement: a CBOR map whose members depend on the format.
    public let statement: CBOR
    public let authenticatorData: AuthenticatorData

    /// Parses the CBOR map `{fmt, attStmt, authData}`.
    public static func parse(_ data: Data) throws(WebAuthnError) -> AttestationObject {
        let item: CBOR
        do {
            item = try CBORDecoder().decode(data)
        } catch {
            throw WebAuthnError(.malformed, "The attestation object is not CBOR: \(error)")
        }
        guard case .text(let format)? = item[.text("fmt")] else {
            throw WebAuthnError(.malformed, "The attestation object has no text \"fmt\".")
        }
        guard let statement = item[.text("attStmt")], case .map = statement else {
            throw WebAuthnError(.malformed, "The attestation object has no map \"attStmt\".")
        }
        guard case .bytes(let authData)? = item[.text("authData")] else {
            throw WebAuthnError(.malformed, "The attestation object has no byte string \"authData\".")
        }
        return AttestationObject(
            format: format, statement: statement, authenticatorData: try AuthenticatorData.parse(authData))
    }

    /// The statement's `alg`, when it has one.
    public var algorithm: Int? { statement[.text("alg")]?.int }
    /// The statement's `sig`, when it has one.
    public var signature: Data? {
        guard case .bytes(let value)? = statement[.text("sig")] else { return nil }
        return value
    }
    /// The statement's `x5c` as DER certificates, leaf first (`nil` when absent).
    public var certificateChain: [Data]? {
        guard case .array(let items)? = statement[.text("x5c")] else { return nil }
        return items.compactMap {
            guard case .bytes(let der) = $0 else { return nil }
            return der
        }
    }
}

extension AttestationObject {
    /// Verifies the attestation statement alone (its signature, and its chain when `trust` names roots for its
    /// format) for the credential the authenticator data carries; a registration does this after its other checks.
    public func verifyStatement(clientDataHash: Data, trust: AttestationTrust) async throws(WebAuthnError)
        -> VerifiedAttestation
    {
        guard let credential = authenticatorData.attestedCredential else {
            throw WebAuthnError(.malformed, "The authenticator data of a registration carries no credential.")
        }
        return try await AttestationVerifier.verify(
            self, clientDataHash: clientDataHash, credentialKey: try COSEKey(decoding: credential.publicKey),
            trust: trust)
    }
}
