import ArgumentParser
import AssentServer
import Foundation

/// `assent admin backup`: a consistent copy of the SQLite database while servers run, on the machine that holds it.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup", abstract: "Copy the SQLite database while servers run (the key is kept apart).",
        discussion: """
            Copies --data-dir's assent.sqlite with SQLite's online backup into a new file, checks the copy and only \
            then puts it in place. The key-encryption key is not in the copy: back up the kek file (or ASSENT_KEK) \
            separately — without it a restored database's secrets cannot be unsealed. To restore, stop the server, \
            put the copy in an empty data directory as assent.sqlite with the kek file beside it, and start it. \
            PostgreSQL is backed up with its own tools: pg_dump --format=custom, restored with pg_restore \
            (docs/DEPLOY.md).
            """)

    @OptionGroup var storage: StorageOptions
    @Option(help: "The new file the copy is written to (an existing file is never replaced).") var to: String

    func run() async throws {
        if storage.databaseURL != nil {
            throw ValidationError(
                "PostgreSQL is backed up with its own tools: pg_dump --format=custom --file assent.dump URL, "
                    + "restored with pg_restore --dbname URL assent.dump (docs/DEPLOY.md).")
        }
        let directory = storage.location.dataDirectory
        let copied = try SQLiteBackup.copy(
            from: directory.appendingPathComponent("assent.sqlite").path, to: to)
        say("Copied \(copied.pages) pages (\(copied.bytes) bytes) to \(to); the copy passed SQLite's check.")
        say(
            "The key-encryption key is not in it: keep \(directory.appendingPathComponent("kek").path) "
                + "(or ASSENT_KEK) backed up apart from the copy.")
    }
}
