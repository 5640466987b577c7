import AssentCrypto
import Foundation
import Logging
import SQLKit
import Testing

@testable import AssentServer

@Suite("Schema upgrades")
struct MigrationTests {
    @Test(
        "A database of schema version 2 upgrades: its undelivered webhook events move into the outbox",
        arguments: Backend.all)
    func fromVersion2(backend: Backend) async throws {
        var logger = Logger(label: "assent.test")
        logger.logLevel = .critical
        let box = try SecretBox(keyEncryptionKey: Bytes.random(count: 32))
        let store: SQLStore =
            switch backend {
            case .sqlite:
                try await SQLStore.sqlite(
                    path: FileManager.default.temporaryDirectory.appendingPathComponent("assent-\(UUID()).sqlite")
                        .path, secretBox: box, logger: logger)
            case .postgres:
                try await SQLStore.postgres(
                    url: try await PostgresTestCluster.makeDatabase(), secretBox: box, logger: logger)
            }
        defer { Task { try? await store.shutdown() } }
        // Schema version 2 as the previous release left it, with one undelivered and one delivered event.
        try await store.database.raw(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"
        ).run()
        for migration in Migrations.all.prefix(2) {
            for statement in backend == .sqlite ? migration.sqlite : migration.postgres {
                try await store.database.raw(SQLQueryString(statement)).run()
            }
            try await store.database.raw(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (\(bind: migration.version), 0)"
            ).run()
        }
        try await store.database.raw(
            """
            INSERT INTO webhook_outbox (operation_id, status, status_reason, at, attempts, next_attempt_at, state)
            VALUES ('op-waiting', 'REJECTED', 'INCORRECT_DATA', 1000, 3, 2000, 'pending'),
                ('op-done', 'APPROVED', NULL, 1000, 1, 1000, 'delivered')
            """
        ).run()

        try await store.migrate()

        let moved = try await store.outboxItems(subject: "op-waiting")
        #expect(moved.count == 1)
        let item = try #require(moved.first)
        #expect(item.channel == .webhook && item.event == "operation.status_changed" && item.attempts == 3)
        #expect(item.payloadFields == ["status": "REJECTED", "statusReason": "INCORRECT_DATA"])
        #expect(try await store.outboxItems(subject: "op-done").isEmpty)
        let versions = try await store.database.raw("SELECT version FROM schema_migrations ORDER BY version").all()
            .map { try $0.decode(column: "version", as: Int.self) }
        #expect(versions == Migrations.all.map(\.version))
    }
}
