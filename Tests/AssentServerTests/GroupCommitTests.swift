import AssentCrypto
import Foundation
import Logging
import SQLKit
import Synchronization
import Testing

@testable import AssentServer
@testable import AssentServerTesting

@Suite("Group commit: a statement returns only after an fsync that began after it")
struct GroupCommitTests {
    /// A flush that records the order number at which each one began, on the same counter the statements use.
    final class RecordingFlush: Sendable {
        let order = Atomic<Int>(0)
        let started = Mutex<[Int]>([])
        let fail = Atomic<Bool>(false)

        func next() -> Int { order.add(1, ordering: .sequentiallyConsistent).newValue }

        func flush() throws {
            let start = next()
            Thread.sleep(forTimeInterval: 0.002)
            if fail.load(ordering: .sequentiallyConsistent) { throw POSIXError(.EIO) }
            started.withLock { $0.append(start) }
        }

        /// Whether a completed flush began after `moment`.
        func covered(_ moment: Int) -> Bool { started.withLock { $0.contains { $0 > moment } } }
    }

    @Test("Concurrent writes share flushes, and each returns only once a flush that began after it completed")
    func writesShareFlushes() async throws {
        let recorder = RecordingFlush()
        let wal = WALSync(flush: recorder.flush)
        let writes = 300
        let uncovered = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<writes {
                group.addTask {
                    let finished = try await wal.write { recorder.next() }
                    return recorder.covered(finished)
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 0 : 1) }
        }
        #expect(uncovered == 0)
        #expect(wal.flushCount >= 1)
        #expect(wal.flushCount < writes / 3, "\(wal.flushCount) flushes for \(writes) concurrent writes")
    }

    @Test("A read while a write runs returns after a flush that began after it; with everything on disk, at once")
    func readsWaitForDirtyWrites() async throws {
        let recorder = RecordingFlush()
        let wal = WALSync(flush: recorder.flush)
        try await wal.afterRead()
        #expect(wal.flushCount == 0)

        let (gate, open) = AsyncStream<Void>.makeStream()
        let writer = Task {
            try await wal.write {
                for await _ in gate { break }
                return recorder.next()
            }
        }
        try await Task.sleep(for: .milliseconds(20))  // the write is running: it may commit before the read ends
        let readEnded = recorder.next()
        try await wal.afterRead()
        #expect(recorder.covered(readEnded))
        #expect(wal.flushCount == 1)
        open.yield()
        let written = try await writer.value
        #expect(recorder.covered(written))

        let before = wal.flushCount
        try await wal.afterRead()
        #expect(wal.flushCount == before)
    }

    @Test("A failed fsync fails its writes and every statement after it, without running them")
    func failureIsFinal() async throws {
        let recorder = RecordingFlush()
        let wal = WALSync(flush: recorder.flush)
        _ = try await wal.write { 1 }
        recorder.fail.store(true, ordering: .sequentiallyConsistent)
        await #expect(throws: AssentServerError.self) { _ = try await wal.write { 2 } }
        recorder.fail.store(false, ordering: .sequentiallyConsistent)
        let ran = Atomic<Bool>(false)
        let error = await #expect(throws: AssentServerError.self) {
            _ = try await wal.write { ran.store(true, ordering: .sequentiallyConsistent) }
        }
        #expect(error?.code == .storage)
        let statementRan = ran.load(ordering: .sequentiallyConsistent)
        #expect(!statementRan)
        await #expect(throws: AssentServerError.self) { try await wal.afterRead() }
    }

    @Test("Only a plain SELECT counts as a read")
    func statementKinds() {
        #expect(!GroupCommitDatabase.mayWrite("SELECT * FROM activations"))
        #expect(!GroupCommitDatabase.mayWrite("\n  select 1"))
        #expect(GroupCommitDatabase.mayWrite("UPDATE activations SET counter = 2"))
        #expect(GroupCommitDatabase.mayWrite("INSERT INTO audit_events (at) VALUES (1)"))
        #expect(GroupCommitDatabase.mayWrite("WITH x AS (SELECT 1) DELETE FROM nonces"))
        #expect(GroupCommitDatabase.mayWrite("PRAGMA wal_checkpoint"))
    }

    @Test("The SQLite store flushes its log for writes, not for reads of what is already on disk")
    func storeFlushesWrites() async throws {
        try await withTemporaryStore(logger: Self.quietLogger) { store in
            let wal = try #require((store.database as? GroupCommitDatabase)?.wal)
            let afterMigration = wal.flushCount
            #expect(afterMigration > 0)
            _ = try await store.applications()
            #expect(wal.flushCount == afterMigration)
            try await store.appendAudit(
                AuditEvent(
                    id: nil, at: 1, type: "test.durable", activationId: nil, userId: nil, actor: "test", detail: "-")
            )
            #expect(wal.flushCount == afterMigration + 1)
            #expect(try await store.audit(activationId: nil, userId: nil, limit: 10).map(\.type) == ["test.durable"])
        }
    }

    @Test("At debug level, no statement and no bound value of the SQLite store reaches the log")
    func noStatementsInLogs() async throws {
        let lines = CapturedLines()
        var logger = Logger(label: "assent.test") { _ in CapturingLogHandler(lines: lines) }
        logger.logLevel = .trace
        try await withTemporaryStore(logger: logger) { store in
            let marker = "marker-\(UUID())"
            try await store.appendAudit(
                AuditEvent(
                    id: nil, at: 1, type: "test.logged", activationId: nil, userId: marker, actor: "test", detail: "-"))
            #expect(try await store.audit(activationId: nil, userId: marker, limit: 1).count == 1)
        }
        let logged = lines.all
        #expect(!logged.isEmpty, "the handler saw nothing: the test would prove nothing")
        #expect(!logged.contains { $0.contains("marker-") || $0.contains("INSERT INTO") })
    }

    @Test("Concurrent writes of the SQLite store share transactions, and every one is in the file when it reopens")
    func writesShareTransactions() async throws {
        let logger = Self.quietLogger
        let path = TestFiles.sqlitePath()
        defer { Self.remove(path) }
        let box = try SecretBox(keyEncryptionKey: Bytes.random(count: 32))
        let store = try await SQLStore.sqlite(path: path, secretBox: box, logger: logger)
        try await store.migrate()
        let file = try #require(((store.database as? GroupCommitDatabase)?.base as? SQLiteFileDatabase)?.file)
        let before = await file.batchesCommitted
        let writes = 300
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<writes {
                group.addTask {
                    try await store.appendAudit(
                        AuditEvent(
                            id: nil, at: Int64(index), type: "test.batched", activationId: nil, userId: "batch",
                            actor: "test", detail: "\(index)"))
                }
            }
            try await group.waitForAll()
        }
        let batches = await file.batchesCommitted - before
        #expect(batches >= 1)
        #expect(batches < writes / 3, "\(batches) transactions for \(writes) concurrent writes")
        try await store.shutdown()

        let reopened = try await SQLStore.sqlite(path: path, secretBox: box, logger: logger)
        let stored = try await reopened.audit(activationId: nil, userId: "batch", limit: 1000)
        #expect(Set(stored.map(\.detail)) == Set((0..<writes).map(String.init)))
        try await reopened.shutdown()
    }

    @Test("A batch SQLite rolls back fails every write waiting in it and every statement after; earlier ones stand")
    func lostBatchFailsItsWrites() async throws {
        let path = TestFiles.sqlitePath()
        defer { Self.remove(path) }
        // The first flush waits until the test lets it go, so that the next writes gather in one batch meanwhile.
        let flushing = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let flushes = Atomic<Int>(0)
        // Inserting 'boom' makes SQLite roll back the whole transaction, as a full disk or an I/O error can.
        let (file, database) = try await Self.batchingDatabase(
            path: path,
            schema: [
                "CREATE TABLE t (v TEXT NOT NULL)",
                "CREATE TRIGGER boom BEFORE INSERT ON t WHEN NEW.v = 'boom' BEGIN SELECT RAISE(ROLLBACK, 'boom'); END",
            ]
        ) {
            if flushes.add(1, ordering: .sequentiallyConsistent).newValue == 1 {
                flushing.signal()
                release.wait()
            }
        }
        func insert(_ value: String) async throws {
            try await database.raw("INSERT INTO t (v) VALUES (\(bind: value))").run()
        }
        func stored() async throws -> [String] {
            try await file.run("SELECT v FROM t ORDER BY rowid", []).rows.map {
                guard case .text(let text) = $0[0] else { return "?" }
                return text
            }
        }

        let first = Task { try await insert("one") }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                flushing.wait()
                continuation.resume()
            }
        }
        let second = Task { try await insert("two") }
        // The connection sees its open batch: "two" has run and waits for the next flush.
        while try await stored().count < 2 { try await Task.sleep(for: .milliseconds(1)) }
        await #expect(throws: SQLiteFailure.self) { try await insert("boom") }
        release.signal()

        try await first.value
        await #expect(throws: AssentServerError.self) { try await second.value }
        await #expect(throws: AssentServerError.self) { try await insert("three") }
        #expect(try await stored() == ["one"])
        try await file.close()
    }

    @Test("A write that fails on its own leaves no transaction open: another process can write at once")
    func failedWriteHoldsNoLock() async throws {
        let path = TestFiles.sqlitePath()
        defer { Self.remove(path) }
        let (file, database) = try await Self.batchingDatabase(
            path: path, schema: ["CREATE TABLE t (v TEXT NOT NULL UNIQUE)"]
        ) {}
        try await database.raw("INSERT INTO t (v) VALUES ('a')").run()
        // The second insert opens a batch and fails on the unique value: no waiter will ever commit that batch.
        await #expect(throws: SQLiteFailure.self) { try await database.raw("INSERT INTO t (v) VALUES ('a')").run() }

        // Another connection (as `assent admin` in another process) with no busy timeout: a held write lock would
        // make its insert fail with SQLITE_BUSY.
        let other = try SQLiteFile.open(path: path)
        _ = try await other.run("INSERT INTO t (v) VALUES ('b')", [])
        try await other.close()
        try await database.raw("INSERT INTO t (v) VALUES ('c')").run()
        #expect(try await file.run("SELECT count(*) AS n FROM t", []).rows.first?.first == .integer(3))
        try await file.close()
    }

    private static var quietLogger: Logger {
        var logger = Logger(label: "assent.test")
        logger.logLevel = .critical
        return logger
    }

    /// Removes the SQLite file at `path` with its log and index.
    private static func remove(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// A SQLite file in WAL mode with `schema` in it, batching its writes behind group commit with `flush`.
    private static func batchingDatabase(
        path: String, schema: [String], flush: @escaping @Sendable () throws -> Void
    ) async throws -> (SQLiteFile, GroupCommitDatabase) {
        let file = try SQLiteFile.open(path: path)
        _ = try await file.run("PRAGMA journal_mode = WAL", [])
        for statement in schema { _ = try await file.run(statement, []) }
        await file.batchWrites()
        let wal = WALSync(commit: { try await file.commitBatch() }, flush: flush)
        return (file, GroupCommitDatabase(base: SQLiteFileDatabase(file: file, logger: quietLogger), wal: wal))
    }

    /// A migrated SQLite store in a temporary file, shut down and removed after `body`.
    private func withTemporaryStore(logger: Logger, _ body: (SQLStore) async throws -> Void) async throws {
        let path = TestFiles.sqlitePath()
        defer { Self.remove(path) }
        let store = try await SQLStore.sqlite(
            path: path, secretBox: try SecretBox(keyEncryptionKey: Bytes.random(count: 32)), logger: logger)
        try await store.migrate()
        try await body(store)
        try await store.shutdown()
    }
}

/// Every message a ``CapturingLogHandler`` received, as text.
private final class CapturedLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// Keeps every message and its metadata as text.
private struct CapturingLogHandler: LogHandler {
    let lines: CapturedLines
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lines.append("\(event.message) \(event.metadata ?? [:])")
    }
}
