import AssentCrypto
import AssentModel
import Foundation
import SQLKit
import Testing

@testable import AssentServer
@testable import AssentServerTesting

@Suite("Operations by month: ids that carry their time, partitions on PostgreSQL, retention")
struct OperationPartitionTests {
    static let day: Millis = 86_400_000

    @Test("Operation ids are UUIDs of version 7 whose first 48 bits are the creation time (RFC 9562's example)")
    func idsCarryTheirTime() {
        // RFC 9562, appendix A.6: 2022-02-22 19:22:22 UTC is 0x017F22E279B0 milliseconds.
        #expect(OperationId.createdAt("017f22e2-79b0-7cc3-98c4-dc0c0c07398f") == 0x017F_22E2_79B0)
        #expect(0x017F_22E2_79B0 == 1_645_557_742_000)
        var seen = Set<String>()
        for _ in 0..<1000 {
            let id = OperationId.make(at: 1_645_557_742_000)
            #expect(id.hasPrefix("017f22e2-79b0-7") && "89ab".contains(Array(id)[19]), "\(id)")
            #expect(UUID(uuidString: id) != nil && id == id.lowercased())
            #expect(OperationId.createdAt(id) == 1_645_557_742_000)
            seen.insert(id)
        }
        #expect(seen.count == 1000)
        #expect(OperationId.createdAt(OperationId.make(at: 0)) == 0)
        #expect(OperationId.createdAt(OperationId.make(at: 0xFFFF_FFFF_FFFF)) == 0xFFFF_FFFF_FFFF)
        // Ids of other versions, other forms and other texts carry no time.
        for other in [
            UUID().uuidString.lowercased(), "017F22E2-79B0-7CC3-98C4-DC0C0C07398F",
            "017f22e2-79b0-7cc3-18c4-dc0c0c07398f",
            "017f22e279b07cc398c4dc0c0c07398f", "017f22e2-79b0-7cc3-98c4-dc0c0c07398", "op", "",
            "017f22e2-79b0-7cc3-98c4-dc0c0c07398g", "017f22e2_79b0-7cc3-98c4-dc0c0c07398f",
        ] {
            #expect(OperationId.createdAt(other) == nil, "\(other)")
        }
    }

    @Test("An operation retention under a day or over 100 years is refused")
    func retentionRange() throws {
        var policy = SecurityPolicy()
        for seconds in [1, 3_600, 86_399, 36_501 * 86_400] {
            policy.operationRetention = seconds
            #expect(throws: AssentServerError.self) { try policy.validate() }
        }
        policy.operationRetention = 86_400
        try policy.validate()
    }

    /// The first millisecond of the month `months` after the one `millis` falls in (UTC).
    static func monthStart(_ millis: Millis, plus months: Int = 0) -> Millis {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let date = Date(millis: millis)
        let first = calendar.date(from: calendar.dateComponents([.year, .month], from: date))!
        return calendar.date(byAdding: .month, value: months, to: first)!.millis
    }

    static func application() -> ApplicationRecord {
        ApplicationRecord(
            id: UUID().uuidString.lowercased(), name: "default", applicationKey: UUID().uuidString,
            applicationSecret: "secret", masterPrivateKey: ECPrivateKey(), createdAt: 0)
    }

    /// An operation of `application` made at `createdAt`, with an id carrying that time unless `id` is given.
    static func operation(
        _ application: ApplicationRecord, at createdAt: Millis, _ status: OperationStatus = .approved,
        id: String? = nil
    ) -> OperationRecord {
        var record = StateTransitionTests.operation(status)
        record.id = id ?? OperationId.make(at: createdAt)
        record.applicationId = application.id
        (record.createdAt, record.updatedAt, record.expiresAt) = (createdAt, createdAt, createdAt + 300_000)
        record.finishedAt = status == .pending ? nil : createdAt + 1
        return record
    }

    /// The partitions of `operations` (or of the table `bounds` answers for) with their ranges.
    static func partitions(_ store: SQLStore, bounds: String = "assent_operation_partition_bounds") async throws
        -> [String: (low: Int64?, high: Int64?)]
    {
        var result: [String: (low: Int64?, high: Int64?)] = [:]
        for row in try await store.database.raw("SELECT * FROM \(unsafeRaw: bounds)()").all() {
            result[try row.decode(column: "part_name", as: String.self)] = (
                try row.decode(column: "part_low", as: Int64?.self),
                try row.decode(column: "part_high", as: Int64?.self)
            )
        }
        return result
    }

    /// The partitions `query` reads, by the plan PostgreSQL makes for it.
    static func partitionsRead(_ store: SQLStore, _ query: SQLQueryString, table: String = "operations") async throws
        -> Set<String>
    {
        let plan = try await store.database.raw("EXPLAIN " + query).all().map {
            try $0.decode(column: "QUERY PLAN", as: String.self)
        }
        return Set(
            plan.compactMap { line in
                line.range(of: " on \(table)_[a-z0-9_]+", options: .regularExpression).map {
                    String(line[$0].dropFirst(4))
                }
            })
    }

    @Test(
        "Version 43 makes PostgreSQL's operations month partitions: every row kept, grants and triggers carried over, a new id's lookup reads one partition"
    )
    func partitionsOfVersion43() async throws {
        guard Backend.all.contains(.postgres) else { return }
        let store = try await MigrationTests.emptyStore(.postgres)
        defer { Task { try? await store.shutdown() } }
        _ = try await store.knowing(Migrations.all.filter { $0.version < 43 }).migrateSchema()
        let application = Self.application()
        try await store.insertApplication(application)
        // Operations as builds before made them: random ids, the oldest a year back, the newest this minute.
        let now = Date().millis
        let old = [
            Self.operation(application, at: now - 365 * Self.day, id: UUID().uuidString.lowercased()),
            Self.operation(application, at: now - 40 * Self.day, id: UUID().uuidString.lowercased()),
            Self.operation(application, at: now, .pending, id: UUID().uuidString.lowercased()),
        ]
        for record in old { try await store.insertOperation(record) }
        let role = "assent_reader_\(UInt32.random(in: 0...UInt32.max))"
        try await store.database.raw("CREATE ROLE \(unsafeRaw: role)").run()
        try await store.database.raw("GRANT SELECT, UPDATE ON operations TO \(unsafeRaw: role)").run()

        try await store.migrate()

        let kind = try await store.database.raw(
            "SELECT relkind::text AS kind FROM pg_class WHERE oid = 'operations'::regclass"
        ).first()?.decode(column: "kind", as: String.self)
        #expect(kind == "p")
        let boundary = Self.monthStart(now, plus: 1)
        let partitions = try await Self.partitions(store)
        #expect(partitions["operations_before_partitions"]?.low == nil)
        #expect(partitions["operations_before_partitions"]?.high == boundary)
        for months in 1...2 {
            let start = Self.monthStart(now, plus: months)
            let name = partitions.first { $0.value.low == start }
            #expect(name?.value.high == Self.monthStart(now, plus: months + 1), "\(partitions)")
        }
        #expect(partitions.count == 3, "\(partitions.keys.sorted())")
        for record in old {
            #expect(try await store.operation(id: record.id)?.createdAt == record.createdAt)
        }
        let privileges = try await store.database.raw(
            """
            SELECT has_table_privilege(\(bind: role), 'operations', 'SELECT') AS reads, \
            has_table_privilege(\(bind: role), 'operations', 'UPDATE') AS writes, \
            has_table_privilege(\(bind: role), 'operations', 'DELETE') AS deletes
            """
        ).first()
        #expect(try privileges?.decode(column: "reads", as: Bool.self) == true)
        #expect(try privileges?.decode(column: "writes", as: Bool.self) == true)
        #expect(try privileges?.decode(column: "deletes", as: Bool.self) == false)

        // A status change of an old row and of a new one each write one outbox row and one audit row (the parent's
        // triggers, not also the old table's own).
        var pending = old[2]
        pending.status = .canceled
        pending.finishedAt = now + 1
        #expect(try await store.updateOperation(pending, expectedVersion: pending.version))
        let next = Self.operation(application, at: boundary + 5, .pending)
        try await store.insertOperation(next)
        var finished = next
        finished.status = .approved
        #expect(try await store.updateOperation(finished, expectedVersion: next.version))
        for id in [pending.id, next.id] {
            let outbox = try await store.database.raw(
                "SELECT count(*) AS n FROM outbox WHERE subject = \(bind: id) AND event = 'operation.status_changed'"
            ).first()?.decode(column: "n", as: Int.self)
            let audit = try await store.database.raw(
                "SELECT count(*) AS n FROM audit_events WHERE detail LIKE \(bind: "Operation \(id) is %")"
            ).first()?.decode(column: "n", as: Int.self)
            #expect(outbox == 1 && audit == 1, "\(id): outbox \(outbox ?? -1), audit \(audit ?? -1)")
        }

        // A new id names its partition; an old one is looked for in each.
        let read = try await Self.partitionsRead(
            store, "SELECT * FROM operations WHERE " + SQLStore.operationKey(next.id))
        #expect(read.count == 1 && read.first.map { partitions[$0]?.low } == boundary, "\(read)")
        let readOld = try await Self.partitionsRead(
            store, "SELECT * FROM operations WHERE " + SQLStore.operationKey(old[0].id))
        #expect(readOld == Set(partitions.keys), "\(readOld)")

        // Run again (another process starting), the migration changes nothing.
        for statement in Migrations.all.first(where: { $0.version == 43 })?.postgres ?? [] {
            try await store.database.raw(SQLQueryString(statement)).run()
        }
        #expect(try await Self.partitions(store).keys.sorted() == partitions.keys.sorted())
        #expect(try await store.operation(id: next.id)?.status == .approved)
    }

    @Test(
        "Retention drops a month's partition once its month is past, never one holding a pending operation nor one that ended within a day; SQLite deletes the finished rows",
        arguments: Backend.all)
    func retention(backend: Backend) async throws {
        let store = try await MigrationTests.emptyStore(backend)
        defer { Task { try? await store.shutdown() } }
        try await store.migrate()
        let now = Date().millis
        if backend == .postgres {
            // Past months as partitions of their own: without the first partition, which holds everything before
            // next month.
            try await store.database.raw("DROP TABLE operations_before_partitions").run()
            let made = try await store.keepOperations(now: Self.monthStart(now, plus: -4), removingCreatedBefore: nil)
            #expect(made == OperationUpkeep(partitionsMade: 3), "\(made)")
        }
        let application = Self.application()
        try await store.insertApplication(application)
        let first = Self.operation(application, at: Self.monthStart(now, plus: -4) + 1_000)
        let second = Self.operation(application, at: Self.monthStart(now, plus: -3) + 1_000)
        let pending = Self.operation(application, at: Self.monthStart(now, plus: -2) + 1_000, .pending)
        let beside = Self.operation(application, at: Self.monthStart(now, plus: -2) + 2_000)
        let all = [first, second, pending, beside]
        for record in all { try await store.insertOperation(record) }
        func kept() async throws -> [String] {
            var ids: [String] = []
            for record in all where try await store.operation(id: record.id) != nil { ids.append(record.id) }
            return ids
        }

        // No cutoff removes nothing (PostgreSQL: this month's partition is made).
        let idle = try await store.keepOperations(now: now, removingCreatedBefore: nil)
        #expect(idle == OperationUpkeep(partitionsMade: backend == .postgres ? 1 : 0), "\(idle)")
        #expect(try await kept().count == 4)

        // Everything before last month past the retention (a month that ended a month ago at least, whatever today's
        // date): the two oldest months go, the third holds a pending operation.
        let upkeep = try await store.keepOperations(now: now, removingCreatedBefore: Self.monthStart(now, plus: -1))
        switch backend {
        case .postgres:
            #expect(upkeep == OperationUpkeep(partitionsDropped: 2), "\(upkeep)")
            #expect(try await kept() == [pending.id, beside.id])
        case .sqlite:
            #expect(upkeep == OperationUpkeep(rowsDeleted: 3), "\(upkeep)")
            #expect(try await kept() == [pending.id])
        }

        // Once it is finished, its month goes too.
        var expired = pending
        expired.status = .expired
        expired.finishedAt = now
        #expect(try await store.updateOperation(expired, expectedVersion: pending.version))
        let last = try await store.keepOperations(now: now, removingCreatedBefore: Self.monthStart(now, plus: -1))
        #expect(try await kept().isEmpty)
        #expect(
            last == (backend == .postgres ? OperationUpkeep(partitionsDropped: 1) : OperationUpkeep(rowsDeleted: 1)),
            "\(last)")

        // What is left takes new operations; on PostgreSQL a cutoff ahead of the database's clock (a server whose
        // clock runs fast) drops no month that ended less than a day ago, and this one has not ended.
        let current = Self.operation(application, at: now)
        try await store.insertOperation(current)
        if backend == .postgres {
            let ahead = try await store.keepOperations(now: now, removingCreatedBefore: Self.monthStart(now, plus: 6))
            #expect(ahead == OperationUpkeep(), "\(ahead)")
            #expect(try await store.operation(id: current.id) != nil)
            #expect(
                Set(try await Self.partitions(store).values.compactMap(\.low))
                    == Set((0...2).map { Self.monthStart(now, plus: $0) }))
        }
    }
}

extension OperationPartitionTests {
    @Test(
        "A running server keeps the table: its sweeper makes the months ahead of its clock on PostgreSQL and removes finished operations past the retention on SQLite",
        arguments: Backend.all)
    func sweeperKeepsOperations(backend: Backend) async throws {
        var policy = SecurityPolicy()
        policy.operationRetention = 86_400
        let server = try await TestServer.make(backend, policy: policy)
        defer { Task { await server.shutdown() } }
        // Forty days on by the server's clock: in the month after next at most, which the migration made.
        server.clock.advance(by: 40 * 86_400)
        let now = server.clock.now.millis
        let old = Self.operation(server.application, at: now - 2 * Self.day)
        let recent = Self.operation(server.application, at: now - Self.day / 2)
        // Pending, and not yet due for expiry (else the sweeper expires it first, and then it is finished).
        var pending = Self.operation(server.application, at: now - 2 * Self.day, .pending)
        pending.expiresAt = now + 3_600_000
        let waiting = pending
        for record in [old, recent, waiting] { try await server.store.insertOperation(record) }
        try await server.live { _ in
            let deadline = ContinuousClock.now + .seconds(60)
            switch backend {
            case .sqlite:
                while try await server.store.operation(id: old.id) != nil, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(try await server.store.operation(id: old.id) == nil)
            case .postgres:
                let ahead = Self.monthStart(now, plus: 2)
                while try await Self.partitions(server.store).values.allSatisfy({ $0.low != ahead }),
                    ContinuousClock.now < deadline
                {
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(try await Self.partitions(server.store).values.contains { $0.low == ahead })
                // The old one's month ended less than a day ago by the database's clock: it stays.
                #expect(try await server.store.operation(id: old.id) != nil)
            }
            #expect(try await server.store.operation(id: recent.id) != nil)
            #expect(try await server.store.operation(id: waiting.id) != nil)
        }
    }
}
