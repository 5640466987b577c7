import Crypto
import Foundation
import SwiftASN1
import X509

/// The `tpm` format (WebAuthn §8.3): the TPM's attestation identity key certifies the credential's public area
/// (`pubArea`) in a `TPMS_ATTEST` structure (`certInfo`) whose extra data is the hash of authenticator data ‖
/// client-data hash (TPM 2.0 Library, Part 2).
enum TPMAttestation {
    static let tcgKpAIKCertificate: ASN1ObjectIdentifier = [2, 23, 133, 8, 3]
    static let tpmManufacturer: ASN1ObjectIdentifier = [2, 23, 133, 2, 1]
    static let tpmModel: ASN1ObjectIdentifier = [2, 23, 133, 2, 2]
    static let tpmVersion: ASN1ObjectIdentifier = [2, 23, 133, 2, 3]

    static func verify(_ object: AttestationObject, signed: Data, credentialKey: COSEKey) throws(WebAuthnError) -> (
        kind: VerifiedAttestation.Kind, chain: [Certificate]
    ) {
        let statement = object.statement
        guard case .text("2.0")? = statement[.text("ver")] else {
            throw WebAuthnError(.attestation, "The tpm attestation is not version 2.0.")
        }
        guard case .bytes(let pubAreaBytes)? = statement[.text("pubArea")],
            case .bytes(let certInfoBytes)? = statement[.text("certInfo")]
        else { throw WebAuthnError(.attestation, "The tpm attestation lacks pubArea or certInfo.") }
        let signature = try AttestationVerifier.signature(object)
        let publicArea = try PublicArea(pubAreaBytes)
        try publicArea.requireSameKey(credentialKey)
        let certify = try CertifyInfo(certInfoBytes)
        guard let extraData = digest(signed, coseAlgorithm: object.algorithm),
            Bytes.constantTimeEqual(certify.extraData, extraData)
        else {
            throw WebAuthnError(.attestation, "The tpm attestation does not certify this registration (extraData).")
        }
        guard let name = digest(pubAreaBytes, tpmAlgorithm: publicArea.nameAlgorithm),
            certify.attestedName == Bytes.bigEndian16(publicArea.nameAlgorithm) + name
        else {
            throw WebAuthnError(.attestation, "The tpm attestation certifies another key than the credential's (name).")
        }
        let chain = try AttestationVerifier.certificates(object)
        let aik = chain[0]
        try AttestationVerifier.verifySignature(
            signature, over: certInfoBytes, by: aik, algorithm: object.algorithm, format: "tpm")
        try checkCertificate(aik, aaguid: object.authenticatorData.attestedCredential?.aaguid ?? Data())
        return (.attestationCA, chain)
    }

    /// §8.3.1's requirements of an attestation identity key certificate.
    static func checkCertificate(_ aik: Certificate, aaguid: Data) throws(WebAuthnError) {
        guard aik.version == .v3 else {
            throw WebAuthnError(.attestation, "The tpm attestation certificate is not X.509 version 3.")
        }
        guard aik.subject.isEmpty else {
            throw WebAuthnError(.attestation, "The tpm attestation certificate's subject is not empty.")
        }
        let names = (try? aik.extensions.subjectAlternativeNames) ?? nil
        let directory = names.map { Array($0) } ?? []
        let attributes = directory.flatMap { name -> [ASN1ObjectIdentifier] in
            guard case .directoryName(let distinguished) = name else { return [] }
            return distinguished.flatMap { $0 }.map(\.type)
        }
        guard [tpmManufacturer, tpmModel, tpmVersion].allSatisfy(attributes.contains) else {
            throw WebAuthnError(
                .attestation, "The tpm attestation certificate does not name the TPM's manufacturer, model and version."
            )
        }
        let usages = (try? aik.extensions.extendedKeyUsage).flatMap { $0 }.map { Array($0) } ?? []
        guard usages.contains(where: { $0 == ExtendedKeyUsage.Usage(oid: tcgKpAIKCertificate) }) else {
            throw WebAuthnError(.attestation, "The tpm attestation certificate is not for attestation identity keys.")
        }
        try AttestationVerifier.requireNotCA(aik, format: "tpm")
        try AttestationVerifier.checkAAGUIDExtension(aik, aaguid: aaguid, format: "tpm")
    }

    /// The hash the statement's signature algorithm implies.
    static func digest(_ data: Data, coseAlgorithm: Int?) -> Data? {
        switch coseAlgorithm {
        case -7, -257, -37: Data(SHA256.hash(data: data))
        case -35, -258, -38: Data(SHA384.hash(data: data))
        case -36, -259, -39: Data(SHA512.hash(data: data))
        case -65535: Data(Insecure.SHA1.hash(data: data))
        default: nil
        }
    }

    /// The hash a TPM algorithm id names (TPM_ALG_SHA1, _SHA256, _SHA384, _SHA512).
    static func digest(_ data: Data, tpmAlgorithm: UInt16) -> Data? {
        switch tpmAlgorithm {
        case 0x0004: Data(Insecure.SHA1.hash(data: data))
        case 0x000B: Data(SHA256.hash(data: data))
        case 0x000C: Data(SHA384.hash(data: data))
        case 0x000D: Data(SHA512.hash(data: data))
        default: nil
        }
    }

    /// Reads TPM's big-endian structures.
    struct Reader {
        let bytes: [UInt8]
        var offset = 0
        let what: String

        init(_ data: Data, _ what: String) {
            bytes = [UInt8](data)
            self.what = what
        }

        mutating func take(_ count: Int) throws(WebAuthnError) -> [UInt8] {
            guard count <= bytes.count - offset else {
                throw WebAuthnError(.attestation, "The tpm \(what) ends early.")
            }
            defer { offset += count }
            return Array(bytes[offset..<offset + count])
        }

        mutating func u16() throws(WebAuthnError) -> UInt16 {
            try take(2).reduce(0) { $0 << 8 | UInt16($1) }
        }

        mutating func u32() throws(WebAuthnError) -> UInt32 {
            try take(4).reduce(0) { $0 << 8 | UInt32($1) }
        }

        /// A TPM2B: a 2-byte size and that many bytes.
        mutating func sized() throws(WebAuthnError) -> Data {
            Data(try take(Int(try u16())))
        }

        func requireEnd() throws(WebAuthnError) {
            guard offset == bytes.count else { throw WebAuthnError(.attestation, "Bytes follow the tpm \(what).") }
        }
    }

    /// `TPMT_PUBLIC`: the credential key as the TPM holds it.
    struct PublicArea {
        enum Key: Equatable {
            case rsa(modulus: Data, exponent: UInt32)
            case ecc(curve: UInt16, x: Data, y: Data)
        }

        let nameAlgorithm: UInt16
        let key: Key
        static let algorithmNull: UInt16 = 0x0010

        init(_ data: Data) throws(WebAuthnError) {
            var reader = Reader(data, "pubArea")
            let type = try reader.u16()
            nameAlgorithm = try reader.u16()
            _ = try reader.u32()  // objectAttributes
            _ = try reader.sized()  // authPolicy
            // TPMT_SYM_DEF_OBJECT and the signing scheme: an algorithm, then its details unless it is TPM_ALG_NULL.
            if try reader.u16() != Self.algorithmNull { _ = try reader.take(4) }
            if try reader.u16() != Self.algorithmNull { _ = try reader.take(2) }
            switch type {
            case 0x0001:
                _ = try reader.u16()  // keyBits
                let exponent = try reader.u32()
                key = .rsa(modulus: try reader.sized(), exponent: exponent == 0 ? 65537 : exponent)
            case 0x0023:
                let curve = try reader.u16()
                if try reader.u16() != Self.algorithmNull { _ = try reader.take(2) }  // kdf
                key = .ecc(curve: curve, x: try reader.sized(), y: try reader.sized())
            default:
                throw WebAuthnError(.attestation, "The tpm pubArea holds a key type (\(type)) WebAuthn does not use.")
            }
            try reader.requireEnd()
        }

        func requireSameKey(_ credential: COSEKey) throws(WebAuthnError) {
            let same: Bool
            switch (key, credential.material) {
            case (.rsa(let modulus, let exponent), .rsa(let n, let e)):
                let value = e.count <= 4 ? e.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } : 0
                same = modulus == n && exponent == value
            case (.ecc(let curve, let x, let y), .ec2(let coseCurve, let cx, let cy)):
                // TPM_ECC_NIST_P256, _P384, _P521 are COSE curves 1, 2, 3.
                let curves: [UInt16: Int] = [0x0003: 1, 0x0004: 2, 0x0005: 3]
                same = curves[curve] == coseCurve && x == cx && y == cy
            default:
                same = false
            }
            guard same else {
                throw WebAuthnError(.attestation, "The tpm pubArea holds another key than the credential's.")
            }
        }
    }

    /// `TPMS_ATTEST` of type `TPM_ST_ATTEST_CERTIFY`.
    struct CertifyInfo {
        let extraData: Data
        let attestedName: Data

        init(_ data: Data) throws(WebAuthnError) {
            var reader = Reader(data, "certInfo")
            guard try reader.u32() == 0xFF54_4347 else {
                throw WebAuthnError(.attestation, "The tpm certInfo is not TPM-generated (magic).")
            }
            guard try reader.u16() == 0x8017 else {
                throw WebAuthnError(.attestation, "The tpm certInfo is not a certification (type).")
            }
            _ = try reader.sized()  // qualifiedSigner
            extraData = try reader.sized()
            _ = try reader.take(17)  // clockInfo
            _ = try reader.take(8)  // firmwareVersion
            attestedName = try reader.sized()
            _ = try reader.sized()  // qualifiedName
            try reader.requireEnd()
        }
    }
}

extension Bytes {
    /// The 2-byte big-endian encoding of `value`.
    static func bigEndian16(_ value: UInt16) -> Data { Data([UInt8(value >> 8), UInt8(value & 0xFF)]) }
}
