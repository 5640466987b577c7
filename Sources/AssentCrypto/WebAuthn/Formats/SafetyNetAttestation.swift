import Crypto
import Foundation
import X509

/// The `android-safetynet` format (WebAuthn §8.5): a SafetyNet attestation JWS, signed by a certificate for
/// `attest.android.com`, whose nonce is the Base64 SHA-256 of authenticator data ‖ client-data hash. Google retired
/// SafetyNet in 2025; registrations made before can still be checked.
public struct SafetyNetAttestation: Sendable {
    /// The JWS's certificates, leaf first.
    public let certificates: [Certificate]
    let nonce: String?
    let basicIntegrity: Bool
    let timestampMs: Double?

    /// Verifies the statement's JWS signature with its leaf certificate, that the leaf is `attest.android.com`'s, and
    /// reads the payload. The nonce, integrity, time and chain are checked by the calls that follow.
    public static func verify(_ statement: CBOR) throws(WebAuthnError) -> SafetyNetAttestation {
        guard case .text(let version)? = statement[.text("ver")], !version.isEmpty else {
            throw WebAuthnError(.attestation, "The android-safetynet attestation has no version.")
        }
        guard case .bytes(let response)? = statement[.text("response")] else {
            throw WebAuthnError(.attestation, "The android-safetynet attestation has no response.")
        }
        let parts = String(decoding: response, as: UTF8.self).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw WebAuthnError(.attestation, "The SafetyNet response is not a compact JWS.")
        }
        let header = try Base64URL.decodeLenient(String(parts[0]), field: "The SafetyNet JWS header")
        let payload = try Base64URL.decodeLenient(String(parts[1]), field: "The SafetyNet JWS payload")
        let signature = try Base64URL.decodeLenient(String(parts[2]), field: "The SafetyNet JWS signature")
        guard let headerFields = try? JSONSerialization.jsonObject(with: header) as? [String: Any],
            headerFields["alg"] as? String == "RS256", let encoded = headerFields["x5c"] as? [String], !encoded.isEmpty
        else { throw WebAuthnError(.attestation, "The SafetyNet JWS header does not name RS256 and its certificates.") }
        let certificates: [Certificate]
        do {
            certificates = try encoded.map { text in
                guard let der = Data(base64Encoded: text) else {
                    throw WebAuthnError(.attestation, "x5c is not Base64.")
                }
                return try Certificate(derEncoded: [UInt8](der))
            }
        } catch {
            throw WebAuthnError(.attestation, "A SafetyNet certificate is not X.509: \(error)")
        }
        let leaf = certificates[0]
        guard
            leaf.publicKey.isValidSignature(
                signature, for: Data("\(parts[0]).\(parts[1])".utf8), signatureAlgorithm: .sha256WithRSAEncryption)
        else { throw WebAuthnError(.attestation, "The SafetyNet JWS signature does not verify.") }
        let names = AttestationVerifier.attribute(.RDNAttributeType.commonName, in: leaf.subject)
        guard names.contains("attest.android.com") else {
            throw WebAuthnError(.attestation, "The SafetyNet response is not signed for attest.android.com.")
        }
        guard let claims = try? JSONSerialization.jsonObject(with: payload) as? [String: Any] else {
            throw WebAuthnError(.attestation, "The SafetyNet JWS payload is not a JSON object.")
        }
        return SafetyNetAttestation(
            certificates: certificates, nonce: claims["nonce"] as? String,
            basicIntegrity: claims["basicIntegrity"] as? Bool ?? false,
            timestampMs: (claims["timestampMs"] as? NSNumber)?.doubleValue)
    }

    /// Refuses a device SafetyNet did not find intact (`basicIntegrity`; `ctsProfileMatch` is not required, so
    /// that devices with unlocked but intact systems can register).
    public func checkIntegrity() throws(WebAuthnError) {
        guard basicIntegrity else { throw WebAuthnError(.attestation, "Could not verify device integrity.") }
    }

    /// Refuses a response made for another registration.
    public func checkNonce(signed: Data) throws(WebAuthnError) {
        guard nonce == Data(SHA256.hash(data: signed)).base64EncodedString() else {
            throw WebAuthnError(.attestation, "The SafetyNet response's nonce is not this registration's.")
        }
    }

    /// Refuses a response older or newer than `tolerance` around `time` (`nil`: not checked).
    public func checkTimestamp(at time: Date, tolerance: TimeInterval?) throws(WebAuthnError) {
        guard let tolerance else { return }
        guard let timestampMs, abs(timestampMs / 1000 - time.timeIntervalSince1970) <= tolerance else {
            throw WebAuthnError(.attestation, "The SafetyNet response is not from the time of this registration.")
        }
    }
}
