import AssentCrypto
import Crypto
import Foundation

/// Encrypts secrets at rest with the key-encryption key (AES-256-GCM).
///
/// Each sealed value is bound to a context string (table, column and row id) as associated data, so a
/// ciphertext copied to another row does not decrypt.
public struct SecretBox: Sendable {
    private let key: SymmetricKey

    /// Creates a box from a 32-byte key-encryption key.
    public init(keyEncryptionKey: Data) throws {
        guard keyEncryptionKey.count == 32 else {
            throw AssentServerError.configuration("The key-encryption key must be 32 bytes.")
        }
        key = SymmetricKey(data: keyEncryptionKey)
    }

    /// Encrypts `plaintext` bound to `context`: `nonce ‖ ciphertext ‖ tag`.
    public func seal(_ plaintext: Data, context: String) throws -> Data {
        let box = try AES.GCM.seal(plaintext, using: key, authenticating: Data(context.utf8))
        guard let combined = box.combined else {
            throw AssentServerError.internalError("AES-GCM did not produce a combined box.")
        }
        return combined
    }

    /// Decrypts what ``seal(_:context:)`` produced for the same context.
    public func open(_ sealed: Data, context: String) throws -> Data {
        do {
            return try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: key, authenticating: Data(context.utf8))
        } catch {
            throw AssentServerError.internalError(
                "A stored secret does not decrypt: wrong key-encryption key or tampered database.")
        }
    }

    /// Loads the key-encryption key: `ASSENT_KEK` (Base64 of 32 bytes) if set, else `<dataDirectory>/kek`,
    /// created with mode 0600 on first start.
    public static func load(dataDirectory: URL, environment: [String: String]) throws -> SecretBox {
        if let text = environment["ASSENT_KEK"], !text.isEmpty {
            guard let key = Data(base64Encoded: text) else {
                throw AssentServerError.configuration("ASSENT_KEK is not valid Base64.")
            }
            return try SecretBox(keyEncryptionKey: key)
        }
        let url = dataDirectory.appendingPathComponent("kek")
        let manager = FileManager.default
        if let existing = manager.contents(atPath: url.path) {
            let attributes = try manager.attributesOfItem(atPath: url.path)
            if let mode = attributes[.posixPermissions] as? NSNumber, mode.intValue & 0o077 != 0 {
                throw AssentServerError.configuration(
                    "\(url.path) is readable by others: run chmod 600 on it.")
            }
            guard
                let key = Data(
                    base64Encoded: String(decoding: existing, as: UTF8.self).trimmingCharacters(
                        in: .whitespacesAndNewlines))
            else {
                throw AssentServerError.configuration("\(url.path) does not hold a Base64 key.")
            }
            return try SecretBox(keyEncryptionKey: key)
        }
        try manager.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        let key = Bytes.random(count: 32)
        guard
            manager.createFile(
                atPath: url.path, contents: Data((key.base64EncodedString() + "\n").utf8),
                attributes: [.posixPermissions: 0o600])
        else {
            throw AssentServerError.configuration("Cannot create \(url.path).")
        }
        return try SecretBox(keyEncryptionKey: key)
    }
}
