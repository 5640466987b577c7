import AssentCrypto
import Crypto
import CryptoExtras
import Foundation
import NIOCore
import NIOPosix

/// Password hashes for login accounts: scrypt (RFC 7914) from swift-crypto's CryptoExtras.
///
/// Why scrypt: it is memory-hard (each guess needs `128 · r · N` bytes, 32 MiB with the defaults), so GPUs and ASICs
/// gain far less over this server than against PBKDF2, whose only cost is iterations; and it is in CryptoExtras, so no
/// other dependency is needed (Argon2id is not on the package mirror). The defaults N = 2^15, r = 8, p = 3 are one of
/// OWASP's equivalent scrypt settings (Password Storage Cheat Sheet). The parameters travel in the stored string
/// (`scrypt$ln=15,r=8,p=3$salt$hash`), so they can be raised later without breaking existing hashes. Hashing runs on
/// threads of its own, never on the concurrency pool or the event loops.
public struct PasswordHasher: Sendable, Equatable {
    /// log2 of N, the CPU/memory cost.
    public var logN: Int
    /// The block size.
    public var r: Int
    /// The parallelism.
    public var p: Int

    public static let `default` = PasswordHasher(logN: 15, r: 8, p: 3)

    public init(logN: Int, r: Int, p: Int) {
        self.logN = logN
        self.r = r
        self.p = p
    }

    /// The longest password accepted, in characters as JSON Schema counts them (Unicode scalars; at most four bytes
    /// each, so a hash's input stays within 4 KiB); longer ones are refused, not truncated.
    public static let maxLength = 1024

    /// A new hash string for `password` with a random 16-byte salt.
    public func hash(_ password: String) async throws -> String {
        let salt = Bytes.random(count: 16)
        let derived = try await Self.derive(password, salt: salt, logN: logN, r: r, p: p)
        return "scrypt$ln=\(logN),r=\(r),p=\(p)$\(salt.base64EncodedString())$\(derived.base64EncodedString())"
    }

    /// Whether `password` matches `stored` (constant-time compare). Unreadable strings never match.
    public func verify(_ password: String, against stored: String) async throws -> Bool {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "scrypt", let salt = Data(base64Encoded: String(parts[2])),
            let expected = Data(base64Encoded: String(parts[3])), expected.count == 32
        else { return false }
        var parameters: [String: Int] = [:]
        for item in parts[1].split(separator: ",") {
            let pair = item.split(separator: "=")
            guard pair.count == 2, let value = Int(pair[1]) else { return false }
            parameters[String(pair[0])] = value
        }
        guard let logN = parameters["ln"], let r = parameters["r"], let p = parameters["p"], (10...20).contains(logN),
            (1...32).contains(r), (1...16).contains(p)
        else { return false }
        let derived = try await Self.derive(password, salt: salt, logN: logN, r: r, p: p)
        return Bytes.constantTimeEqual(derived, expected)
    }

    /// Spends the time of one verification without an account, so a missing user cannot be told from a wrong
    /// password by timing.
    public func verifyNothing(_ password: String) async throws {
        _ = try await Self.derive(password, salt: Data(count: 16), logN: logN, r: r, p: p)
    }

    /// Hashing's own threads: NIO's shared pool also resolves host names, which must not wait behind a queue of
    /// hashes. Twice the cores: logins share the CPU by time slices rather than queueing behind a few long hashes
    /// (at most 32 MiB each, so the pool bounds the memory too).
    private static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: max(4, 2 * System.coreCount))
        pool.start()
        return pool
    }()

    private static func derive(_ password: String, salt: Data, logN: Int, r: Int, p: Int) async throws -> Data {
        guard password.unicodeScalars.count <= maxLength else {
            throw AssentServerError.invalidRequest("A password is at most \(maxLength) characters.")
        }
        let bytes = Data(password.utf8)
        return try await pool.runIfActive {
            let key = try KDF.Scrypt.deriveKey(
                from: bytes, salt: salt, outputByteCount: 32, rounds: 1 << logN, blockSize: r, parallelism: p)
            return key.withUnsafeBytes { Data($0) }
        }
    }
}
