import AssentCrypto
import Foundation
import SQLKit

/// An audit row waiting to be sealed, or one sealed.
public struct SealedAuditRow: Sendable, Equatable {
    public var event: AuditEvent
    public var seq: Int64
    public var contentHash: Data
    public var prevHash: Data
    public var hash: Data
}

/// The chain's newest sealed row.
public struct AuditChainHead: Sendable, Equatable {
    public var seq: Int64
    public var hash: Data
}

/// What keeping the audit table's partitions did (PostgreSQL).
public struct AuditUpkeep: Sendable, Equatable {
    public var partitionsMade = 0
    public var partitionsDropped = 0
    /// Rows deleted one by one: those between the dropped ranges and the checkpoint that anchors the rest.
    public var rowsDeleted: Int64 = 0
    /// The first `seq` no partition holds yet: the sealer seals below it.
    public var sealLimit: Int64

    public init(partitionsMade: Int = 0, partitionsDropped: Int = 0, rowsDeleted: Int64 = 0, sealLimit: Int64) {
        self.partitionsMade = partitionsMade
        self.partitionsDropped = partitionsDropped
        self.rowsDeleted = rowsDeleted
        self.sealLimit = sealLimit
    }
}

/// The audit hash chain: sealing, checkpoints, the signing key, export and pruning.
public protocol AuditChainStore: Sendable {
    /// Serializes sealers of one database (PostgreSQL: a transaction-scoped advisory lock; SQLite: one process).
    /// Never waits: `false` when another process holds it.
    func lockAuditChain() async throws -> Bool
    func auditChainHead() async throws -> AuditChainHead?
    /// Rows not sealed yet, in the order they were written.
    func unsealedAuditEvents(limit: Int) async throws -> [AuditEvent]
    /// Seals `rows` in one statement; returns how many were still unsealed (fewer: another sealer won).
    func sealAuditEvents(_ rows: [SealedAuditRow]) async throws -> Int
    func unsealedAuditCount() async throws -> Int
    func latestAuditCheckpoint() async throws -> AuditChain.Checkpoint?
    func insertAuditCheckpoint(_ checkpoint: AuditChain.Checkpoint) async throws
    /// Checkpoints with `seq` in the range, in order.
    func auditCheckpoints(from: Int64, through: Int64) async throws -> [AuditChain.Checkpoint]
    /// The newest checkpoint at or below `seq`.
    func auditCheckpoint(atOrBelow seq: Int64) async throws -> AuditChain.Checkpoint?
    /// The first checkpoint at or above `seq`.
    func auditCheckpoint(atOrAbove seq: Int64) async throws -> AuditChain.Checkpoint?
    /// The lowest and highest sealed `seq` of rows written in [from, until).
    func auditSeqRange(from: Millis, until: Millis) async throws -> (Int64, Int64)?
    /// The `seq` of the newest sealed row written before `until` (of those written in the same millisecond, the
    /// last sealed): a step down the `at` index, where the largest `seq` of every older row would read them all.
    func lastAuditSeq(writtenBefore until: Millis) async throws -> Int64?
    /// Sealed rows with `seq` in the range, in order.
    func sealedAuditRows(from: Int64, through: Int64) async throws -> [SealedAuditRow]
    /// Deletes sealed rows with `seq` at or below `seq`.
    func pruneAuditRows(through seq: Int64) async throws
    /// PostgreSQL: keeps ranges of `seq` (partitions) ahead of the chain's head and, given `prunable` (a checkpoint's
    /// `seq`), drops the ranges wholly at or below it; `nil` on SQLite, whose table has no partitions (it prunes
    /// with ``pruneAuditRows(through:)``).
    func keepAuditPartitions(prunable: Int64?) async throws -> AuditUpkeep?
    /// The lowest sealed `seq` still stored.
    func firstAuditSeq() async throws -> Int64?
    /// The audit signing key, made by the first caller.
    func auditKey(creating candidate: ECPrivateKey, at now: Millis) async throws -> ECPrivateKey
}

extension SQLStore {
    public func lockAuditChain() async throws -> Bool {
        guard backend == .postgres else { return true }
        // One number for "the audit chain"; held until the transaction ends.
        let row = try await database.raw("SELECT pg_try_advisory_xact_lock(7208315) AS locked").first()
        return try row?.decode(column: "locked", as: Bool.self) ?? false
    }

    public func auditChainHead() async throws -> AuditChainHead? {
        guard
            let row = try await database.raw(
                "SELECT seq, chain_hash FROM audit_events WHERE seq IS NOT NULL ORDER BY seq DESC LIMIT 1"
            ).first()
        else {
            // Everything pruned up to a checkpoint: the chain goes on from it.
            return try await latestAuditCheckpoint().flatMap { checkpoint in
                Hex.decode(checkpoint.hash).map { AuditChainHead(seq: checkpoint.seq, hash: $0) }
            }
        }
        return AuditChainHead(
            seq: try row.decode(column: "seq", as: Int64.self),
            hash: try row.decode(column: "chain_hash", as: Data.self))
    }

    public func unsealedAuditEvents(limit: Int) async throws -> [AuditEvent] {
        try await database.raw(
            "SELECT * FROM audit_events WHERE seq IS NULL ORDER BY id LIMIT \(bind: Int64(limit))"
        ).all().map(Self.auditEvent)
    }

    public func sealAuditEvents(_ rows: [SealedAuditRow]) async throws -> Int {
        guard !rows.isEmpty else { return 0 }
        var query = SQLQueryString("UPDATE audit_events SET seq = CASE id")
        for row in rows {
            query.appendInterpolation(unsafeRaw: " WHEN ")
            query.appendInterpolation(bind: row.event.id ?? 0)
            query.appendInterpolation(unsafeRaw: " THEN ")
            query.appendInterpolation(bind: row.seq)
        }
        for (column, value) in [
            ("content_hash", \SealedAuditRow.contentHash), ("prev_hash", \.prevHash), ("chain_hash", \.hash),
        ] {
            query.appendInterpolation(unsafeRaw: " END, \(column) = CASE id")
            for row in rows {
                query.appendInterpolation(unsafeRaw: " WHEN ")
                query.appendInterpolation(bind: row.event.id ?? 0)
                query.appendInterpolation(unsafeRaw: " THEN ")
                query.appendInterpolation(bind: row[keyPath: value])
            }
        }
        query.appendInterpolation(unsafeRaw: " END WHERE seq IS NULL AND id IN (")
        for (index, row) in rows.enumerated() {
            if index > 0 { query.appendInterpolation(unsafeRaw: ", ") }
            query.appendInterpolation(bind: row.event.id ?? 0)
        }
        query.appendInterpolation(unsafeRaw: ") RETURNING id")
        return try await database.raw(query).all().count
    }

    public func unsealedAuditCount() async throws -> Int {
        let row = try await database.raw("SELECT COUNT(*) AS n FROM audit_events WHERE seq IS NULL").first()
        return Int(try row?.decode(column: "n", as: Int64.self) ?? 0)
    }

    public func latestAuditCheckpoint() async throws -> AuditChain.Checkpoint? {
        try await database.raw("SELECT * FROM audit_checkpoints ORDER BY seq DESC LIMIT 1").first().map(
            Self.checkpoint)
    }

    public func insertAuditCheckpoint(_ c: AuditChain.Checkpoint) async throws {
        guard let hash = Hex.decode(c.hash) else { throw AssentServerError.internalError("A checkpoint hash is hex.") }
        try await database.raw(
            """
            INSERT INTO audit_checkpoints (seq, hash, at, signature)
            VALUES (\(bind: c.seq), \(bind: hash), \(bind: c.at), \(bind: try Base64URL.decode(c.signature)))
            """
        ).run()
    }

    public func auditCheckpoints(from: Int64, through: Int64) async throws -> [AuditChain.Checkpoint] {
        try await database.raw(
            """
            SELECT * FROM audit_checkpoints WHERE seq >= \(bind: from) AND seq <= \(bind: through) ORDER BY seq
            """
        ).all().map(Self.checkpoint)
    }

    public func auditCheckpoint(atOrBelow seq: Int64) async throws -> AuditChain.Checkpoint? {
        try await database.raw(
            "SELECT * FROM audit_checkpoints WHERE seq <= \(bind: seq) ORDER BY seq DESC LIMIT 1"
        ).first().map(Self.checkpoint)
    }

    public func auditCheckpoint(atOrAbove seq: Int64) async throws -> AuditChain.Checkpoint? {
        try await database.raw(
            "SELECT * FROM audit_checkpoints WHERE seq >= \(bind: seq) ORDER BY seq LIMIT 1"
        ).first().map(Self.checkpoint)
    }

    public func auditSeqRange(from: Millis, until: Millis) async throws -> (Int64, Int64)? {
        guard
            let row = try await database.raw(
                """
                SELECT MIN(seq) AS low, MAX(seq) AS high FROM audit_events \
                WHERE seq IS NOT NULL AND at >= \(bind: from) AND at < \(bind: until)
                """
            ).first(),
            let low = try row.decode(column: "low", as: Int64?.self),
            let high = try row.decode(column: "high", as: Int64?.self)
        else { return nil }
        return (low, high)
    }

    public func lastAuditSeq(writtenBefore until: Millis) async throws -> Int64? {
        try await database.raw(
            """
            SELECT seq FROM audit_events WHERE seq IS NOT NULL AND at < \(bind: until)
            ORDER BY at DESC, seq DESC LIMIT 1
            """
        ).first()?.decode(column: "seq", as: Int64.self)
    }

    public func sealedAuditRows(from: Int64, through: Int64) async throws -> [SealedAuditRow] {
        try await database.raw(
            """
            SELECT * FROM audit_events WHERE seq >= \(bind: from) AND seq <= \(bind: through) ORDER BY seq
            """
        ).all().map { row in
            SealedAuditRow(
                event: try Self.auditEvent(row), seq: try row.decode(column: "seq", as: Int64.self),
                contentHash: try row.decode(column: "content_hash", as: Data.self),
                prevHash: try row.decode(column: "prev_hash", as: Data.self),
                hash: try row.decode(column: "chain_hash", as: Data.self))
        }
    }

    public func pruneAuditRows(through seq: Int64) async throws {
        try await database.raw("DELETE FROM audit_events WHERE seq IS NOT NULL AND seq <= \(bind: seq)").run()
    }

    public func keepAuditPartitions(prunable: Int64?) async throws -> AuditUpkeep? {
        guard backend == .postgres else { return nil }
        guard
            let row = try await database.raw(
                "SELECT made, dropped, deleted, high FROM assent_audit_partitions(\(bind: prunable)::bigint)"
            ).first()
        else { throw AssentServerError.internalError("assent_audit_partitions answered nothing.") }
        return AuditUpkeep(
            partitionsMade: try row.decode(column: "made", as: Int.self),
            partitionsDropped: try row.decode(column: "dropped", as: Int.self),
            rowsDeleted: try row.decode(column: "deleted", as: Int64.self),
            sealLimit: try row.decode(column: "high", as: Int64.self))
    }

    public func firstAuditSeq() async throws -> Int64? {
        try await database.raw("SELECT MIN(seq) AS low FROM audit_events").first()?.decode(
            column: "low", as: Int64?.self)
    }

    public func auditKey(creating candidate: ECPrivateKey, at now: Millis) async throws -> ECPrivateKey {
        if let row = try await database.raw("SELECT private_key FROM audit_keys WHERE id = 'audit'").first() {
            return try ECPrivateKey(
                scalar: try box.open(
                    try row.decode(column: "private_key", as: Data.self), context: SealedColumn.auditKey.context()))
        }
        let sealed = try box.seal(candidate.scalar, context: SealedColumn.auditKey.context())
        try await database.raw(
            """
            INSERT INTO audit_keys (id, private_key, created_at) VALUES ('audit', \(bind: sealed), \(bind: now))
            ON CONFLICT (id) DO NOTHING
            """
        ).run()
        guard let row = try await database.raw("SELECT private_key FROM audit_keys WHERE id = 'audit'").first() else {
            throw AssentServerError.internalError("The audit key was not stored.")
        }
        return try ECPrivateKey(
            scalar: try box.open(
                try row.decode(column: "private_key", as: Data.self), context: SealedColumn.auditKey.context()))
    }

    static func auditEvent(_ row: any SQLRow) throws -> AuditEvent {
        AuditEvent(
            id: try row.decode(column: "id", as: Int64.self), at: try row.decode(column: "at", as: Int64.self),
            type: try row.decode(column: "type", as: String.self),
            activationId: try row.decode(column: "activation_id", as: String?.self),
            userId: try row.decode(column: "user_id", as: String?.self),
            actor: try row.decode(column: "actor", as: String.self),
            detail: try row.decode(column: "detail", as: String.self),
            applicationId: try row.decode(column: "application_id", as: String?.self))
    }

    static func checkpoint(_ row: any SQLRow) throws -> AuditChain.Checkpoint {
        AuditChain.Checkpoint(
            seq: try row.decode(column: "seq", as: Int64.self),
            hash: Hex.encode(try row.decode(column: "hash", as: Data.self)),
            at: try row.decode(column: "at", as: Int64.self),
            signature: Base64URL.encode(try row.decode(column: "signature", as: Data.self)))
    }
}
