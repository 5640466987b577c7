import Crypto
import CryptoExtras
import Foundation

/// How the device stores the knowledge key: encrypted under a key stretched from the user's password.
///
/// `PBKDF2-HMAC-SHA1(password, salt, 10 000 iterations, 16 bytes)` keys AES-128-CBC with a zero IV and no
/// padding over the 16-byte knowledge key. A wrong password decrypts silently to a wrong key; only the server
/// can tell, by rejecting the signature, so an attacker holding the device cannot guess offline.
public enum KnowledgeKeyProtection {
    /// PBKDF2 iteration count fixed by the protocol.
    public static let iterations = 10_000
    /// Salt length in bytes.
    public static let saltLength = 16

    /// A new random salt.
    public static func makeSalt() -> Data { Bytes.random(count: saltLength) }

    /// Encrypts the knowledge key with a password.
    public static func protect(knowledgeKey: Data, password: Data, salt: Data) throws -> Data {
        try Bytes.requireLength(knowledgeKey, 16, "Knowledge key")
        let key = try stretch(password: password, salt: salt)
        return try AESCBC.encrypt(knowledgeKey, key: key, iv: AESCBC.zeroIV, padding: false)
    }

    /// Decrypts the stored knowledge key with a password (a wrong password yields a wrong key).
    public static func unprotect(_ protectedKey: Data, password: Data, salt: Data) throws -> Data {
        try Bytes.requireLength(protectedKey, 16, "Protected knowledge key")
        let key = try stretch(password: password, salt: salt)
        return try AESCBC.decrypt(protectedKey, key: key, iv: AESCBC.zeroIV, padding: false)
    }

    static func stretch(password: Data, salt: Data) throws -> Data {
        try Bytes.requireLength(salt, saltLength, "Knowledge key salt")
        guard !password.isEmpty else {
            throw AssentCryptoError(.invalidLength, "The password must not be empty.")
        }
        let key = try AssentCryptoError.wrapping("PBKDF2") {
            try KDF.Insecure.PBKDF2.deriveKey(
                from: password,
                salt: salt,
                using: .insecureSHA1,
                outputByteCount: 16,
                unsafeUncheckedRounds: iterations
            )
        }
        return key.withUnsafeBytes { Data($0) }
    }
}
