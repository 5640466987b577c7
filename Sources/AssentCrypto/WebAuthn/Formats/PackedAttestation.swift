import Foundation
import SwiftASN1
import X509

/// The `packed` format (WebAuthn §8.2): a signature over authenticator data ‖ client-data hash, by an attestation
/// certificate (`x5c`) or by the credential itself (self attestation).
enum PackedAttestation {
    static func verify(_ object: AttestationObject, signed: Data, credentialKey: COSEKey) throws(WebAuthnError) -> (
        kind: VerifiedAttestation.Kind, chain: [Certificate]
    ) {
        let signature = try AttestationVerifier.signature(object)
        guard let algorithm = object.algorithm else {
            throw WebAuthnError(.attestation, "The packed attestation has no algorithm.")
        }
        guard object.certificateChain != nil else {
            // Self attestation: the credential signs for itself, with its own algorithm.
            guard algorithm == credentialKey.algorithm.rawValue else {
                throw WebAuthnError(
                    .attestation, "A packed self attestation uses another algorithm than the credential's.")
            }
            guard try credentialKey.isValidSignature(signature, for: signed) else {
                throw WebAuthnError(.attestation, "The packed self-attestation signature does not verify.")
            }
            return (.selfAttestation, [])
        }
        let chain = try AttestationVerifier.certificates(object)
        let leaf = chain[0]
        try AttestationVerifier.verifySignature(
            signature, over: signed, by: leaf, algorithm: algorithm, format: "packed")
        try checkCertificate(leaf, aaguid: object.authenticatorData.attestedCredential?.aaguid ?? Data())
        return (.basic, chain)
    }

    /// §8.2.1's requirements of a packed attestation certificate.
    static func checkCertificate(_ leaf: Certificate, aaguid: Data) throws(WebAuthnError) {
        guard leaf.version == .v3 else {
            throw WebAuthnError(.attestation, "The packed attestation certificate is not X.509 version 3.")
        }
        let subject = leaf.subject
        for (type, name) in [
            (ASN1ObjectIdentifier.RDNAttributeType.countryName, "C"),
            (.RDNAttributeType.organizationName, "O"), (.RDNAttributeType.commonName, "CN"),
        ] where AttestationVerifier.attribute(type, in: subject).isEmpty {
            throw WebAuthnError(.attestation, "The packed attestation certificate's subject has no \(name).")
        }
        guard
            AttestationVerifier.attribute(.RDNAttributeType.organizationalUnitName, in: subject) == [
                "Authenticator Attestation"
            ]
        else {
            throw WebAuthnError(
                .attestation, "The packed attestation certificate's subject OU is not \"Authenticator Attestation\".")
        }
        try AttestationVerifier.checkAAGUIDExtension(leaf, aaguid: aaguid, format: "packed")
        try AttestationVerifier.requireNotCA(leaf, format: "packed")
    }
}
