import AssentCrypto
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where every signed audit checkpoint is also written, outside the database: someone who can change the database
/// cannot change what was witnessed, so a removed or rewritten tail of the chain is found by verifying an export
/// against the latest witnessed checkpoint (`assent audit verify --anchor`).
///
/// The witness is an append-only file (`serve --audit-witness FILE`): one checkpoint per line, in the export's own
/// format, written after the checkpoint's transaction commits and flushed to disk. Give it to another user, make it
/// append-only (`chattr +a`), or ship it off the host (a log shipper, `tail -F | logger`); the database's writer
/// needs no access to it.
public struct AuditWitness: Sendable, Equatable {
    /// The file checkpoints are appended to.
    public var path: String

    public init(path: String) { self.path = path }

    /// Appends `checkpoints` (one line each) and flushes them to disk.
    func append(_ checkpoints: [AuditChain.Checkpoint]) throws {
        guard !checkpoints.isEmpty else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var text = Data()
        for checkpoint in checkpoints {
            text.append(try encoder.encode(AuditChain.Line.checkpoint(checkpoint)))
            text.append(0x0A)
        }
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw AssentServerError.configuration("The audit witness \(path) cannot be opened (errno \(errno)).")
        }
        defer { close(descriptor) }
        let written = text.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == text.count, fsync(descriptor) == 0 else {
            throw AssentServerError.configuration("The audit witness \(path) could not be written (errno \(errno)).")
        }
    }

    /// The newest checkpoint in a witness's text that `key` signed, or `nil` when there is none.
    public static func latest(in text: String, signedBy key: ECPublicKey) -> AuditChain.Checkpoint? {
        let decoder = JSONDecoder()
        var latest: AuditChain.Checkpoint?
        for line in text.split(separator: "\n") {
            guard case .checkpoint(let checkpoint)? = try? decoder.decode(AuditChain.Line.self, from: Data(line.utf8)),
                checkpoint.isSigned(by: key), checkpoint.seq > (latest?.seq ?? 0)
            else { continue }
            latest = checkpoint
        }
        return latest
    }
}
