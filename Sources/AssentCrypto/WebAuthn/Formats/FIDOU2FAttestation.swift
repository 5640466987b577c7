import Crypto
import Foundation
import X509

/// The `fido-u2f` format (WebAuthn §8.6): a U2F authenticator's registration signature over
/// `00 ‖ rpIdHash ‖ clientDataHash ‖ credentialId ‖ 04 ‖ x ‖ y`, by its one P-256 attestation certificate.
enum FIDOU2FAttestation {
    static func verify(_ object: AttestationObject, clientDataHash: Data, credentialKey: COSEKey) throws(WebAuthnError)
        -> (kind: VerifiedAttestation.Kind, chain: [Certificate])
    {
        let signature = try AttestationVerifier.signature(object)
        let chain = try AttestationVerifier.certificates(object)
        guard chain.count == 1, P256.Signing.PublicKey(chain[0].publicKey) != nil else {
            throw WebAuthnError(.attestation, "A fido-u2f attestation has exactly one certificate, with a P-256 key.")
        }
        guard credentialKey.algorithm == .es256, case .ec2(1, let x, let y) = credentialKey.material else {
            throw WebAuthnError(.attestation, "A fido-u2f credential's key is ES256 on P-256.")
        }
        let data = object.authenticatorData
        guard let credential = data.attestedCredential else {
            throw WebAuthnError(.attestation, "The fido-u2f attestation names no credential.")
        }
        let signed = Data([0]) + data.rpIDHash + clientDataHash + credential.credentialID + Data([4]) + x + y
        try AttestationVerifier.verifySignature(
            signature, over: signed, by: chain[0], algorithm: -7, format: "fido-u2f")
        return (.basic, chain)
    }
}
