import ArgumentParser
import AssentServer
import Foundation

/// `assent serve`'s audit chain options.
struct AuditOptions: ParsableArguments {
    @Option(help: "Sign an audit checkpoint every this many rows.") var auditCheckpointRows = 1000
    @Option(help: "…or every this many minutes when rows were added since the last one.")
    var auditCheckpointMinutes = 5
    @Option(
        help: """
            Prune audit rows older than this many days, only up to a signed checkpoint; on PostgreSQL by whole \
            ranges of the chain, about a month each (default: keep every row).
            """)
    var auditRetentionDays: Int?
    @Option(
        help: ArgumentHelp(
            "Also write every signed audit checkpoint outside the database: FILE, syslog[:SOCKET] or an https URL.",
            discussion: """
                Repeatable. A FILE gets one line per checkpoint, flushed to disk: keep it where the database's users \
                cannot write (another user, chattr +a, or shipped off the host). syslog sends one RFC 5424 message \
                per checkpoint (authpriv.notice, app assent) to /dev/log or SOCKET. A URL gets one POST per \
                checkpoint, signed with ASSENT_AUDIT_WITNESS_SECRET (X-Assent-Signature) and sent through the egress \
                policy. Verify exports against what was witnessed: assent audit verify --anchor FILE finds a removed \
                or rewritten tail. Env: ASSENT_AUDIT_WITNESS (comma-separated).
                """))
    var auditWitness: [String] = []

    func apply(to settings: inout AuditSettings, environment: [String: String]) throws {
        guard (1...100_000).contains(auditCheckpointRows) else {
            throw ValidationError("--audit-checkpoint-rows is 1 to 100000.")
        }
        guard (1...1440).contains(auditCheckpointMinutes) else {
            throw ValidationError("--audit-checkpoint-minutes is 1 to 1440.")
        }
        let witnesses =
            !auditWitness.isEmpty
            ? auditWitness : (environment["ASSENT_AUDIT_WITNESS"] ?? "").split(separator: ",").map(String.init)
        do {
            settings.witnesses = try witnesses.map {
                try AuditWitness.parse($0, secret: environment["ASSENT_AUDIT_WITNESS_SECRET"])
            }
        } catch let error as AssentServerError {
            throw ValidationError(error.message)
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
