import Crypto
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the SDK keeps an activation's state (keys, counter, token). One opaque blob, replaced as a whole, so it
/// is never half-written.
public protocol Keystore: Sendable {
    /// The stored blob, or `nil` when there is none.
    func load() throws -> Data?
    /// Replaces the stored blob atomically.
    func save(_ data: Data) throws
    /// Deletes the blob.
    func delete() throws
}

/// A ``Keystore`` in a directory (mode 0700): the state sealed with AES-256-GCM in `state` under a random key in
/// `state.key` (mode 0600). Writes go to a temporary file that is renamed over the old one, so a crash leaves
/// either the old state or the new one.
///
/// On Apple platforms prefer the Keychain; this keystore is for Linux and command-line tokens, where the key file's
/// permissions are the protection (the knowledge key inside is additionally encrypted under the PIN).
public struct FileKeystore: Keystore {
    /// The directory holding `state` and `state.key`.
    public let directory: URL

    /// A keystore in `directory`, created if needed.
    public init(directory: URL) throws {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
        } catch {
            throw AssentError.wrap(error, .keystore, "Cannot create the keystore directory \(directory.path).")
        }
    }

    var stateFile: URL { directory.appendingPathComponent("state") }
    var keyFile: URL { directory.appendingPathComponent("state.key") }

    public func load() throws -> Data? {
        guard FileManager.default.fileExists(atPath: stateFile.path) else { return nil }
        do {
            let sealed = try Data(contentsOf: stateFile)
            let box = try AES.GCM.SealedBox(combined: sealed)
            return try AES.GCM.open(box, using: try key(create: false))
        } catch {
            throw AssentError.wrap(error, .keystore, "The keystore in \(directory.path) cannot be read.")
        }
    }

    public func save(_ data: Data) throws {
        do {
            guard let sealed = try AES.GCM.seal(data, using: try key(create: true)).combined else {
                throw AssentError(.keystore, "Sealing the state failed.")
            }
            try Self.writeAtomically(sealed, to: stateFile)
        } catch {
            throw AssentError.wrap(error, .keystore, "The keystore in \(directory.path) cannot be written.")
        }
    }

    public func delete() throws {
        for file in [stateFile, keyFile] where FileManager.default.fileExists(atPath: file.path) {
            do {
                try FileManager.default.removeItem(at: file)
            } catch {
                throw AssentError.wrap(error, .keystore, "Cannot delete \(file.path).")
            }
        }
    }

    private func key(create: Bool) throws -> SymmetricKey {
        if let data = try? Data(contentsOf: keyFile), data.count == 32 { return SymmetricKey(data: data) }
        guard create else { throw AssentError(.keystore, "The keystore key \(keyFile.path) is missing.") }
        let key = SymmetricKey(size: .bits256)
        try Self.writeAtomically(key.withUnsafeBytes { Data($0) }, to: keyFile)
        return key
    }

    /// Writes a 0600 temporary file, flushes it, and renames it over `url`.
    static func writeAtomically(_ data: Data, to url: URL) throws {
        let temporary = url.path + ".tmp-\(UUID().uuidString)"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { throw AssentError(.keystore, "Cannot create \(temporary).") }
        let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor)
        close(descriptor)
        guard written == data.count, synced == 0, rename(temporary, url.path) == 0 else {
            unlink(temporary)
            throw AssentError(.keystore, "Cannot write \(url.path).")
        }
    }
}

/// A ``Keystore`` in memory, for tests and previews.
public final class MemoryKeystore: Keystore {
    private let storage = Mutex<Data?>(nil)

    /// An empty keystore.
    public init() {}
    public func load() throws -> Data? { storage.withLock { $0 } }
    public func save(_ data: Data) throws { storage.withLock { $0 = data } }
    public func delete() throws { storage.withLock { $0 = nil } }
}
