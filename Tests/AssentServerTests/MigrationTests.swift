import AssentCrypto
import Foundation
import Logging
import SQLKit
import Testing

@testable import AssentServer
@testable import AssentServerTesting

@Suite("Schema upgrades")
struct MigrationTests {
    /// A store on a new, empty database (no migration run yet).
    static func emptyStore(_ backend: Backend) async throws -> SQLStore {
        var logger = Logger(label: "assent.test")
        logger.logLevel = .critical
        let box = try SecretBox(keyEncryptionKey: Bytes.random(count: 32))
        switch backend {
        case .sqlite:
            return try await SQLStore.sqlite(
                path: TestFiles.sqlitePath(), secretBox: box, logger: logger)
        case .postgres:
            return try await SQLStore.postgres(
                url: try await PostgresTestCluster.makeDatabase(), secretBox: box, logger: logger)
        }
    }

    @Test(
        "A database of schema version 2 upgrades: its undelivered webhook events move into the outbox",
        arguments: Backend.all)
    func fromVersion2(backend: Backend) async throws {
        let store = try await Self.emptyStore(backend)
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

    @Test(
        "Version 27: the operation templates a database had become its first application's, and each application's are its own",
        arguments: Backend.all)
    func templatesOfVersion27(backend: Backend) async throws {
        let store = try await Self.emptyStore(backend)
        defer { Task { try? await store.shutdown() } }
        try await store.database.raw(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"
        ).run()
        for migration in Migrations.all where migration.version < 27 {
            for statement in backend == .sqlite ? migration.sqlite : migration.postgres {
                try await store.database.raw(SQLQueryString(statement)).run()
            }
            try await store.database.raw(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (\(bind: migration.version), 0)"
            ).run()
        }
        func application(_ name: String, at: Millis) -> ApplicationRecord {
            ApplicationRecord(
                id: UUID().uuidString.lowercased(), name: name, applicationKey: name, applicationSecret: name,
                masterPrivateKey: ECPrivateKey(), createdAt: at)
        }
        let first = application("default", at: 1_000)
        let second = application("Business", at: 2_000)
        try await store.insertApplication(second)
        try await store.insertApplication(first)
        try await store.database.raw(
            """
            INSERT INTO operation_templates (name, body, updated_at) VALUES ('payment', '{"name":"authorize_payment"}', 5)
            """
        ).run()

        try await store.migrate()

        let moved = try await store.template(applicationId: first.id, name: "payment")
        #expect(moved?.body == #"{"name":"authorize_payment"}"# && moved?.updatedAt == 5)
        #expect(try await store.template(applicationId: second.id, name: "payment") == nil)
        // The same name in the second application is another template; saving again replaces only its own.
        try await store.putTemplate(applicationId: second.id, name: "payment", body: "{}", at: 6)
        try await store.putTemplate(applicationId: second.id, name: "payment", body: #"{"a":1}"#, at: 7)
        #expect(try await store.templates(applicationId: second.id).map(\.body) == [#"{"a":1}"#])
        #expect(try await store.templates(applicationId: first.id).map(\.updatedAt) == [5])
        #expect(try await store.deleteTemplate(applicationId: second.id, name: "payment"))
        #expect(try await store.template(applicationId: first.id, name: "payment") != nil)
    }

    @Test(
        "Version 12: no subject index on the outbox; the finished-time index holds finished operations and serves the per-hour counts",
        arguments: Backend.all)
    func indexesOfVersion12(backend: Backend) async throws {
        let store = try await Self.emptyStore(backend)
        defer { Task { try? await store.shutdown() } }
        try await store.migrate()
        let listing: SQLQueryString =
            backend == .sqlite
            ? "SELECT name, sql AS definition FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
            : "SELECT indexname AS name, indexdef AS definition FROM pg_indexes WHERE schemaname = 'public'"
        var indexes: [String: String] = [:]
        for row in try await store.database.raw(listing).all() {
            indexes[try row.decode(column: "name", as: String.self)] = try row.decode(
                column: "definition", as: String.self)
        }
        #expect(indexes["outbox_subject"] == nil)
        let finished = try #require(indexes["operations_finished"])
        #expect(
            finished.replacingOccurrences(of: "(", with: "").contains("WHERE finished_at IS NOT NULL"), "\(finished)")
        if backend == .sqlite {
            // The console's per-hour counts still read the partial index.
            let plan = try await store.database.raw(
                "EXPLAIN QUERY PLAN " + SQLStore.finishedPerHourQuery(applicationId: "a", since: 0)
            ).all().map { try $0.decode(column: "detail", as: String.self) }
            #expect(plan.contains { $0.contains("USING INDEX operations_finished") }, "\(plan)")
        }
        // What the outbox still answers by subject, without its index.
        try await store.database.raw(
            """
            INSERT INTO outbox (channel, event, subject, payload, at, next_attempt_at)
            VALUES ('webhook', 'operation.status_changed', 'op-1', '{}', 1, 1),
                ('webhook', 'operation.status_changed', 'op-2', '{}', 2, 2)
            """
        ).run()
        #expect(try await store.outboxItems(subject: "op-2").map(\.subject) == ["op-2"])
    }

    @Test(
        "Version 42: the key ring's re-seal finds operations' proximity seeds by a partial index, not by reading the table",
        arguments: Backend.all)
    func proximitySeedIndex(backend: Backend) async throws {
        let store = try await Self.emptyStore(backend)
        defer { Task { try? await store.shutdown() } }
        try await store.migrate()
        let query = store.resealQuery(.operationProximitySeed, after: .text("op-1"), limit: 200)
        let plan: [String]
        switch backend {
        case .sqlite:
            plan = try await store.database.raw("EXPLAIN QUERY PLAN " + query).all().map {
                try $0.decode(column: "detail", as: String.self)
            }
        case .postgres:
            // An empty table is read whole whatever its indexes: the plan is asked without sequential scans.
            plan = try await store.inOneCommit { bound in
                let database = try #require(bound as? SQLStore).database
                try await database.raw("SET LOCAL enable_seqscan = off").run()
                return try await database.raw("EXPLAIN " + query).all().map {
                    try $0.decode(column: "QUERY PLAN", as: String.self)
                }
            }
        }
        #expect(plan.contains { $0.contains("operations_proximity_seed") }, "\(plan)")
    }

    @Test("A schema is current, behind or ahead of this build's migrations")
    func schemaStates() {
        #expect(SchemaState(applied: [1, 2, 3], known: [1, 2, 3]) == .current)
        #expect(SchemaState(applied: [1], known: [1, 2, 3]) == .behind(missing: [2, 3]))
        #expect(SchemaState(applied: [], known: [1, 2]) == .behind(missing: [1, 2]))
        #expect(SchemaState(applied: [1, 2, 3, 5, 4], known: [1, 2, 3]) == .ahead(unknown: [4, 5]))
        // Newer versions count even where an older one is missing.
        #expect(SchemaState(applied: [1, 4], known: [1, 2, 3]) == .ahead(unknown: [4]))
    }

    @Test("A newer schema is served only when every newer version declared this build serves it")
    func compatibleSchemaStates() {
        // Version 41 only added, declaring builds knowing 40 serve it.
        #expect(
            SchemaState(applied: [1, 40, 41], known: [1, 40], compatibleFrom: [40: 39, 41: 40])
                == .aheadCompatible(unknown: [41]))
        // 42 removed what 40 read: served from 41 on.
        #expect(
            SchemaState(applied: [1, 40, 41, 42], known: [1, 40], compatibleFrom: [40: 39, 41: 40, 42: 41])
                == .ahead(unknown: [41, 42]))
        #expect(
            SchemaState(applied: [1, 40, 41, 42], known: [1, 40, 41], compatibleFrom: [41: 40, 42: 41])
                == .aheadCompatible(unknown: [42]))
        // A newer version that recorded nothing, or a version this build has that the schema lacks under a newer one.
        #expect(SchemaState(applied: [1, 40, 41], known: [1, 40]) == .ahead(unknown: [41]))
        #expect(
            SchemaState(applied: [1, 41], known: [1, 40], compatibleFrom: [41: 1]) == .ahead(unknown: [41]))
        #expect(SchemaState.aheadCompatible(unknown: [41]).isServable && SchemaState.current.isServable)
        #expect(!SchemaState.ahead(unknown: [41]).isServable && !SchemaState.behind(missing: [1]).isServable)
    }

    @Test("Every migration from the recorded one on names an older or equal version as the oldest build serving it")
    func migrationsDeclareCompatibility() {
        let versions = Migrations.all.map(\.version)
        #expect(versions == versions.sorted() && Set(versions).count == versions.count)
        #expect(versions.contains(Migrations.compatibilityRecorded))
        for migration in Migrations.all {
            #expect(migration.compatibleFrom <= migration.version, "\(migration.version)")
        }
    }

    /// What a later version of Assent adds, then removes: a column on a table every request writes, a table and an
    /// index built without locking writers (on PostgreSQL; on a table that is not partitioned, as `CONCURRENTLY`
    /// cannot build a partitioned table's index), declared to serve this build; then the column dropped,
    /// declared to serve only builds that know the version adding it.
    static func laterVersions(after newest: Int) -> (adds: Migrations.Migration, removes: Migrations.Migration) {
        let adds = Migrations.Migration(
            version: newest + 1,
            sqlite: [
                "ALTER TABLE operations ADD COLUMN rollout_channel TEXT NOT NULL DEFAULT 'api'",
                "CREATE TABLE IF NOT EXISTS rollout_notes (id INTEGER PRIMARY KEY, note TEXT NOT NULL)",
                "CREATE INDEX IF NOT EXISTS activations_rollout ON activations (platform, user_id)",
            ],
            postgres: [
                "ALTER TABLE operations ADD COLUMN IF NOT EXISTS rollout_channel TEXT NOT NULL DEFAULT 'api'",
                "CREATE TABLE IF NOT EXISTS rollout_notes (id BIGSERIAL PRIMARY KEY, note TEXT NOT NULL)",
                "CREATE INDEX CONCURRENTLY IF NOT EXISTS activations_rollout ON activations (platform, user_id)",
            ],
            compatibleFrom: newest)
        let removes = Migrations.Migration(
            version: newest + 2,
            sqlite: [
                "DROP INDEX IF EXISTS activations_rollout", "ALTER TABLE operations DROP COLUMN rollout_channel",
            ],
            postgres: ["ALTER TABLE operations DROP COLUMN IF EXISTS rollout_channel"], compatibleFrom: newest + 1)
        return (adds, removes)
    }

    @Test(
        "This build serves and restarts on a schema a later version migrated by adding, not on one it removed from",
        arguments: Backend.all)
    func laterVersionMigrates(backend: Backend) async throws {
        let store = try await Self.emptyStore(backend)
        defer { Task { try? await store.shutdown() } }
        try await store.migrate()
        let newest = store.newestKnown
        let later = Self.laterVersions(after: newest)
        #expect(try await store.knowing(Migrations.all + [later.adds]).migrateSchema() == [newest + 1])
        #expect(try await store.schemaState() == .aheadCompatible(unknown: [newest + 1]))
        // This build starts on it (nothing to apply) and is ready; the later one finds it current.
        try await store.migrate()
        #expect(try await store.migrateSchema() == [])
        #expect(Readiness(schema: try await store.schemaState(), draining: false).schema == "AHEAD_COMPATIBLE")
        #expect(Readiness(schema: try await store.schemaState(), draining: false).isReady)
        #expect(try await store.knowing(Migrations.all + [later.adds]).schemaState() == .current)

        // The version after it removes the column: only builds knowing newest + 1 serve that.
        let latest = store.knowing(Migrations.all + [later.adds, later.removes])
        #expect(try await latest.migrateSchema() == [newest + 2])
        #expect(try await store.schemaState() == .ahead(unknown: [newest + 1, newest + 2]))
        #expect(
            try await store.knowing(Migrations.all + [later.adds]).schemaState()
                == .aheadCompatible(unknown: [newest + 2]))
        let error = await #expect(throws: SchemaNewerThanServer.self) { try await store.migrate() }
        #expect(error?.description.contains("no longer serves builds as old as this one") == true)
        #expect(!Readiness(schema: try await store.schemaState(), draining: false).isReady)
    }

    @Test("Ready only with the database up, the schema current and no stop begun; each failure named")
    func readiness() {
        #expect(Readiness(schema: .current, draining: false).isReady)
        let down = Readiness(schema: nil, draining: false)
        #expect(!down.isReady && down.database == "DOWN" && down.schema == nil)
        let behind = Readiness(schema: .behind(missing: [40]), draining: false)
        #expect(!behind.isReady && behind.database == "UP" && behind.schema == "BEHIND")
        #expect(Readiness(schema: .ahead(unknown: [99]), draining: false).schema == "AHEAD")
        let draining = Readiness(schema: .current, draining: true)
        #expect(!draining.isReady && draining.draining && draining.status == "DOWN")
    }

    @Test(
        "A server does not start on a schema a newer version migrated, and says why; readiness reports it",
        arguments: Backend.all)
    func newerSchema(backend: Backend) async throws {
        let store = try await Self.emptyStore(backend)
        defer { Task { try? await store.shutdown() } }
        #expect(try await store.schemaState() == .behind(missing: Migrations.all.map(\.version)))
        try await store.migrate()
        #expect(try await store.schemaState() == .current)
        let newest = try #require(Migrations.all.map(\.version).max())
        try await store.database.raw(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (\(bind: newest + 1), 0)"
        ).run()
        #expect(try await store.schemaState() == .ahead(unknown: [newest + 1]))
        let error = await #expect(throws: SchemaNewerThanServer.self) { try await store.migrate() }
        #expect(
            error?.description.contains("version \(newest + 1), newer than this server knows (up to \(newest))") == true
        )
        let readiness = Readiness(schema: try await store.schemaState(), draining: false)
        #expect(!readiness.isReady && readiness.schema == "AHEAD")
    }
}
