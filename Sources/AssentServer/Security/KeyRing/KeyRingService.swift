import AssentCrypto
import Foundation
import Logging

/// Changes the key-encryption key without stopping: a new key joins every process's ring, the database names it the
/// sealing key, a re-seal rewrites every value under it, and only then can the old key leave the rings.
///
/// What keeps it safe with several processes on one PostgreSQL database: every server reports the keys its ring
/// holds (``KeyRingKeeper``), the switch is refused while a running process lacks the new key, every process seals
/// with the key the database names (read every few seconds), a value is rewritten only if it still holds what was
/// read, and a key is retired only when no value and no running process uses it.
public struct KeyRingService: Sendable {
    public let store: any KeyRingStore
    public var now: @Sendable () -> Millis = { Date().millis }
    /// How long ``rotate(to:)`` waits for every running process to hold the new key (a file ring is re-read on
    /// each report).
    public var holderWait: Duration = .seconds(20)

    public init(store: any KeyRingStore) {
        self.store = store
    }

    private var box: SecretBox { store.secretBox }

    /// The ring as this process and the database see it.
    public struct Status: Sendable, Codable {
        public var sealingKeyId: String
        public var changedAt: Date
        /// Where this process's ring comes from: `environment` (`ASSENT_KEK`), `file` or `fixed`.
        public var source: String
        public var keyIds: [String]
        /// Values not yet sealed under the sealing key, per `table.column`.
        public var pending: [String: Int]
        /// Server processes seen in the last day.
        public var holders: [KeyRingHolder]
    }

    public func status() async throws -> Status {
        let state = try await store.keyRingState()
        let source =
            switch box.source {
            case .environment: "environment"
            case .file: "file"
            case .fixed: "fixed"
            }
        return Status(
            sealingKeyId: state.sealingKeyId, changedAt: Date(millis: state.changedAt), source: source,
            keyIds: box.keyIds,
            pending: Dictionary(
                try await store.unsealedUnderCurrentKey().map { ($0.column, $0.count) }, uniquingKeysWith: +),
            holders: try await store.keyRingHolders(at: now()))
    }

    /// Makes a key and adds it to this host's ring file; its id. - Throws: when the ring is `ASSENT_KEK` (the
    /// operator adds the key to it and restarts every process).
    public func addKey() throws -> String {
        guard case .file(let url) = box.source else {
            throw AssentServerError.configuration(
                "The ring is ASSENT_KEK: make a key with `assent admin kek new`, add it to ASSENT_KEK for every "
                    + "process, restart them, then rotate with --to <key id>.")
        }
        let key = Bytes.random(count: 32)
        try SecretBox.writeRing(try SecretBox.readRing(url) + [key], to: url)
        try box.add([key])
        return try SecretBox.keyId(of: key)
    }

    /// What ``rotate(to:)`` did.
    public struct Rotation: Sendable, Codable {
        public var previousKeyId: String
        public var sealingKeyId: String
        public var resealed: Int
        public var unreadable: Int
    }

    /// Makes key `id` the sealing key and re-seals every value under it.
    /// - Throws: when the ring lacks the key, it already seals, or a running process still lacks it after
    ///   ``holderWait``.
    public func rotate(to id: String) async throws -> Rotation {
        guard box.holds(id) else {
            throw AssentServerError.configuration(
                "This ring does not hold key \(id): add it to ASSENT_KEK or the kek file first.")
        }
        let state = try await store.keyRingState()
        guard state.sealingKeyId != id else {
            throw AssentServerError(.conflict, "Key \(id) already seals.")
        }
        try await waitForHolders { holder in
            holder.keyIds.contains(id)
                ? nil : "Server process \(holder.id) does not hold key \(id): add it to that process's ring."
        }
        guard try await store.switchSealingKey(from: state.sealingKeyId, to: id, at: now()) else {
            throw AssentServerError(.conflict, "The sealing key changed meanwhile: look at `assent admin kek status`.")
        }
        try box.seal(with: id)
        let report = try await store.reseal(limit: nil)
        return Rotation(
            previousKeyId: state.sealingKeyId, sealingKeyId: id, resealed: report.resealed,
            unreadable: report.unreadable)
    }

    /// What ``retire(_:)`` did.
    public struct Retirement: Sendable, Codable {
        public var keyId: String
        /// Values the last re-seal rewrote (sealed under the old key by a process that had not yet switched).
        public var resealed: Int
        /// Whether the key left this host's ring file (an `ASSENT_KEK` ring is the operator's to change).
        public var removedFromFile: Bool
    }

    /// Takes key `id` out of service: refused while it seals, while a running process still seals with it, or while
    /// any value is not sealed under the sealing key; then removes it from this host's ring file.
    public func retire(_ id: String) async throws -> Retirement {
        let state = try await store.keyRingState()
        try box.seal(with: state.sealingKeyId)
        guard state.sealingKeyId != id else {
            throw AssentServerError(.conflict, "Key \(id) seals: rotate to another key first.")
        }
        try await waitForHolders { holder in
            holder.sealingKeyId == id ? "Server process \(holder.id) still seals with key \(id)." : nil
        }
        let report = try await store.reseal(limit: nil)
        let pending = try await store.unsealedUnderCurrentKey()
        guard pending.isEmpty else {
            let list = pending.map { "\($0.column) (\($0.count))" }.joined(separator: ", ")
            throw AssentServerError(
                .conflict,
                "Values are not sealed under key \(state.sealingKeyId) yet and may need key \(id): \(list). "
                    + (report.unreadable > 0
                        ? "\(report.unreadable) of them no key of this ring opens: add the missing key to the ring."
                        : "Try again."))
        }
        var removed = false
        if case .file(let url) = box.source {
            let keys = try SecretBox.readRing(url)
            let kept = try keys.filter { try SecretBox.keyId(of: $0) != id }
            if kept.count < keys.count {
                try SecretBox.writeRing(kept, to: url)
                removed = true
            }
        }
        return Retirement(keyId: id, resealed: report.resealed, removedFromFile: removed)
    }

    /// Waits until no running process is named by `blocking`; throws the last sentence when ``holderWait`` ends.
    private func waitForHolders(_ blocking: (KeyRingHolder) -> String?) async throws {
        let deadline = ContinuousClock.now + holderWait
        while true {
            let now = now()
            let blocked = try await store.keyRingHolders(at: now).filter { $0.isLive(at: now) }.compactMap(blocking)
            guard let first = blocked.first else { return }
            if ContinuousClock.now >= deadline {
                throw AssentServerError(.conflict, first + " A file ring is re-read every few seconds.")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}

/// A server process's part: every ``interval`` it re-reads a file ring, seals with the key the database names,
/// reports the keys it holds, and re-seals a batch of values not yet under the sealing key.
///
/// The re-seal goes through the sealed columns in key order, each batch after the last, and stops once a whole pass,
/// begun well after the sealing key changed, rewrote nothing: values no key of the ring opens do not keep it reading
/// every table every few seconds. It reads again when the sealing key or the ring's keys change (a restored key opens
/// what did not open).
struct KeyRingKeeper {
    let store: any KeyRingStore
    let logger: Logger
    var interval: Duration
    var batch = 500
    let id =
        "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(UUID().uuidString.prefix(8))"

    /// A whole pass of the re-seal over every sealed column, made of batches.
    struct Pass {
        /// The ring the pass re-seals for: the sealing key, then every key the ring holds.
        var ring: [String]
        var startedAt: Millis
        var cursor = ResealCursor.start
        var resealed = 0
        var unreadable = 0
    }

    /// Until cancelled; the process's report is removed at the end.
    func run() async {
        let box = store.secretBox
        var missing: String?
        var pass: Pass?
        // The ring (sealing key, keys held) a whole pass found nothing left to re-seal for: no scans until it changes.
        var settled: [String]?
        let milliseconds = Int64(
            interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000)
        while !Task.isCancelled {
            do {
                try box.reload()
                let state = try await store.keyRingState()
                if box.holds(state.sealingKeyId) {
                    try box.seal(with: state.sealingKeyId)
                    missing = nil
                } else if missing != state.sealingKeyId {
                    missing = state.sealingKeyId
                    logger.error("\(SecretBox.missingKey(state.sealingKeyId))")
                }
                try await store.putKeyRingHolder(
                    KeyRingHolder(
                        id: id, keyIds: box.keyIds, sealingKeyId: box.sealingKeyId, seenAt: Date().millis,
                        intervalMillis: max(milliseconds, 1)))
                let ring = [box.sealingKeyId] + box.keyIds
                // Re-sealing only under the key the database names (a ring lacking it waits for the key).
                if settled != ring, box.sealingKeyId == state.sealingKeyId {
                    // A pass for another ring starts again from the first column.
                    var current =
                        pass.flatMap { $0.ring == ring ? $0 : nil } ?? Pass(ring: ring, startedAt: Date().millis)
                    let report = try await store.reseal(limit: batch, from: current.cursor)
                    current.resealed += report.resealed
                    current.unreadable += report.unreadable
                    if report.resealed > 0 {
                        logger.notice("re-sealed under the current key", metadata: ["values": "\(report.resealed)"])
                    }
                    if let next = report.next {
                        current.cursor = next
                        pass = current
                    } else {
                        // A process that had not switched yet may still have written under the old key while the
                        // pass ran: only a pass begun well after the change, rewriting nothing, settles.
                        pass = nil
                        if current.resealed == 0, current.startedAt - state.changedAt > 3 * milliseconds {
                            settled = ring
                            if current.unreadable > 0 {
                                logger.error(
                                    """
                                    sealed values no key of this ring opens: add the key they are sealed under \
                                    (`assent admin kek status` counts them per column)
                                    """,
                                    metadata: ["values": "\(current.unreadable)"])
                            }
                        }
                    }
                }
            } catch {
                logger.warning("key ring check failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await Task.sleep(for: interval)
        }
        // Cancelled by now: the report is removed from a task of its own, which a cancelled query does not abort.
        let (store, id) = (store, id)
        await Task.detached { try? await store.deleteKeyRingHolder(id: id) }.value
    }
}
