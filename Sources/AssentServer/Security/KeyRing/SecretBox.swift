import AssentCrypto
import Crypto
import Foundation
import Synchronization

/// Encrypts secrets at rest with the key-encryption key (AES-256-GCM).
///
/// The box holds a ring of keys: the one the database names seals (``sealingKeyId``), every key in the ring opens.
/// A sealed value is `A5 4B ‖ key id (8 bytes) ‖ nonce ‖ ciphertext ‖ tag`; the header and a context string (table,
/// column and row id) are its associated data, so a ciphertext copied to another row, or relabelled with another key
/// id, does not decrypt. Values sealed before key ids existed (`nonce ‖ ciphertext ‖ tag`, context only) still open
/// under any key of the ring, until the re-seal rewrites them.
public final class SecretBox: Sendable {
    /// Where the ring comes from: what `assent admin kek` can change.
    public enum Source: Sendable, Equatable {
        /// `ASSENT_KEK`: the operator changes it, and every process is restarted with it.
        case environment
        /// `<dataDirectory>/kek`, one Base64 key per line: re-read while running, so an added key reaches a running
        /// server without a restart.
        case file(URL)
        /// Keys handed in by code (tests).
        case fixed
    }

    private struct State {
        /// The ring, in the order first seen (the order legacy values are tried in).
        var keys: [(id: String, key: SymmetricKey)] = []
        var sealingId: String
    }

    public let source: Source
    private let state: Mutex<State>

    static let magic: [UInt8] = [0xA5, 0x4B]
    /// The header's length: magic and key id.
    static let headerCount = 10

    /// Creates a box from a 32-byte key-encryption key (a ring of one).
    public convenience init(keyEncryptionKey: Data) throws {
        try self.init(keys: [keyEncryptionKey], source: .fixed)
    }

    /// Creates a box from a ring of 32-byte keys; the first seals until the database names another.
    public init(keys: [Data], source: Source) throws {
        guard let first = keys.first else {
            throw AssentServerError.configuration("The key-encryption key ring is empty.")
        }
        var ring = State(sealingId: try Self.keyId(of: first))
        for key in keys {
            let id = try Self.keyId(of: key)
            if !ring.keys.contains(where: { $0.id == id }) { ring.keys.append((id, SymmetricKey(data: key))) }
        }
        self.source = source
        state = Mutex(ring)
    }

    /// A key's id: the first 8 bytes of SHA-256 over a label and the key, in hex. It names the key and says nothing
    /// of it.
    public static func keyId(of key: Data) throws -> String {
        guard key.count == 32 else {
            throw AssentServerError.configuration("A key-encryption key must be 32 bytes.")
        }
        return Hex.encode(Data(SHA256.hash(data: Data("assent.kek.id".utf8) + key).prefix(8)))
    }

    /// The id of the key that seals.
    public var sealingKeyId: String { state.withLock { $0.sealingId } }

    /// The ids of the keys in the ring.
    public var keyIds: [String] { state.withLock { $0.keys.map(\.id) } }

    /// Whether the ring holds key `id`.
    public func holds(_ id: String) -> Bool { state.withLock { ring in ring.keys.contains { $0.id == id } } }

    /// Makes key `id` the one that seals. - Throws: when the ring does not hold it.
    public func seal(with id: String) throws {
        try state.withLock { ring in
            guard ring.keys.contains(where: { $0.id == id }) else {
                throw AssentServerError.configuration(Self.missingKey(id))
            }
            ring.sealingId = id
        }
    }

    /// Adds keys to the ring (a running process never forgets one: a value sealed under a key while it was being
    /// retired still opens, and the re-seal rewrites it).
    public func add(_ keys: [Data]) throws {
        let parsed = try keys.map { (id: try Self.keyId(of: $0), key: SymmetricKey(data: $0)) }
        state.withLock { ring in
            for key in parsed where !ring.keys.contains(where: { $0.id == key.id }) { ring.keys.append(key) }
        }
    }

    /// Re-reads a file ring and adds what is new; other rings do not change while running.
    public func reload() throws {
        guard case .file(let url) = source else { return }
        try add(try Self.readRing(url))
    }

    static func missingKey(_ id: String) -> String {
        "The database is sealed with key-encryption key \(id), which this process does not hold: add it to the ring "
            + "(ASSENT_KEK, or the kek file in the data directory)."
    }

    /// Encrypts `plaintext` bound to `context` under the sealing key.
    public func seal(_ plaintext: Data, context: String) throws -> Data {
        let (id, key) = try state.withLock { ring in
            guard let key = ring.keys.first(where: { $0.id == ring.sealingId })?.key else {
                throw AssentServerError.configuration(Self.missingKey(ring.sealingId))
            }
            return (ring.sealingId, key)
        }
        let header = Self.header(id)
        let box = try AES.GCM.seal(plaintext, using: key, authenticating: header + Data(context.utf8))
        guard let combined = box.combined else {
            throw AssentServerError.internalError("AES-GCM did not produce a combined box.")
        }
        return header + combined
    }

    /// Decrypts what ``seal(_:context:)`` produced for the same context, under whichever key of the ring sealed it.
    public func open(_ sealed: Data, context: String) throws -> Data {
        let keys = state.withLock { $0.keys }
        if let id = Self.sealingKeyId(of: sealed), let key = keys.first(where: { $0.id == id })?.key {
            if let opened = try? AES.GCM.open(
                AES.GCM.SealedBox(combined: sealed.dropFirst(Self.headerCount)), using: key,
                authenticating: Data(sealed.prefix(Self.headerCount)) + Data(context.utf8))
            {
                return opened
            }
        } else if let box = try? AES.GCM.SealedBox(combined: sealed) {
            // Sealed before key ids: any key of the ring may have sealed it.
            for (_, key) in keys {
                if let opened = try? AES.GCM.open(box, using: key, authenticating: Data(context.utf8)) {
                    return opened
                }
            }
        }
        throw AssentServerError.internalError(
            "A stored secret does not decrypt: a key-encryption key is missing from the ring, or the database was "
                + "tampered with.")
    }

    /// Whether `sealed` is sealed under the key that seals now (the re-seal leaves it alone).
    public func isCurrent(_ sealed: Data) -> Bool {
        Self.sealingKeyId(of: sealed) == sealingKeyId
    }

    /// The key id in a sealed value's header, or `nil` for a value sealed before key ids.
    static func sealingKeyId(of sealed: Data) -> String? {
        guard sealed.count >= headerCount + 28, sealed.prefix(2).elementsEqual(magic) else { return nil }
        return Hex.encode(sealed.dropFirst(2).prefix(8))
    }

    /// The header of a value sealed under key `id` (``keyId(of:)``: 16 hex digits).
    static func header(_ id: String) -> Data {
        Data(magic) + (Hex.decode(id) ?? Data())
    }

    /// Loads the ring: `ASSENT_KEK` (Base64 keys separated by commas or spaces) if set, else `<dataDirectory>/kek`
    /// (one Base64 key per line), created with one new key and mode 0600 on first start.
    public static func load(dataDirectory: URL, environment: [String: String]) throws -> SecretBox {
        if let text = environment["ASSENT_KEK"], !text.isEmpty {
            let keys = try text.split(whereSeparator: { $0 == "," || $0.isWhitespace }).map { item in
                guard let key = Data(base64Encoded: String(item)) else {
                    throw AssentServerError.configuration("ASSENT_KEK is not a list of Base64 keys.")
                }
                return key
            }
            return try SecretBox(keys: keys, source: .environment)
        }
        let url = dataDirectory.appendingPathComponent("kek")
        if FileManager.default.fileExists(atPath: url.path) {
            return try SecretBox(keys: try readRing(url), source: .file(url))
        }
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        let key = Bytes.random(count: 32)
        try writeRing([key], to: url)
        return try SecretBox(keys: [key], source: .file(url))
    }

    /// The keys of a ring file; refuses a file others can read.
    static func readRing(_ url: URL) throws -> [Data] {
        let manager = FileManager.default
        let attributes = try manager.attributesOfItem(atPath: url.path)
        if let mode = attributes[.posixPermissions] as? NSNumber, mode.intValue & 0o077 != 0 {
            throw AssentServerError.configuration("\(url.path) is readable by others: run chmod 600 on it.")
        }
        guard let contents = manager.contents(atPath: url.path) else {
            throw AssentServerError.configuration("Cannot read \(url.path).")
        }
        let keys = try String(decoding: contents, as: UTF8.self).split(whereSeparator: \.isNewline).compactMap {
            line -> Data? in
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { return nil }
            guard let key = Data(base64Encoded: text), key.count == 32 else {
                throw AssentServerError.configuration("\(url.path) holds a line that is not a Base64 32-byte key.")
            }
            return key
        }
        guard !keys.isEmpty else { throw AssentServerError.configuration("\(url.path) holds no key.") }
        return keys
    }

    /// Replaces a ring file with `keys`, mode 0600, all at once (a new file renamed over the old).
    static func writeRing(_ keys: [Data], to url: URL) throws {
        let text = keys.map { $0.base64EncodedString() + "\n" }.joined()
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".kek-\(UUID().uuidString)")
        guard
            FileManager.default.createFile(
                atPath: temporary.path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        else {
            throw AssentServerError.configuration("Cannot write \(temporary.path).")
        }
        guard rename(temporary.path, url.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw AssentServerError.configuration("Cannot replace \(url.path).")
        }
    }
}
