import AssentCrypto
import Foundation

extension FuzzChecks {
    /// What a browser or authenticator sends a relying party: any bytes decode as CBOR or are refused, and what
    /// decodes is encoded back to bytes that decode to the same item; a decoded prefix is exactly the item its
    /// length says. As authenticator data, an attestation object, a COSE key or client data JSON the input parses
    /// or is refused with an error; parsed authenticator data keeps its bytes, and its credential id stays within
    /// WebAuthn's limit. A key decoded from the input never verifies the input as its own signature.
    @Sendable public static func webAuthn(_ input: Data) throws {
        let decoder = CBORDecoder()
        if let item = try? decoder.decode(input) {
            guard (try? decoder.decode(item.encoded)) == item else {
                throw Violation("A CBOR item changed on its way through the encoder.")
            }
        }
        if let (item, used) = try? decoder.decodePrefix(input) {
            guard used > 0, used <= input.count, (try? decoder.decode(input.prefix(used))) == item else {
                throw Violation("A CBOR prefix is not the item its length says.")
            }
        }
        if let data = try? AuthenticatorData.parse(input) {
            guard data.raw == input, data.rpIDHash.count == 32 else {
                throw Violation("Parsed authenticator data lost its bytes.")
            }
            if let credential = data.attestedCredential {
                guard credential.credentialID.count <= AuthenticatorData.maximumCredentialIDLength,
                    credential.aaguid.count == 16
                else { throw Violation("A parsed credential is beyond WebAuthn's limits.") }
                _ = try? COSEKey(decoding: credential.publicKey)
            }
            _ = try? data.backupState()
        }
        if let object = try? AttestationObject.parse(input) {
            _ = (object.algorithm, object.signature, object.certificateChain)
        }
        if let key = try? COSEKey(decoding: input), (try? key.isValidSignature(input, for: input)) == true {
            throw Violation("A COSE key verified its own encoding as a signature.")
        }
        _ = try? CollectedClientData.parse(input)
    }
}
