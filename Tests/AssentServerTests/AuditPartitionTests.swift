import AssentCrypto
import AssentModel
import Foundation
import Logging
import SQLKit
import Testing

@testable import AssentServer
@testable import AssentServerTesting

@Suite("Audit rows partitioned by their place in the chain on PostgreSQL: room ahead, pruning by whole ranges")
struct AuditPartitionTests {
    static let day: Millis = 86_400_000

    /// The chain service over `store`, with checkpoints every `checkpointRows` rows and the given retention.
    static func chain(_ store: SQLStore, checkpointRows: Int = 1000, retentionDays: Int? = nil, clockOffset: Millis = 0)
        -> AuditChainService
    {
        var logger = Logger(label: "assent.test")
        logger.logLevel = .critical
        var environment = ServerEnvironment(
            store: store, policy: SecurityPolicy(), logger: logger,
            now: { Date().addingTimeInterval(Double(clockOffset) / 1000) }, webhook: nil, push: nil)
        environment.audit.checkpointRows = checkpointRows
        environment.audit.retention = retentionDays.map { .seconds($0 * 86_400) }
        return Services(environment).auditChain
    }

    /// `count` audit rows written at `at`.
    static func write(_ store: SQLStore, count: Int, at: Millis, prefix: String) async throws {
        for index in 0..<count {
            try await store.appendAudit(
                AuditEvent(
                    id: nil, at: at, type: "test.\(prefix)", activationId: nil, userId: "user-\(index % 7)",
                    actor: "operator:ops", detail: "\(prefix) \(index)", applicationId: nil))
        }
    }

    static func count(_ store: SQLStore, _ table: String, _ condition: String = "true") async throws -> Int {
        try await store.database.raw("SELECT count(*) AS n FROM \(unsafeRaw: table) WHERE \(unsafeRaw: condition)")
            .first()?.decode(column: "n", as: Int.self) ?? -1
    }

    static func partitions(_ store: SQLStore) async throws -> [String: (low: Int64?, high: Int64?)] {
        try await OperationPartitionTests.partitions(store, bounds: "assent_audit_partition_bounds")
    }

    /// The whole stored chain checked against the audit key, from the checkpoint that anchors its first row.
    static func verify(_ chain: AuditChainService) async throws -> AuditChain.Report {
        let first = try #require(try await chain.store.firstAuditSeq())
        let anchor = first > 1 ? try await chain.store.auditCheckpoint(atOrBelow: first - 1) : nil
        #expect(first == 1 || anchor?.seq == first - 1, "row \(first) is not anchored by a checkpoint")
        let head = try #require(try await chain.store.auditChainHead())
        return try AuditChain.verify(
            export: try await chain.exportText(anchor: anchor, through: head.seq), key: try await chain.key().publicKey
        ).get()
    }

    @Test(
        "Version 44 makes PostgreSQL's audit table ranges of the chain: sealed rows stay, unsealed ones wait in the default partition, grants and the id sequence carry over"
    )
    func partitionsOfVersion44() async throws {
        guard Backend.all.contains(.postgres) else { return }
        let store = try await MigrationTests.emptyStore(.postgres)
        defer { Task { try? await store.shutdown() } }
        _ = try await store.knowing(Migrations.all.filter { $0.version < 44 }).migrateSchema()
        // Rows as a build of version 43 wrote and sealed them (it has no partitions to stay within).
        let before = Self.chain(store)
        before.room.limit.withLock { $0 = .unlimited }
        try await Self.write(store, count: 30, at: Date().millis, prefix: "sealed")
        try await before.checkpointNow()
        try await Self.write(store, count: 5, at: Date().millis, prefix: "waiting")
        let role = "assent_auditor_\(UInt32.random(in: 0...UInt32.max))"
        try await store.database.raw("CREATE ROLE \(unsafeRaw: role)").run()
        try await store.database.raw("GRANT SELECT, INSERT ON audit_events TO \(unsafeRaw: role)").run()

        try await store.migrate()

        let kind = try await store.database.raw(
            "SELECT relkind::text AS kind FROM pg_class WHERE oid = 'audit_events'::regclass"
        ).first()?.decode(column: "kind", as: String.self)
        #expect(kind == "p")
        let partitions = try await Self.partitions(store)
        #expect(partitions["audit_events_before_partitions"]?.low == nil)
        #expect(partitions["audit_events_before_partitions"]?.high == 31)
        // About a month of rows at the last month's rate, at least 100.
        #expect(partitions["audit_events_from_31"].map { [$0.low, $0.high] } == [31, 131], "\(partitions)")
        #expect(partitions["audit_events_pending"].map { [$0.low, $0.high] } == [nil, nil])
        #expect(partitions.count == 3, "\(partitions.keys.sorted())")
        #expect(try await Self.count(store, "audit_events_pending") == 5)
        #expect(try await Self.count(store, "audit_events_before_partitions") == 30)
        let privileges = try await store.database.raw(
            """
            SELECT has_table_privilege(\(bind: role), 'audit_events', 'SELECT') AS reads, \
            has_table_privilege(\(bind: role), 'audit_events', 'INSERT') AS writes, \
            has_table_privilege(\(bind: role), 'audit_events', 'DELETE') AS deletes, \
            pg_get_serial_sequence('audit_events', 'id') AS sequence
            """
        ).first()
        #expect(try privileges?.decode(column: "reads", as: Bool.self) == true)
        #expect(try privileges?.decode(column: "writes", as: Bool.self) == true)
        #expect(try privileges?.decode(column: "deletes", as: Bool.self) == false)
        #expect(try privileges?.decode(column: "sequence", as: String?.self) != nil)

        // The sealer reads the waiting rows in the default partition alone, and sealing moves them into their range.
        let unsealed = try await OperationPartitionTests.partitionsRead(
            store, "SELECT * FROM audit_events WHERE seq IS NULL ORDER BY id LIMIT 200", table: "audit_events")
        #expect(unsealed == ["audit_events_pending"], "\(unsealed)")
        let after = Self.chain(store)
        #expect(try await after.sealPending() == 5)
        try await Self.write(store, count: 3, at: Date().millis, prefix: "new")
        #expect(try await after.sealPending() == 3)
        #expect(try await Self.count(store, "audit_events_pending") == 0)
        #expect(try await Self.count(store, "audit_events_from_31") == 8)
        let ids = try await store.database.raw("SELECT id FROM audit_events ORDER BY seq").all().map {
            try $0.decode(column: "id", as: Int64.self)
        }
        #expect(ids.count == 38 && Set(ids).count == 38 && ids.last == ids.max(), "\(ids)")
        try await after.checkpointNow()
        let report = try await Self.verify(after)
        #expect(report.rows == 38 && report.unsignedRows == 0, "\(report)")
        // No two rows share a place in the chain, across partitions too.
        await #expect(throws: (any Error).self) {
            try await store.database.raw("UPDATE audit_events SET seq = 30 WHERE seq = 31").run()
        }

        // Run again (another process starting), the migration changes nothing.
        for statement in Migrations.all.first(where: { $0.version == 44 })?.postgres ?? [] {
            try await store.database.raw(SQLQueryString(statement)).run()
        }
        #expect(try await Self.partitions(store).keys.sorted() == partitions.keys.sorted())
    }

    @Test(
        "The sealer stays within the partitions and has more made as the chain grows; rows an older build sealed past them move into the range made for them"
    )
    func roomAhead() async throws {
        guard Backend.all.contains(.postgres) else { return }
        let store = try await MigrationTests.emptyStore(.postgres)
        defer { Task { try? await store.shutdown() } }
        try await store.migrate()
        #expect(try await Self.partitions(store)["audit_events_from_1"].map { [$0.low, $0.high] } == [1, 101])
        try await Self.write(store, count: 250, at: Date().millis, prefix: "busy")
        let chain = Self.chain(store)
        #expect(try await chain.sealPending() == 250)
        #expect(try await Self.count(store, "audit_events_pending") == 0)
        var partitions = try await Self.partitions(store)
        // Each new range as long as the rows sealed in the last month, at least 100.
        #expect(partitions["audit_events_from_101"].map { [$0.low, $0.high] } == [101, 201], "\(partitions)")
        #expect(partitions["audit_events_from_201"].map { [$0.low, $0.high] } == [201, 400], "\(partitions)")
        if case .below(let limit) = chain.room.limit.withLock({ $0 }) {
            #expect(limit == 400)
        } else {
            Issue.record("the sealer knows no limit")
        }

        // A sealer that knows no partitions (an older build) seals past the last range: the rows wait in the default
        // partition, and the next upkeep makes their range and moves them.
        let older = Self.chain(store)
        older.room.limit.withLock { $0 = .unlimited }
        try await Self.write(store, count: 300, at: Date().millis, prefix: "older")
        #expect(try await older.sealPending() == 300)
        #expect(try await Self.count(store, "audit_events_pending") == 151)
        let upkeep = try #require(try await store.keepAuditPartitions(prunable: nil))
        #expect(upkeep.partitionsMade >= 1 && upkeep.sealLimit > 550, "\(upkeep)")
        #expect(try await Self.count(store, "audit_events_pending") == 0)
        partitions = try await Self.partitions(store)
        #expect(partitions["audit_events_from_400"] != nil, "\(partitions.keys.sorted())")
        try await chain.checkpointNow()
        let report = try await Self.verify(chain)
        #expect(report.rows == 550 && report.unsignedRows == 0, "\(report)")
    }

    @Test(
        "Pruning on PostgreSQL drops the ranges wholly past the retention and deletes only the rows up to the next checkpoint; a range holding a row of the last day stays"
    )
    func pruneByRanges() async throws {
        guard Backend.all.contains(.postgres) else { return }
        let store = try await MigrationTests.emptyStore(.postgres)
        defer { Task { try? await store.shutdown() } }
        try await store.migrate()
        // 250 rows of forty days ago (outside the last month: each range is 100 rows), then 10 of now.
        let now = Date().millis
        try await Self.write(store, count: 250, at: now - 40 * Self.day, prefix: "old")
        let chain = Self.chain(store, checkpointRows: 7, retentionDays: 30)
        #expect(try await chain.sealPending() == 250)
        try await Self.write(store, count: 10, at: now, prefix: "new")
        #expect(try await chain.sealPending() == 10)
        try await chain.checkpointNow()
        #expect(
            try await Self.partitions(store).keys.sorted() == [
                "audit_events_before_partitions", "audit_events_from_1", "audit_events_from_101",
                "audit_events_from_201", "audit_events_pending",
            ])

        // The newest checkpoint among the old rows is 245: the ranges up to 200 go whole, and the rows 201 to 203
        // (up to the checkpoint at 203, which anchors the rest) one by one. 204 to 245 wait for their range. The
        // upkeep also makes the next range, 100 rows again (this month's).
        try await chain.prune()
        #expect(
            try await Self.partitions(store).keys.sorted() == [
                "audit_events_from_201", "audit_events_from_301", "audit_events_pending",
            ])
        #expect(try await store.firstAuditSeq() == 204)
        var report = try await Self.verify(chain)
        #expect(report.firstSeq == 204 && report.lastSeq == 260 && report.unsignedRows == 0, "\(report)")

        // A server whose clock runs sixty days ahead would prune every row through the checkpoint at 302, past
        // the end of the range from 201; that range holds rows of this day, so it stays.
        try await Self.write(store, count: 45, at: now, prefix: "today")
        #expect(try await chain.sealPending() == 45)
        #expect(try await store.auditCheckpoint(atOrBelow: 305)?.seq == 302)
        let ahead = Self.chain(store, checkpointRows: 7, retentionDays: 30, clockOffset: 60 * Self.day)
        try await ahead.prune()
        #expect(
            try await Self.partitions(store).keys.sorted() == [
                "audit_events_from_201", "audit_events_from_301", "audit_events_from_401", "audit_events_pending",
            ])
        #expect(try await store.firstAuditSeq() == 204)
        try await chain.checkpointNow()
        report = try await Self.verify(chain)
        #expect(report.rows == 102 && report.unsignedRows == 0, "\(report)")
    }
}
