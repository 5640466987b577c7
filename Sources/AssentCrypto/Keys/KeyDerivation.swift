import Crypto
import CryptoExtras
import Foundation

/// PowerAuth's key derivation functions.
public enum KeyDerivation {
    /// `KDF(secret, index)`: AES-128 encryption of one block `0x00×8 ‖ BE64(index)` under the 16-byte secret.
    public static func derive<D: DataProtocol>(from secret: D, index: UInt64) throws -> Data {
        try Bytes.requireLength(secret, 16, "KDF secret")
        var block = Data(count: 8)
        block.append(Bytes.bigEndian(index))
        let key = SymmetricKey(data: Array(secret))
        try AssentCryptoError.wrapping("AES block encryption") {
            try AES.permute(&block, key: key)
        }
        return block
    }

    /// `KDF_INTERNAL(secret, index)`: `c32to16(HMAC-SHA256(key: secret, data: index))`.
    public static func deriveInternal<S: ContiguousBytes, I: DataProtocol>(from secret: S, index: I) -> Data {
        Bytes.fold32to16(HMACSHA256.mac(key: secret, data: index))
    }

    /// `KEY_MASTER_SECRET = c32to16(ECDH(privateKey, publicKey))`; both sides compute the same 16 bytes.
    public static func masterSecret(privateKey: ECPrivateKey, publicKey: ECPublicKey) throws -> Data {
        Bytes.fold32to16(try privateKey.sharedSecret(with: publicKey))
    }
}

/// The five keys derived from the master shared secret of an activation.
public struct ActivationKeys: Sendable, Equatable {
    /// The derivation indexes, as the protocol fixes them.
    public enum Index {
        public static let possession: UInt64 = 1
        public static let knowledge: UInt64 = 2
        public static let biometry: UInt64 = 3
        public static let transport: UInt64 = 1000
        public static let vault: UInt64 = 2000
    }

    /// `KEY_SIGNATURE_POSSESSION`.
    public var possession: Data
    /// `KEY_SIGNATURE_KNOWLEDGE`.
    public var knowledge: Data
    /// `KEY_SIGNATURE_BIOMETRY`.
    public var biometry: Data
    /// `KEY_TRANSPORT`: status blob, vault delivery and activation-scope ECIES.
    public var transport: Data
    /// `KEY_ENCRYPTION_VAULT`: never stored on the device, delivered by vault unlock.
    public var vault: Data

    /// Derives all five keys from `KEY_MASTER_SECRET` (16 bytes).
    public init<D: DataProtocol>(masterSecret: D) throws {
        possession = try KeyDerivation.derive(from: masterSecret, index: Index.possession)
        knowledge = try KeyDerivation.derive(from: masterSecret, index: Index.knowledge)
        biometry = try KeyDerivation.derive(from: masterSecret, index: Index.biometry)
        transport = try KeyDerivation.derive(from: masterSecret, index: Index.transport)
        vault = try KeyDerivation.derive(from: masterSecret, index: Index.vault)
    }

    /// The signature keys for `factors`, in protocol order.
    public func signatureKeys(for type: SignatureType) -> [Data] {
        type.factors.map { factor in
            switch factor {
            case .possession: possession
            case .knowledge: knowledge
            case .biometry: biometry
            }
        }
    }
}

/// Delivery of the vault key, encrypted under `KEY_TRANSPORT` (AES-128-CBC, zero IV, PKCS#7).
public enum VaultKeyTransport {
    /// Encrypts the 16-byte vault key to the 32 bytes `/pa/v3/vault/unlock` returns.
    public static func encrypt(vaultKey: Data, transportKey: Data) throws -> Data {
        try Bytes.requireLength(vaultKey, 16, "Vault key")
        return try AESCBC.encrypt(vaultKey, key: transportKey, iv: AESCBC.zeroIV, padding: true)
    }

    /// Decrypts what `/pa/v3/vault/unlock` returned back to the 16-byte vault key.
    public static func decrypt(_ encrypted: Data, transportKey: Data) throws -> Data {
        let key = try AESCBC.decrypt(encrypted, key: transportKey, iv: AESCBC.zeroIV, padding: true)
        try Bytes.requireLength(key, 16, "Vault key")
        return key
    }
}

/// The device private key as the device keeps it: encrypted under `KEY_ENCRYPTION_VAULT` (AES-128-CBC, zero IV,
/// PKCS#7), so that only a vault unlock (a two-factor call) recovers it, e.g. to derive the biometry key when
/// biometry is added after the activation.
public enum DevicePrivateKeyVault {
    /// Encrypts the device private key's 32-byte scalar under the 16-byte vault key.
    public static func protect(_ devicePrivateKey: ECPrivateKey, vaultKey: Data) throws -> Data {
        try AESCBC.encrypt(devicePrivateKey.scalar, key: vaultKey, iv: AESCBC.zeroIV, padding: true)
    }

    /// Decrypts what ``protect(_:vaultKey:)`` produced; a wrong vault key fails (padding or key check).
    public static func unprotect(_ encrypted: Data, vaultKey: Data) throws -> ECPrivateKey {
        let scalar = try AESCBC.decrypt(encrypted, key: vaultKey, iv: AESCBC.zeroIV, padding: true)
        try Bytes.requireLength(scalar, 32, "Device private key")
        return try ECPrivateKey(scalar: scalar)
    }
}

/// AES-128-CBC with typed errors.
enum AESCBC {
    static let zeroIV = Data(count: 16)

    static func encrypt(_ plaintext: Data, key: Data, iv: Data, padding: Bool) throws -> Data {
        try Bytes.requireLength(key, 16, "AES key")
        if !padding, !plaintext.count.isMultiple(of: 16) {
            throw AssentCryptoError(.invalidLength, "Unpadded AES-CBC plaintext must be a multiple of 16 bytes.")
        }
        return try AssentCryptoError.wrapping("AES-CBC encryption") {
            try AES._CBC.encrypt(
                plaintext,
                using: SymmetricKey(data: key),
                iv: AES._CBC.IV(ivBytes: iv),
                noPadding: !padding
            )
        }
    }

    static func decrypt(_ ciphertext: Data, key: Data, iv: Data, padding: Bool) throws -> Data {
        try Bytes.requireLength(key, 16, "AES key")
        guard !ciphertext.isEmpty, ciphertext.count.isMultiple(of: 16) else {
            throw AssentCryptoError(.decryptionFailed, "AES-CBC ciphertext must be a non-empty multiple of 16 bytes.")
        }
        do {
            return try AES._CBC.decrypt(
                ciphertext,
                using: SymmetricKey(data: key),
                iv: AES._CBC.IV(ivBytes: iv),
                noPadding: !padding
            )
        } catch {
            throw AssentCryptoError(.decryptionFailed, "AES-CBC decryption failed.", underlying: error)
        }
    }
}
