import AssentCrypto
import AssentModel
import AssentSDK
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// The restore drill: a backup taken while the server runs, restored into a new database, serves the same
/// activations, tokens and operations — a phone activated before the backup approves on the restored server — and
/// without the key-encryption key it restores nothing that matters.
@Suite("Backups restore what the server had")
struct BackupTests {
    /// Backs up `server`'s database into a new place and returns where: SQLite's online backup, or `pg_dump` and
    /// `pg_restore` into a new database.
    static func backUp(_ server: TestServer) async throws -> String {
        switch server.backend {
        case .sqlite:
            let copy = TestFiles.sqlitePath()
            let copied = try SQLiteBackup.copy(from: server.location, to: copy)
            #expect(copied.pages > 10 && copied.bytes > 10_000)
            // A backup never replaces a file.
            #expect(throws: SQLiteBackup.Failure.self) { try SQLiteBackup.copy(from: server.location, to: copy) }
            return copy
        case .postgres:
            let dump = TestFiles.folder.appendingPathComponent("\(UUID().uuidString).dump").path
            let dumped = try await Spawn.runOnThread([
                try await PostgresTestCluster.program("pg_dump"), "--format=custom", "--file", dump, server.location,
            ])
            #expect(dumped.status == 0, "\(dumped.errors)")
            let restored = try await PostgresTestCluster.makeDatabase()
            let loaded = try await Spawn.runOnThread([
                try await PostgresTestCluster.program("pg_restore"), "--no-owner", "--dbname", restored, dump,
            ])
            #expect(loaded.status == 0, "\(loaded.errors)")
            return restored
        }
    }

    @Test(
        "A backup taken while serving restores: the phone's token lists and its PIN approves there",
        arguments: Backend.all)
    func restoreDrill(backend: Backend) async throws {
        try await SDKClients.withActivatedClient(backend) { server, http, client, directory in
            let waiting = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            // The phone has used its token and signed before the backup.
            let operations = OperationsService(client: client)
            #expect(try await operations.pending().value.map(\.id) == [waiting.id])
            let location = try await Self.backUp(server)

            let restored = try await server.restored(at: location)
            defer { Task { await restored.shutdown() } }
            try await restored.live { there in
                let phone = try SDKClients.client(restored, base: there.base, directory: directory)
                let pending = try await OperationsService(client: phone).pending()
                #expect(pending.value.map(\.id) == [waiting.id])
                try await OperationsService(client: phone).authorize(
                    try #require(pending.value.first), factor: .pin("1234"))
                // Read with the operator's API key, restored with the rest.
                #expect(try await restored.operation(there, waiting.id).status == .approved)
            }
        }
    }

    @Test("Without its key-encryption key a restored database serves nothing sealed", arguments: [Backend.sqlite])
    func restoreWithoutTheKey(backend: Backend) async throws {
        try await SDKClients.withActivatedClient(backend) { server, http, _, _ in
            _ = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            let location = try await Self.backUp(server)
            // Another key: the server does not start on a database sealed with a key it does not hold.
            let refusal = await #expect(throws: (any Error).self) {
                let wrong = try await server.restored(
                    at: location, keyEncryptionKey: Data(Bytes.random(count: 32)))
                await wrong.shutdown()
            }
            #expect("\(refusal.map(String.init(describing:)) ?? "")".contains("which this process does not hold"))
        }
    }

    @Test("assent admin backup copies a data directory, refuses to replace a file, and names pg_dump for PostgreSQL")
    func command() async throws {
        guard FileManager.default.isExecutableFile(atPath: CLITests.executable.path) else {
            Issue.record("The assent executable is not built at \(CLITests.executable.path); run swift build first.")
            return
        }
        let data = TestFiles.folder.appendingPathComponent("backup-\(UUID().uuidString)")
        let created = try await CLITests.run(["admin", "api-key", "create", "--name", "ci", "--data-dir", data.path])
        #expect(created.status == 0, "\(created.errors)")
        let copy = TestFiles.folder.appendingPathComponent("\(UUID().uuidString).sqlite").path
        let backup = try await CLITests.run(["admin", "backup", "--data-dir", data.path, "--to", copy])
        #expect(backup.status == 0, "\(backup.errors)")
        #expect(backup.output.contains("passed SQLite's check") && backup.output.contains("kek"))
        #expect(FileManager.default.fileExists(atPath: copy))
        let again = try await CLITests.run(["admin", "backup", "--data-dir", data.path, "--to", copy])
        #expect(again.status != 0 && again.errors.contains("never replaces"), "\(again.errors)")
        let postgres = try await CLITests.run([
            "admin", "backup", "--database", "postgres://assent@127.0.0.1:1/assent", "--to", copy + "2",
        ])
        #expect(postgres.status != 0 && postgres.errors.contains("pg_dump"), "\(postgres.errors)")
    }
}
