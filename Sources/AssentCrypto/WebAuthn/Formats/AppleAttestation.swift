import Crypto
import Foundation
import SwiftASN1
import X509

/// The `apple` format (WebAuthn §8.8): Apple's anonymization CA certifies the credential's own key, with the
/// SHA-256 of authenticator data ‖ client-data hash as a nonce in the certificate.
enum AppleAttestation {
    /// The extension carrying the nonce: `SEQUENCE { [1] EXPLICIT OCTET STRING nonce }`.
    static let nonceExtension: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 8, 2]

    static func verify(_ object: AttestationObject, signed: Data, credentialKey: COSEKey) throws(WebAuthnError) -> (
        kind: VerifiedAttestation.Kind, chain: [Certificate]
    ) {
        let chain = try AttestationVerifier.certificates(object)
        let leaf = chain[0]
        guard let value = leaf.extensions[oid: nonceExtension]?.value, let nonce = try? Self.nonce(value) else {
            throw WebAuthnError(.attestation, "The apple attestation certificate carries no nonce.")
        }
        guard Bytes.constantTimeEqual(nonce, Data(SHA256.hash(data: signed))) else {
            throw WebAuthnError(.attestation, "The apple attestation's nonce is not this registration's.")
        }
        try AttestationVerifier.requireSameKey(leaf, credentialKey, format: "apple")
        return (.anonymizationCA, chain)
    }

    private static func nonce(_ value: ArraySlice<UInt8>) throws -> Data {
        let root = try DER.parse(value)
        guard case .constructed(let members) = root.content, let tagged = members.first(where: { _ in true }),
            tagged.identifier == ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific),
            case .constructed(let inner) = tagged.content, let octets = inner.first(where: { _ in true })
        else { throw WebAuthnError(.attestation, "The apple nonce extension is not SEQUENCE { [1] OCTET STRING }.") }
        return Data(try ASN1OctetString(derEncoded: octets).bytes)
    }
}
