import Foundation
import SQLKit

/// Which key seals, as every process reads it from the database.
public struct KeyRingState: Sendable, Equatable {
    public var sealingKeyId: String
    public var changedAt: Millis
}

/// A running server process and the keys its ring holds, as it last reported them.
public struct KeyRingHolder: Sendable, Equatable, Codable {
    /// `host:pid:random`, unique per process start.
    public var id: String
    public var keyIds: [String]
    /// The key the process seals with.
    public var sealingKeyId: String
    public var seenAt: Millis
    /// How often the process reports; it counts as running for three of these (at least 10 s) after its last
    /// report, so a busy process is never taken for a stopped one.
    public var intervalMillis: Int64

    public func isLive(at now: Millis) -> Bool { now - seenAt <= max(3 * intervalMillis, 10_000) }
}

extension Migrations {
    /// Version 35: the key-encryption key that seals (one row), and the server processes with the keys they hold.
    static func keyRingV35(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS kek_state (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                sealing_key_id TEXT NOT NULL,
                changed_at \(dialect.bigint) NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS kek_holders (
                id TEXT PRIMARY KEY,
                key_ids TEXT NOT NULL,
                sealing_key_id TEXT NOT NULL,
                seen_at \(dialect.bigint) NOT NULL,
                interval_ms \(dialect.bigint) NOT NULL
            )
            """,
        ]
    }
}

/// The key-encryption key ring's shared state, and the re-seal.
public protocol KeyRingStore: Sendable {
    /// The ring this store seals and opens with.
    var secretBox: SecretBox { get }
    func keyRingState() async throws -> KeyRingState
    func switchSealingKey(from old: String, to new: String, at now: Millis) async throws -> Bool
    func putKeyRingHolder(_ h: KeyRingHolder) async throws
    func keyRingHolders(at now: Millis) async throws -> [KeyRingHolder]
    func deleteKeyRingHolder(id: String) async throws
    func unsealedUnderCurrentKey() async throws -> [(column: String, count: Int)]
    /// Re-seals, from `cursor` on, values not sealed under the sealing key: up to `limit` values read (all of them
    /// to the end with no limit).
    func reseal(limit: Int?, from cursor: ResealCursor) async throws -> ResealReport
}

extension KeyRingStore {
    /// ``reseal(limit:from:)`` from the first column's first row.
    public func reseal(limit: Int?) async throws -> ResealReport { try await reseal(limit: limit, from: .start) }
}

/// Where a re-seal stopped: a sealed column (its place in ``SealedColumn/allCases``) and the key of the last row it
/// read there, so the next pass goes on after it instead of reading the same rows again.
public struct ResealCursor: Sendable, Equatable {
    var column = 0
    var after: SealedColumn.KeyValue?

    public static let start = ResealCursor()
}

/// What one pass of the re-seal did.
public struct ResealReport: Sendable, Equatable {
    /// Values rewritten under the sealing key.
    public var resealed = 0
    /// Values no key of the ring opens (left as they are, and counted).
    public var unreadable = 0
    /// Where the next pass goes on; `nil` when this one reached the last column's end.
    public var next: ResealCursor?
}

extension SQLStore {
    public var secretBox: SecretBox { box }

    /// Makes the key the database names the one that seals (naming this ring's first key on a database that names
    /// none). - Throws: when the ring does not hold that key.
    func adoptSealingKey() async throws {
        try await database.raw(
            """
            INSERT INTO kek_state (id, sealing_key_id, changed_at) VALUES (1, \(bind: box.sealingKeyId), \
            \(bind: Date().millis)) ON CONFLICT (id) DO NOTHING
            """
        ).run()
        let state = try await keyRingState()
        if !box.holds(state.sealingKeyId) { try box.reload() }
        try box.seal(with: state.sealingKeyId)
    }

    public func keyRingState() async throws -> KeyRingState {
        guard let row = try await database.raw("SELECT * FROM kek_state WHERE id = 1").first() else {
            throw AssentServerError.internalError("The key ring's state is missing: the store was not migrated.")
        }
        return KeyRingState(
            sealingKeyId: try row.decode(column: "sealing_key_id", as: String.self),
            changedAt: try row.decode(column: "changed_at", as: Int64.self))
    }

    /// Names `new` the sealing key if `old` still is; whether it changed.
    public func switchSealingKey(from old: String, to new: String, at now: Millis) async throws -> Bool {
        !(try await database.raw(
            """
            UPDATE kek_state SET sealing_key_id = \(bind: new), changed_at = \(bind: now) \
            WHERE id = 1 AND sealing_key_id = \(bind: old) RETURNING id
            """
        ).all()).isEmpty
    }

    public func putKeyRingHolder(_ h: KeyRingHolder) async throws {
        try await database.raw(
            """
            INSERT INTO kek_holders (id, key_ids, sealing_key_id, seen_at, interval_ms)
            VALUES (\(bind: h.id), \(bind: h.keyIds.joined(separator: " ")), \(bind: h.sealingKeyId), \
            \(bind: h.seenAt), \(bind: h.intervalMillis))
            ON CONFLICT (id) DO UPDATE SET key_ids = excluded.key_ids, sealing_key_id = excluded.sealing_key_id, \
            seen_at = excluded.seen_at, interval_ms = excluded.interval_ms
            """
        ).run()
    }

    /// Every process that reported, the stale ones (gone for a day) removed first.
    public func keyRingHolders(at now: Millis) async throws -> [KeyRingHolder] {
        try await database.raw("DELETE FROM kek_holders WHERE seen_at < \(bind: now - 86_400_000)").run()
        return try await database.raw("SELECT * FROM kek_holders ORDER BY id").all().map { row in
            KeyRingHolder(
                id: try row.decode(column: "id", as: String.self),
                keyIds: try row.decode(column: "key_ids", as: String.self).split(separator: " ").map(String.init),
                sealingKeyId: try row.decode(column: "sealing_key_id", as: String.self),
                seenAt: try row.decode(column: "seen_at", as: Int64.self),
                intervalMillis: try row.decode(column: "interval_ms", as: Int64.self))
        }
    }

    public func deleteKeyRingHolder(id: String) async throws {
        try await database.raw("DELETE FROM kek_holders WHERE id = \(bind: id)").run()
    }

    /// The condition "`column` holds a value not sealed under the sealing key".
    private func notCurrent(_ column: SealedColumn) -> SQLQueryString {
        let header = SecretBox.header(box.sealingKeyId)
        let head: SQLQueryString =
            backend == .sqlite
            ? "substr(\(ident: column.column), 1, \(literal: SecretBox.headerCount))"
            : "substring(\(ident: column.column) from 1 for \(literal: SecretBox.headerCount))"
        return
            "\(ident: column.column) IS NOT NULL AND (length(\(ident: column.column)) < \(literal: SecretBox.headerCount) OR "
            + head + " <> \(bind: header))"
    }

    /// How many values of each column are not yet sealed under the sealing key (columns with none left out).
    public func unsealedUnderCurrentKey() async throws -> [(column: String, count: Int)] {
        var counts: [(String, Int)] = []
        for column in SealedColumn.allCases {
            let count =
                try await database.raw(
                    "SELECT count(*) AS n FROM \(ident: column.table) WHERE " + notCurrent(column)
                ).first()?.decode(column: "n", as: Int64.self) ?? 0
            if count > 0 { counts.append(("\(column.table).\(column.column)", Int(count))) }
        }
        return counts
    }

    /// The re-seal's read: `column`'s values not sealed under the sealing key, in key order, after the key `after`.
    /// (Operations' proximity seeds are read through the partial index `operations_proximity_seed`.)
    func resealQuery(_ column: SealedColumn, after: SealedColumn.KeyValue?, limit: Int?) -> SQLQueryString {
        var query: SQLQueryString =
            "SELECT \(idents: column.keys.map(\.name), joinedBy: ", "), \(ident: column.column) AS sealed FROM "
            + "\(ident: column.table) WHERE " + notCurrent(column)
        if let after { query += " AND \(ident: column.keys[0].name) > \(bind: after.bindable)" }
        query += " ORDER BY \(idents: column.keys.map(\.name), joinedBy: ", ")"
        if let limit { query += " LIMIT \(literal: limit)" }
        return query
    }

    /// Rewrites the values, from `cursor` on, that are not sealed under the sealing key: up to `limit` values read in
    /// all (every one to the end with no limit). Each row is rewritten only if it still holds the value read, so a
    /// concurrent write always wins; a value no key opens is counted and passed over.
    public func reseal(limit: Int?, from cursor: ResealCursor) async throws -> ResealReport {
        var report = ResealReport()
        var cursor = cursor
        var done = 0
        let columns = SealedColumn.allCases
        while cursor.column < columns.count {
            if let limit, done >= limit {
                report.next = cursor
                break
            }
            let column = columns[cursor.column]
            // Composite keys (one small table) are read whole; others page on their key, in key order.
            let paged = column.keys.count == 1
            let batch = paged ? min(200, limit.map { $0 - done } ?? 200) : Int.max
            let rows = try await database.raw(
                resealQuery(column, after: cursor.after, limit: paged ? batch : nil)
            ).all()
            for row in rows {
                let keys = try column.keys.map { try $0.value(in: row) }
                let sealed = try row.decode(column: "sealed", as: Data.self)
                let context = column.context(keys.map(\.contextText))
                guard let plain = try? box.open(sealed, context: context) else {
                    report.unreadable += 1
                    continue
                }
                let resealed = try box.seal(plain, context: context)
                var update: SQLQueryString =
                    "UPDATE \(ident: column.table) SET \(ident: column.column) = \(bind: resealed) WHERE "
                for (key, value) in zip(column.keys, keys) {
                    update += "\(ident: key.name) = \(bind: value.bindable) AND "
                }
                // Only under the key the database names now: a process that has not yet seen a switch must not seal
                // values back under the key it still holds.
                update += "\(ident: column.column) = \(bind: sealed) AND EXISTS (SELECT 1 FROM kek_state WHERE id = 1 "
                update +=
                    "AND sealing_key_id = \(bind: SecretBox.sealingKeyId(of: resealed) ?? "")) RETURNING 1 AS done"
                if try await database.raw(update).first() != nil { report.resealed += 1 }
            }
            done += rows.count
            if paged, rows.count == batch, let last = rows.last {
                cursor.after = try column.keys[0].value(in: last)
            } else {
                cursor = ResealCursor(column: cursor.column + 1)
            }
        }
        return report
    }
}
