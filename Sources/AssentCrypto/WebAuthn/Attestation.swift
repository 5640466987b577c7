import Crypto
import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// Roots an operator trusts for attestation, per format, and the time at which chains are judged.
public struct AttestationTrust: Sendable {
    /// Root certificates by attestation format (`packed`, `fido-u2f`, `apple`, `android-key`, `tpm`,
    /// `android-safetynet`). A format with roots has its chains validated, and a chain that does not lead to one of
    /// them is refused; a format without roots has its statement's signature verified but is not *trusted*.
    public var roots: [String: [Certificate]]
    /// When chains are judged; `nil` means now.
    public var time: Date?
    /// How far a SafetyNet response's `timestampMs` may be from ``time`` (`nil`: not checked).
    public var safetyNetTolerance: TimeInterval?

    public init(roots: [String: [Certificate]] = [:], time: Date? = nil, safetyNetTolerance: TimeInterval? = 60) {
        self.roots = roots
        self.time = time
        self.safetyNetTolerance = safetyNetTolerance
    }

    /// Parses PEM text holding one or more certificates.
    public static func certificates(pem: String) throws(WebAuthnError) -> [Certificate] {
        do {
            return try PEMDocument.parseMultiple(pemString: pem).map { try Certificate(pemDocument: $0) }
        } catch {
            throw WebAuthnError(.attestationTrust, "The root certificates are not PEM certificates: \(error)")
        }
    }
}

/// A verified attestation statement.
public struct VerifiedAttestation: Sendable {
    /// The attestation type (WebAuthn §6.5.3), as far as the statement shows it.
    public enum Kind: String, Sendable {
        case none
        case selfAttestation = "self"
        case basic
        case attestationCA = "attca"
        case anonymizationCA = "anonca"
    }

    public let format: String
    public let kind: Kind
    /// The statement's certificates, leaf first.
    public let certificates: [Certificate]
    /// Whether the chain was validated to a root the operator configured for this format.
    public let trusted: Bool
}

/// Verifies attestation statements (WebAuthn §8): the signature always, the chain against the operator's roots.
enum AttestationVerifier {
    /// The formats this relying party verifies.
    static let formats = ["none", "packed", "fido-u2f", "apple", "android-key", "android-safetynet", "tpm"]

    static func verify(
        _ object: AttestationObject, clientDataHash: Data, credentialKey: COSEKey, trust: AttestationTrust
    ) async throws(WebAuthnError) -> VerifiedAttestation {
        let signed = object.authenticatorData.raw + clientDataHash
        let result: (kind: VerifiedAttestation.Kind, chain: [Certificate])
        switch object.format {
        case "none":
            guard case .map(let members) = object.statement, members.isEmpty else {
                throw WebAuthnError(.attestation, "A \"none\" attestation has an empty statement.")
            }
            result = (.none, [])
        case "packed":
            result = try PackedAttestation.verify(object, signed: signed, credentialKey: credentialKey)
        case "fido-u2f":
            result = try FIDOU2FAttestation.verify(object, clientDataHash: clientDataHash, credentialKey: credentialKey)
        case "apple":
            result = try AppleAttestation.verify(object, signed: signed, credentialKey: credentialKey)
        case "android-key":
            result = try AndroidKeyAttestation.verify(
                object, signed: signed, clientDataHash: clientDataHash, credentialKey: credentialKey)
        case "android-safetynet":
            let response = try SafetyNetAttestation.verify(object.statement)
            try response.checkIntegrity()
            try response.checkNonce(signed: signed)
            try response.checkTimestamp(at: trust.time ?? Date(), tolerance: trust.safetyNetTolerance)
            result = (.basic, response.certificates)
        case "tpm":
            result = try TPMAttestation.verify(object, signed: signed, credentialKey: credentialKey)
        default:
            throw WebAuthnError(
                .attestationFormat, "The attestation format \"\(object.format)\" is not one this relying party knows.")
        }
        var trusted = false
        if let roots = trust.roots[object.format], !roots.isEmpty, !result.chain.isEmpty {
            try await validateChain(result.chain, roots: roots, at: trust.time ?? Date())
            trusted = true
        }
        return VerifiedAttestation(
            format: object.format, kind: result.kind, certificates: result.chain, trusted: trusted)
    }

    /// Validates `chain` (leaf first; it may include the root) against `roots` at `time` (RFC 5280).
    static func validateChain(_ chain: [Certificate], roots: [Certificate], at time: Date) async throws(WebAuthnError) {
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
            RFC5280Policy(fixedExpiryValidationTime: time)
        }
        let result = await verifier.validate(leaf: chain[0], intermediates: CertificateStore(Array(chain.dropFirst())))
        guard case .validCertificate = result else {
            throw WebAuthnError(
                .attestationTrust, "The attestation certificate chain does not lead to a root trusted for this format.")
        }
    }

    // MARK: Shared parts

    /// The statement's `x5c` parsed, leaf first; at least one certificate.
    static func certificates(_ object: AttestationObject) throws(WebAuthnError) -> [Certificate] {
        guard let chain = object.certificateChain, !chain.isEmpty else {
            throw WebAuthnError(.attestation, "The \(object.format) attestation has no certificates.")
        }
        do {
            return try chain.map { try Certificate(derEncoded: [UInt8]($0)) }
        } catch {
            throw WebAuthnError(.attestation, "An attestation certificate is not X.509 DER: \(error)")
        }
    }

    /// The statement's `sig`.
    static func signature(_ object: AttestationObject) throws(WebAuthnError) -> Data {
        guard let signature = object.signature else {
            throw WebAuthnError(.attestation, "The \(object.format) attestation has no signature.")
        }
        return signature
    }

    /// The X.509 name of a COSE signature algorithm, for a certificate key's signature.
    static func certificateAlgorithm(_ cose: Int?, format: String) throws(WebAuthnError)
        -> Certificate.SignatureAlgorithm
    {
        switch cose {
        case -7: .ecdsaWithSHA256
        case -35: .ecdsaWithSHA384
        case -36: .ecdsaWithSHA512
        case -257: .sha256WithRSAEncryption
        case -258: .sha384WithRSAEncryption
        case -259: .sha512WithRSAEncryption
        case -65535: .sha1WithRSAEncryption
        case -8: .ed25519
        case let other:
            throw WebAuthnError(
                .attestation,
                "The \(format) attestation's algorithm \(other.map(String.init) ?? "(none)") is not supported.")
        }
    }

    /// Verifies the certificate key's signature over `data` with the statement's algorithm.
    static func verifySignature(
        _ signature: Data, over data: Data, by certificate: Certificate, algorithm: Int?, format: String
    ) throws(WebAuthnError) {
        let algorithm = try certificateAlgorithm(algorithm, format: format)
        guard certificate.publicKey.isValidSignature(signature, for: data, signatureAlgorithm: algorithm) else {
            throw WebAuthnError(.attestation, "The \(format) attestation signature does not verify.")
        }
    }

    /// Refuses a certificate whose public key is not the credential's.
    static func requireSameKey(_ certificate: Certificate, _ key: COSEKey, format: String) throws(WebAuthnError) {
        guard let credential = key.certificatePublicKey, credential == certificate.publicKey else {
            throw WebAuthnError(
                .attestation, "The \(format) attestation certificate's key is not the credential's key.")
        }
    }

    /// The FIDO AAGUID extension (id-fido-gen-ce-aaguid), when present, must name the authenticator data's AAGUID
    /// and must not be critical.
    static func checkAAGUIDExtension(_ certificate: Certificate, aaguid: Data, format: String) throws(WebAuthnError) {
        guard let fidoExtension = certificate.extensions[oid: [1, 3, 6, 1, 4, 1, 45724, 1, 1, 4]] else { return }
        guard !fidoExtension.critical, let node = try? DER.parse(fidoExtension.value),
            let value = try? ASN1OctetString(derEncoded: node), Data(value.bytes) == aaguid
        else {
            throw WebAuthnError(
                .attestation, "The \(format) attestation certificate names another authenticator model (AAGUID).")
        }
    }

    /// Refuses a certificate authority as the attestation certificate.
    static func requireNotCA(_ certificate: Certificate, format: String) throws(WebAuthnError) {
        if case .isCertificateAuthority? = try? certificate.extensions.basicConstraints {
            throw WebAuthnError(.attestation, "The \(format) attestation certificate is a certificate authority's.")
        }
    }

    /// The values of one attribute type in a distinguished name.
    static func attribute(_ type: ASN1ObjectIdentifier, in name: DistinguishedName) -> [String] {
        name.flatMap { $0 }.filter { $0.type == type }.map { String(describing: $0.value) }
    }
}
