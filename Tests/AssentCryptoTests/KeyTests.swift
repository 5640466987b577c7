import AssentCrypto
import Foundation
import Testing

@Suite("Keys, knowledge-key protection and vault delivery")
struct KeyTests {
    @Test("Private key scalars are accepted with a sign byte or without leading zeros, and rejected when too long")
    func privateKeyForms() throws {
        let key = ECPrivateKey()
        #expect(try ECPrivateKey(scalar: Data([0]) + key.scalar).scalar == key.scalar)
        let short = try ECPrivateKey(scalar: Data(repeating: 0x11, count: 31))
        #expect(short.scalar == Data([0]) + Data(repeating: 0x11, count: 31))
        for bad in [Data(repeating: 0x11, count: 33), Data(), Data(count: 32), Data(repeating: 0xFF, count: 32)] {
            let error = #expect(throws: AssentCryptoError.self) { try ECPrivateKey(scalar: bad) }
            #expect(error?.code == .invalidKey)
        }
    }

    @Test("Public keys parse compressed and uncompressed; bad lengths, points and Base64 are typed errors")
    func publicKeyForms() throws {
        let key = ECPrivateKey().publicKey
        #expect(key.x963.count == 65)
        #expect(try ECPublicKey(x963: key.compressed) == key)
        #expect(try ECPublicKey(base64: key.x963.base64EncodedString()) == key)
        var offCurve = key.x963
        offCurve[64] ^= 1
        for bad in [Data(count: 64), Data(repeating: 4, count: 65), offCurve, Data([5]) + key.compressed.dropFirst()] {
            let error = #expect(throws: AssentCryptoError.self) { try ECPublicKey(x963: bad) }
            #expect(error?.code == .invalidKey)
        }
        let error = #expect(throws: AssentCryptoError.self) { try ECPublicKey(base64: "not base64") }
        #expect(error?.code == .invalidEncoding)
    }

    @Test("Device and server derive the same activation keys from a fresh key exchange")
    func keyExchange() throws {
        let device = ECPrivateKey()
        let server = ECPrivateKey()
        let deviceKeys = try ActivationKeys(
            masterSecret: try KeyDerivation.masterSecret(privateKey: device, publicKey: server.publicKey))
        let serverKeys = try ActivationKeys(
            masterSecret: try KeyDerivation.masterSecret(privateKey: server, publicKey: device.publicKey))
        #expect(deviceKeys == serverKeys)
        #expect(
            Set([deviceKeys.possession, deviceKeys.knowledge, deviceKeys.biometry, deviceKeys.transport]).count == 4)
        #expect(throws: AssentCryptoError.self) { try KeyDerivation.derive(from: Data(count: 15), index: 1) }
    }

    @Test("The knowledge key decrypts with the right PIN and silently to another key with a wrong one")
    func knowledgeKeyProtection() throws {
        let knowledgeKey = Bytes.random(count: 16)
        let salt = KnowledgeKeyProtection.makeSalt()
        let stored = try KnowledgeKeyProtection.protect(
            knowledgeKey: knowledgeKey, password: Data("1234".utf8), salt: salt)
        #expect(stored.count == 16)
        #expect(stored != knowledgeKey)
        #expect(try KnowledgeKeyProtection.unprotect(stored, password: Data("1234".utf8), salt: salt) == knowledgeKey)
        #expect(try KnowledgeKeyProtection.unprotect(stored, password: Data("1235".utf8), salt: salt) != knowledgeKey)
        #expect(throws: AssentCryptoError.self) {
            try KnowledgeKeyProtection.protect(
                knowledgeKey: knowledgeKey, password: Data("1".utf8), salt: Data(count: 8))
        }
        #expect(throws: AssentCryptoError.self) {
            try KnowledgeKeyProtection.protect(knowledgeKey: knowledgeKey, password: Data(), salt: salt)
        }
    }

    @Test("The vault key travels as 32 bytes under the transport key and comes back whole")
    func vaultTransport() throws {
        let keys = try ActivationKeys(masterSecret: Bytes.random(count: 16))
        let encrypted = try VaultKeyTransport.encrypt(vaultKey: keys.vault, transportKey: keys.transport)
        #expect(encrypted.count == 32)
        #expect(try VaultKeyTransport.decrypt(encrypted, transportKey: keys.transport) == keys.vault)
        let error = #expect(throws: AssentCryptoError.self) {
            try VaultKeyTransport.decrypt(encrypted.prefix(31), transportKey: keys.transport)
        }
        #expect(error?.code == .decryptionFailed)
    }

    @Test("The device private key kept under the vault key comes back only with that key")
    func devicePrivateKeyVault() throws {
        let keys = try ActivationKeys(masterSecret: Bytes.random(count: 16))
        let device = ECPrivateKey()
        let encrypted = try DevicePrivateKeyVault.protect(device, vaultKey: keys.vault)
        #expect(encrypted.count == 48)
        #expect(try DevicePrivateKeyVault.unprotect(encrypted, vaultKey: keys.vault).scalar == device.scalar)
        #expect(throws: AssentCryptoError.self) {
            try DevicePrivateKeyVault.unprotect(encrypted, vaultKey: keys.transport)
        }
    }

    @Test("Server-signed data verifies with the signer's key only; the raw form is 64 bytes")
    func serverSignature() throws {
        let key = ECPrivateKey()
        let data = Data("offline operation".utf8)
        let signature = try ServerSignature.sign(data, with: key)
        #expect(try ServerSignature.isValid(signature, of: data, by: key.publicKey))
        #expect(try !ServerSignature.isValid(signature, of: data + Data([0]), by: key.publicKey))
        #expect(try !ServerSignature.isValid(signature, of: data, by: ECPrivateKey().publicKey))
        #expect(try ServerSignature.rawRepresentation(ofDER: signature).count == 64)
        #expect(throws: AssentCryptoError.self) {
            try ServerSignature.isValid(Data([1, 2, 3]), of: data, by: key.publicKey)
        }
    }
}
