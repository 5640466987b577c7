import ArgumentParser
import AssentServer
import Foundation

/// `assent serve`'s audit chain options.
struct AuditOptions: ParsableArguments {
    @Option(help: "Sign an audit checkpoint every this many rows (default 1000).") var auditCheckpointRows = 1000
    @Option(help: "…or every this many minutes when rows were added since the last one (default 5).")
    var auditCheckpointMinutes = 5
    @Option(
        help: """
            Prune audit rows older than this many days, only up to a signed checkpoint (default: keep every row).
            """)
    var auditRetentionDays: Int?
    @Option(
        help: ArgumentHelp(
            "Also append every signed audit checkpoint to this file, outside the database.",
            discussion: """
                One line per checkpoint, flushed to disk. Keep it where the database's users cannot write (another \
                user, chattr +a, or shipped off the host) and verify exports against it: assent audit verify \
                --anchor FILE finds a removed or rewritten tail. Env: ASSENT_AUDIT_WITNESS.
                """))
    var auditWitness: String?

    func apply(to settings: inout AuditSettings) throws {
        guard (1...100_000).contains(auditCheckpointRows) else {
            throw ValidationError("--audit-checkpoint-rows is 1 to 100000.")
        }
        guard (1...1440).contains(auditCheckpointMinutes) else {
            throw ValidationError("--audit-checkpoint-minutes is 1 to 1440.")
        }
        if let path = auditWitness ?? ProcessInfo.processInfo.environment["ASSENT_AUDIT_WITNESS"] {
            guard !path.isEmpty else { throw ValidationError("--audit-witness names a file.") }
            settings.witness = AuditWitness(path: path)
        }
        settings.checkpointRows = auditCheckpointRows
        settings.checkpointInterval = .seconds(auditCheckpointMinutes * 60)
        if let auditRetentionDays {
            guard (1...36_500).contains(auditRetentionDays) else {
                throw ValidationError("--audit-retention-days is 1 to 36500.")
            }
            settings.retention = .seconds(auditRetentionDays * 86_400)
        }
    }
}
