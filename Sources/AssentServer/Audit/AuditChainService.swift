import AssentCrypto
import AssentModel
import Crypto
import Foundation
import Logging
import Prometheus
import Synchronization

/// How the audit chain is sealed, signed and kept.
public struct AuditSettings: Sendable {
    /// A checkpoint is signed once this many rows were sealed since the last one (default 1000)…
    public var checkpointRows = 1000
    /// …or once this long passed with rows sealed since the last one (default 5 minutes).
    public var checkpointInterval: Duration = .seconds(300)
    /// How often the sealer looks for new rows (default 1 s).
    public var sealInterval: Duration = .seconds(1)
    /// Rows older than this are pruned, up to the newest checkpoint below that age; `nil` keeps everything.
    public var retention: Duration?
    /// Rows sealed in one transaction.
    public var batch = 200
    /// Where every checkpoint is also written, outside the database (`serve --audit-witness`, repeatable).
    public var witnesses: [AuditWitness] = []

    public init() {}
}

/// The tamper-evident audit trail: seals rows into the hash chain in one total order (one sealer at a time, after
/// the rows are committed, so writers never wait on the chain), signs checkpoints with the audit key, exports a
/// verifiable range, prunes behind a checkpoint, and reports the chain's state.
public struct AuditChainService: Sendable {
    /// The part of the store this sees.
    let store: any AuditChainStore
    let clock: WallClock
    let audit: Auditor
    let logger: Logger
    let metrics: PrometheusCollectorRegistry
    let egress: Egress
    /// How the chain is sealed, signed and kept.
    let settings: AuditSettings
    /// Held while this process seals the chain.
    let sealing: TryLock
    /// Seals a batch in one commit.
    let commit: Committer<any AuditChainStore>
    /// The signing key once read (the server keeps one service for its life).
    let cachedKey = KeyCache()

    /// How far the sealer may go (PostgreSQL's partitions), once asked.
    let room = SealRoom()

    /// The key read once per service.
    final class KeyCache: Sendable {
        let key = Mutex<ECPrivateKey?>(nil)
    }

    /// The first `seq` the database has no partition for.
    final class SealRoom: Sendable {
        enum Limit { case unknown, unlimited, below(Int64) }
        let limit = Mutex(Limit.unknown)
    }

    /// The audit key, made on first use and sealed (to read its public half: the state, the export's key).
    public func key() async throws -> ECPrivateKey {
        try await store.auditKey(creating: ECPrivateKey(), at: clock.millis)
    }

    /// The key to sign with: the audit key, once it is known to sign the newest checkpoint.
    /// - Throws: `ERR_CONFIGURATION` when it does not: the key was removed (a new one was made) or replaced, or the
    ///   newest checkpoint was; signing on would re-key the trail unnoticed, so the server neither starts nor seals.
    public func signingKey() async throws -> ECPrivateKey {
        if let key = cachedKey.key.withLock({ $0 }) { return key }
        let key = try await key()
        if let newest = try await store.latestAuditCheckpoint(), !newest.isSigned(by: key.publicKey) {
            throw AssentServerError.configuration(
                "The audit key does not sign the newest audit checkpoint (row \(newest.seq)): it was removed or "
                    + "replaced in the database. Restore the database's audit key from a backup; the server does not "
                    + "seal the audit trail with another key.")
        }
        cachedKey.key.withLock { $0 = key }
        return key
    }

    /// Writes checkpoints just committed to every witness; a failure is logged loudly and counted in `/metrics`
    /// (`assent_audit_witness_failures_total`), never lost silently (the next checkpoint is witnessed again).
    func witness(_ checkpoints: [AuditChain.Checkpoint]) async {
        guard !checkpoints.isEmpty else { return }
        for witness in settings.witnesses {
            do {
                try await witness.append(checkpoints, egress: egress)
            } catch {
                metrics.makeCounter(descriptor: Self.witnessFailures, labels: [("witness", witness.kind)])
                    .increment()
                logger.error(
                    "audit witness write failed", metadata: ["audit.witness": "\(witness.label)", "error": "\(error)"])
            }
        }
    }

    static var witnessFailures: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "assent", subsystem: "audit", metricName: "witness_failures", unitName: "total",
            helpText: "Audit checkpoints a witness (file, syslog, webhook) could not take.")
    }

    /// Seals every row waiting, then signs a checkpoint if one is due by time; returns how many rows. Another
    /// process sealing at the same moment (PostgreSQL) leaves this round to it.
    @discardableResult
    public func sealPending() async throws -> Int {
        var total = 0
        while !Task.isCancelled {
            let limit = try await sealLimit()
            guard let (sealed, stopped) = try await sealBatch(below: limit) else { return total }
            total += sealed
            if stopped {
                // The head reached the last partition: more are made, or sealing stops (a row sealed past them
                // would wait in the default partition).
                guard let more = try await makeRoom(), more > limit ?? .max else {
                    throw AssentServerError.internalError(
                        "The audit table has no partition for row \(limit ?? 0), and none could be made.")
                }
                continue
            }
            if sealed < settings.batch { break }
        }
        try await checkpointIfDue()
        return total
    }

    /// The first `seq` the sealer may not give (PostgreSQL's partitions), asked once; `nil`: no limit.
    func sealLimit() async throws -> Int64? {
        switch room.limit.withLock({ $0 }) {
        case .unknown: return try await makeRoom()
        case .unlimited: return nil
        case .below(let limit): return limit
        }
    }

    /// Has the database make partitions ahead of the head where they run short; answers the new limit.
    @discardableResult
    func makeRoom() async throws -> Int64? {
        let upkeep = try await store.keepAuditPartitions(prunable: nil)
        noteUpkeep(upkeep)
        return upkeep?.sealLimit
    }

    /// Remembers the limit an upkeep answered, and says when partitions were made or dropped.
    private func noteUpkeep(_ upkeep: AuditUpkeep?) {
        room.limit.withLock { $0 = upkeep.map { .below($0.sealLimit) } ?? .unlimited }
        guard let upkeep, upkeep.partitionsMade + upkeep.partitionsDropped > 0 else { return }
        logger.notice(
            "audit partitions kept",
            metadata: [
                "audit.partitions_made": "\(upkeep.partitionsMade)",
                "audit.partitions_dropped": "\(upkeep.partitionsDropped)",
                "audit.rows_deleted": "\(upkeep.rowsDeleted)", "audit.seal_limit": "\(upkeep.sealLimit)",
            ])
    }

    /// Seals up to one batch in one transaction, below `limit`, signing a checkpoint at every `checkpointRows` rows;
    /// `nil` when another process holds the chain. `stopped`: rows were left because the limit was reached.
    func sealBatch(below limit: Int64?) async throws -> (sealed: Int, stopped: Bool)? {
        let (result, checkpoints) = try await sealBatchSigning(below: limit)
        await witness(checkpoints)
        return result
    }

    private func sealBatchSigning(below limit: Int64?) async throws -> (
        (sealed: Int, stopped: Bool)?, [AuditChain.Checkpoint]
    ) {
        // One sealer at a time in this process too (SQLite has no lock to take).
        guard sealing.tryAcquire() else { return (nil, []) }
        defer { sealing.release() }
        let key = try await signingKey()
        let settings = settings
        let now = clock.millis
        return try await commit { transaction -> ((sealed: Int, stopped: Bool)?, [AuditChain.Checkpoint]) in
            guard try await transaction.lockAuditChain() else { return (nil, []) }
            var events = try await transaction.unsealedAuditEvents(limit: settings.batch)
            guard !events.isEmpty else { return ((0, false), []) }
            let head = try await transaction.auditChainHead()
            let room = limit.map { max(0, $0 - 1 - (head?.seq ?? 0)) } ?? Int64(events.count)
            let stopped = room < Int64(events.count)
            events = Array(events.prefix(Int(min(room, Int64(events.count)))))
            guard !events.isEmpty else { return ((0, stopped), []) }
            var previous = head?.hash ?? AuditChain.genesis
            var seq = head?.seq ?? 0
            let rows = events.map { event -> SealedAuditRow in
                seq += 1
                let row = AuditChain.Row(
                    seq: seq, id: event.id ?? 0, at: event.at, type: event.type, activationId: event.activationId,
                    userId: event.userId, actor: event.actor, detail: event.detail, applicationId: event.applicationId,
                    prevHash: previous)
                let hash = Hex.decode(row.hash) ?? Data()
                defer { previous = hash }
                return SealedAuditRow(
                    event: event, seq: seq, contentHash: Hex.decode(row.contentHash) ?? Data(), prevHash: previous,
                    hash: hash)
            }
            guard try await transaction.sealAuditEvents(rows) == rows.count else {
                throw AssentServerError.conflict()
            }
            // A checkpoint at every row that completes checkpointRows since the last one.
            var lastSigned = try await transaction.latestAuditCheckpoint()?.seq ?? 0
            var signed: [AuditChain.Checkpoint] = []
            for row in rows where row.seq - lastSigned >= Int64(settings.checkpointRows) {
                let checkpoint = try AuditChain.Checkpoint(seq: row.seq, hash: row.hash, at: now, key: key)
                try await transaction.insertAuditCheckpoint(checkpoint)
                signed.append(checkpoint)
                lastSigned = row.seq
            }
            return ((rows.count, stopped), signed)
        }
    }

    /// Signs a checkpoint at the head when rows were sealed since the last one longer than the interval ago (or
    /// there is none yet).
    func checkpointIfDue() async throws {
        guard sealing.tryAcquire() else { return }
        defer { sealing.release() }
        let key = try await signingKey()
        let now = clock.millis
        let interval = Int64(settings.checkpointInterval.components.seconds) * 1000
        let signed = try await commit { transaction -> AuditChain.Checkpoint? in
            guard try await transaction.lockAuditChain() else { return nil }
            guard let head = try await transaction.auditChainHead() else { return nil }
            let last = try await transaction.latestAuditCheckpoint()
            guard head.seq > (last?.seq ?? 0), now - (last?.at ?? 0) >= interval else { return nil }
            let checkpoint = try AuditChain.Checkpoint(seq: head.seq, hash: head.hash, at: now, key: key)
            try await transaction.insertAuditCheckpoint(checkpoint)
            return checkpoint
        }
        await witness(signed.map { [$0] } ?? [])
    }

    /// Signs a checkpoint at the head now, if rows were sealed since the last one (an operator's export wants its
    /// newest rows signed).
    public func checkpointNow() async throws {
        let key = try await signingKey()
        // Another process may hold the chain for a moment: try for a few seconds.
        for _ in 0..<100 {
            try await sealPending()
            let now = clock.millis
            guard sealing.tryAcquire() else {
                try await Task.sleep(for: .milliseconds(50))
                continue
            }
            defer { sealing.release() }
            let (done, signed) = try await commit {
                transaction -> (Bool, AuditChain.Checkpoint?) in
                guard try await transaction.lockAuditChain() else { return (false, nil) }
                guard let head = try await transaction.auditChainHead() else { return (true, nil) }
                guard head.seq > (try await transaction.latestAuditCheckpoint()?.seq ?? 0) else { return (true, nil) }
                let checkpoint = try AuditChain.Checkpoint(seq: head.seq, hash: head.hash, at: now, key: key)
                try await transaction.insertAuditCheckpoint(checkpoint)
                return (true, checkpoint)
            }
            await witness(signed.map { [$0] } ?? [])
            if done { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw AssentServerError.conflict()
    }

    /// The rows written in [from, until) as an export (`audit.jsonl`), widened to whole signed segments: from the
    /// checkpoint before the first row (its anchor) to the first checkpoint at or after the last.
    /// - Throws: `NOT_FOUND` when no sealed row was written in the range.
    public func export(from: Millis, until: Millis) async throws -> String {
        guard let (low, high) = try await store.auditSeqRange(from: from, until: until) else {
            throw AssentServerError.notFound("No sealed audit rows were written in that time range.")
        }
        let anchor = low > 1 ? try await store.auditCheckpoint(atOrBelow: low - 1) : nil
        let end = try await store.auditCheckpoint(atOrAbove: high)?.seq ?? high
        return try await exportText(anchor: anchor, through: end)
    }

    /// The export of rows after `anchor` (from row 1 without one) through `end`: the anchor first, each checkpoint
    /// after the row it signs.
    func exportText(anchor: AuditChain.Checkpoint?, through end: Int64) async throws -> String {
        let start = anchor.map { $0.seq + 1 } ?? 1
        let rows = try await store.sealedAuditRows(from: start, through: end)
        let checkpoints = try await store.auditCheckpoints(from: start, through: end)
        var lines = anchor.map { [AuditChain.Line.checkpoint($0).json] } ?? []
        var next = checkpoints.makeIterator()
        var pendingCheckpoint = next.next()
        for row in rows {
            lines.append(AuditChain.Line.row(Self.exported(row)).json)
            while let checkpoint = pendingCheckpoint, checkpoint.seq <= row.seq {
                lines.append(AuditChain.Line.checkpoint(checkpoint).json)
                pendingCheckpoint = next.next()
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A stored row as exported: its fields and the hashes stored with it.
    static func exported(_ row: SealedAuditRow) -> AuditChain.Row {
        AuditChain.Row(
            seq: row.seq, id: row.event.id ?? 0, at: row.event.at, type: row.event.type,
            activationId: row.event.activationId, userId: row.event.userId, actor: row.event.actor,
            detail: row.event.detail, applicationId: row.event.applicationId, contentHash: row.contentHash,
            prevHash: row.prevHash, hash: row.hash)
    }

    /// The chain's state, with the newest signed segment checked against the key.
    public func status() async throws -> AuditChainInfo {
        // The checkpoint first, then the head: the head is never behind it.
        let last = try await store.latestAuditCheckpoint()
        let head = try await store.auditChainHead()
        let key = try await key().publicKey
        let first = try await store.firstAuditSeq()
        var info = AuditChainInfo(
            sealedThrough: head?.seq, unsealed: try await store.unsealedAuditCount(),
            lastCheckpointSeq: last?.seq, lastCheckpointAt: last.map { Date(millis: $0.at) }, firstSeq: first,
            verified: nil, problem: nil, keyFingerprint: Self.fingerprint(key))
        // The rows since the checkpoint before the last (at most a few thousand) against the key.
        if let head {
            // Anchored at the checkpoint before the last one, or where the stored rows begin.
            var from: AuditChain.Checkpoint?
            if let last, last.seq > 1 {
                from = try await store.auditCheckpoint(atOrBelow: min(last.seq, head.seq) - 1)
            }
            if from == nil, let first, first > 1 {
                from = try await store.auditCheckpoint(atOrBelow: first - 1)
            }
            switch AuditChain.verify(export: try await exportText(anchor: from, through: head.seq), key: key) {
            case .success(let report):
                info.verified = report.rows
            case .failure(let failure):
                info.problem = failure.seq.map { "Row \($0): \(failure.message)" } ?? failure.message
            }
        }
        return info
    }

    /// Deletes rows older than the retention, only up to a checkpoint, so the chain stays verifiable from it. On
    /// PostgreSQL it also keeps partitions ahead of the head, and removes rows by dropping whole partitions: a row
    /// waits until every row of its partition may go (see ``Migrations/auditPartitionsFunction``).
    public func prune() async throws {
        var prunable: Int64?
        if let retention = settings.retention {
            let cutoff = clock.millis - Int64(retention.components.seconds) * 1000
            if let last = try await store.lastAuditSeq(writtenBefore: cutoff) {
                prunable = try await store.auditCheckpoint(atOrBelow: last)?.seq
            }
        }
        if let upkeep = try await store.keepAuditPartitions(prunable: prunable) {
            noteUpkeep(upkeep)
        } else if let prunable {
            try await store.pruneAuditRows(through: prunable)
        }
    }

    /// The first 16 hex digits of SHA-256 of the key's X9.63 bytes, to compare by eye.
    static func fingerprint(_ key: ECPublicKey) -> String {
        String(Hex.encode(Data(SHA256.hash(data: key.x963))).prefix(16))
    }
}

/// Seals new audit rows every ``AuditSettings/sealInterval``, signs checkpoints when due, and prunes once a minute;
/// run by the ``Sweeper`` service beside its sweep.
struct AuditSealer {
    let chain: AuditChainService

    /// Until cancelled.
    func run() async {
        let interval = chain.settings.sealInterval
        var lastPrune = ContinuousClock.now - .seconds(60)
        var nextCheckpointLook = ContinuousClock.now
        let checkpointLook = min(chain.settings.checkpointInterval / 10, .seconds(30))
        while !Task.isCancelled {
            do {
                // An idle round is one query: rows waiting, or a time-based checkpoint to look at.
                if try await chain.store.unsealedAuditCount() > 0 || ContinuousClock.now >= nextCheckpointLook {
                    try await chain.sealPending()
                    nextCheckpointLook = .now + checkpointLook
                }
                if ContinuousClock.now - lastPrune >= .seconds(60) {
                    lastPrune = .now
                    try await chain.prune()
                }
            } catch {
                chain.logger.warning(
                    "audit sealing failed", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            }
            try? await Task.sleep(for: interval)
        }
    }
}
