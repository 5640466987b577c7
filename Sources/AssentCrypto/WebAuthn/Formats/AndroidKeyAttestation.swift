import Foundation
import SwiftASN1
import X509

/// The `android-key` format (WebAuthn §8.4): Android Keystore's attestation certificate for the credential's own key,
/// whose key description says the challenge (the client-data hash), that the key was generated in the keystore and
/// is for signing, and that it is bound to this app.
enum AndroidKeyAttestation {
    /// The Android key attestation extension (KeyDescription).
    static let keyDescription: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 11129, 2, 1, 17]
    /// AuthorizationList tags: purpose, allApplications, origin.
    static let purposeTag: UInt = 1
    static let allApplicationsTag: UInt = 600
    static let originTag: UInt = 702
    /// KM_PURPOSE_SIGN and KM_ORIGIN_GENERATED.
    static let purposeSign = 2
    static let originGenerated = 0

    static func verify(_ object: AttestationObject, signed: Data, clientDataHash: Data, credentialKey: COSEKey)
        throws(WebAuthnError) -> (kind: VerifiedAttestation.Kind, chain: [Certificate])
    {
        let signature = try AttestationVerifier.signature(object)
        let chain = try AttestationVerifier.certificates(object)
        let leaf = chain[0]
        try AttestationVerifier.verifySignature(
            signature, over: signed, by: leaf, algorithm: object.algorithm, format: "android-key")
        try AttestationVerifier.requireSameKey(leaf, credentialKey, format: "android-key")
        guard let value = leaf.extensions[oid: keyDescription]?.value, let description = try? KeyDescription(value)
        else {
            throw WebAuthnError(
                .attestation, "The android-key attestation certificate has no readable key description.")
        }
        guard Bytes.constantTimeEqual(description.challenge, clientDataHash) else {
            throw WebAuthnError(.attestation, "The android-key attestation challenge is not this registration's.")
        }
        let lists = [description.softwareEnforced, description.teeEnforced]
        guard !lists.contains(where: { $0.allApplications }) else {
            throw WebAuthnError(.attestation, "The android-key credential is usable by every app on the device.")
        }
        guard lists.contains(where: { $0.origin == originGenerated }) else {
            throw WebAuthnError(.attestation, "The android-key credential was not generated in the keystore.")
        }
        guard lists.contains(where: { $0.purposes.contains(purposeSign) }) else {
            throw WebAuthnError(.attestation, "The android-key credential is not for signing.")
        }
        return (.basic, chain)
    }

    /// The parts of `KeyDescription` WebAuthn asks about.
    struct KeyDescription {
        struct AuthorizationList {
            var purposes: [Int] = []
            var origin: Int?
            var allApplications = false
        }

        let challenge: Data
        let softwareEnforced: AuthorizationList
        let teeEnforced: AuthorizationList

        init(_ value: ArraySlice<UInt8>) throws {
            let root = try DER.parse(value)
            guard case .constructed(let members) = root.content else { throw ASN1Error.invalidASN1Object(reason: "") }
            let fields = Array(members)
            guard fields.count >= 8 else { throw ASN1Error.invalidASN1Object(reason: "KeyDescription is short") }
            challenge = Data(try ASN1OctetString(derEncoded: fields[4]).bytes)
            softwareEnforced = try Self.list(fields[6])
            teeEnforced = try Self.list(fields[7])
        }

        static func list(_ node: ASN1Node) throws -> AuthorizationList {
            guard case .constructed(let entries) = node.content else {
                throw ASN1Error.invalidASN1Object(reason: "AuthorizationList is not a SEQUENCE")
            }
            var list = AuthorizationList()
            for entry in entries where entry.identifier.tagClass == .contextSpecific {
                guard case .constructed(let explicit) = entry.content, let inner = explicit.first(where: { _ in true })
                else { continue }
                switch entry.identifier.tagNumber {
                case AndroidKeyAttestation.purposeTag:
                    guard case .constructed(let purposes) = inner.content else { continue }
                    list.purposes = try purposes.map { try Int(derEncoded: $0) }
                case AndroidKeyAttestation.originTag:
                    list.origin = try Int(derEncoded: inner)
                case AndroidKeyAttestation.allApplicationsTag:
                    list.allApplications = true
                default:
                    continue
                }
            }
            return list
        }
    }
}
