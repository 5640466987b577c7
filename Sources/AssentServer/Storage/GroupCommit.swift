import Foundation
import Logging
import NIOCore
import NIOPosix
import SQLKit
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Group commit for the SQLite file: durable acknowledgements at the cost of one `fsync` per batch of writes
/// instead of one per write.
///
/// The connection runs with `synchronous = NORMAL`, so a commit is complete (and visible) once its frames are in the
/// write-ahead log's page cache, but not yet on disk. Every statement that may write then waits for one `fsync` of
/// the log that *began after it finished*; one `fsync` serves every statement that finished before it began, so
/// while one runs, the writes arriving meanwhile gather for the next. A statement returns only once its commit is on
/// disk: the same guarantee as `synchronous = FULL`, without holding the single connection during each `fsync`.
///
/// Reads wait too when a write is running or not yet on disk: a read may have seen that write, and nothing a
/// power failure could still undo is shown to anyone (a status page, a webhook, a push). A read while everything is
/// on disk returns at once.
///
/// A failed `fsync` is final: the kernel may have dropped the pages it could not write, so a later `fsync` that
/// succeeds proves nothing. Every statement after it fails until the server restarts (SQLite then recovers the log).
final class WALSync: Sendable {
    private struct State {
        /// Tickets handed out, in order; a flush that begins after a ticket was taken covers it.
        var tickets: UInt64 = 0
        /// Every ticket up to this one is on disk.
        var synced: UInt64 = 0
        /// The ticket of the newest finished write.
        var lastWrite: UInt64 = 0
        /// Writes running now.
        var running = 0
        var flushing = false
        var waiters: [(ticket: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        var failure: AssentServerError?
    }

    private let state = Mutex(State())
    private let commit: (@Sendable () async throws -> Void)?
    private let flush: @Sendable () throws -> Void
    private let thread: NIOThreadPool
    private let flushes = Atomic<Int>(0)

    /// - Parameters:
    ///   - commit: commits the writes that share an open transaction (``SQLiteFile/commitBatch()``), before each
    ///     flush; an error is final, as a failed flush is.
    ///   - flush: makes everything written so far durable (an `fsync` of the log); runs on a thread of its own,
    ///     never on the connection's.
    init(commit: (@Sendable () async throws -> Void)? = nil, flush: @escaping @Sendable () throws -> Void) {
        self.commit = commit
        self.flush = flush
        thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
    }

    deinit { thread.shutdownGracefully { _ in } }

    /// The number of flushes so far (for tests and diagnostics).
    var flushCount: Int { flushes.load(ordering: .relaxed) }

    /// Runs a statement that may write and returns once what it wrote is on disk.
    func write<T>(_ statement: () async throws -> T) async throws -> T {
        try state.withLock { state in
            if let failure = state.failure { throw failure }
            state.running += 1
        }
        let result: T
        do {
            result = try await statement()
        } catch {
            state.withLock { $0.running -= 1 }
            throw error
        }
        try await wait { state in
            state.running -= 1
            state.tickets += 1
            state.lastWrite = state.tickets
            return true
        }
        return result
    }

    /// Returns once every write the finished read may have seen is on disk: at once when none is running or unsynced.
    func afterRead() async throws {
        try await wait { state in
            guard state.running > 0 || state.lastWrite > state.synced else { return false }
            state.tickets += 1
            return true
        }
    }

    /// Takes a ticket if `register` says so and waits for a flush that covers it, starting one when none runs.
    private func wait(_ register: (inout State) -> Bool) async throws {
        enum Next {
            case done
            case wait
            case fail(AssentServerError)
            case flush(through: UInt64)
        }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let next: Next = state.withLock { state in
                guard register(&state) else { return .done }
                if let failure = state.failure { return .fail(failure) }
                state.waiters.append((state.tickets, continuation))
                if state.flushing { return .wait }
                state.flushing = true
                return .flush(through: state.tickets)
            }
            switch next {
            case .done: continuation.resume()
            case .wait: break
            case .fail(let error): continuation.resume(throwing: error)
            case .flush(let target): startFlush(through: target)
            }
        }
    }

    private func startFlush(through target: UInt64) {
        guard let commit else { return submitFlush(through: target) }
        // Every write up to the target finished before this commit is asked for, on the same connection: the commit
        // includes it.
        Task {
            do {
                try await commit()
            } catch {
                finish(
                    through: target,
                    error: .storageFailed(
                        "The database lost writes waiting for the disk (\(error)); restart the server."))
                return
            }
            submitFlush(through: target)
        }
    }

    private func submitFlush(through target: UInt64) {
        thread.submit { [self] state in
            guard state == .active else {
                finish(through: target, error: AssentServerError.storageFailed("The store is shutting down."))
                return
            }
            flushes.add(1, ordering: .relaxed)
            do {
                try flush()
                finish(through: target, error: nil)
            } catch {
                finish(
                    through: target,
                    error: .storageFailed("The database could not be written to disk (\(error)); restart the server."))
            }
        }
    }

    private func finish(through target: UInt64, error: AssentServerError?) {
        var ready: [CheckedContinuation<Void, any Error>] = []
        var failed: [CheckedContinuation<Void, any Error>] = []
        let next: UInt64? = state.withLock { state in
            if let error {
                state.failure = error
                failed = state.waiters.map(\.continuation)
                state.waiters = []
                state.flushing = false
                return nil
            }
            state.synced = target
            var waiting: [(ticket: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
            for waiter in state.waiters {
                if waiter.ticket <= target { ready.append(waiter.continuation) } else { waiting.append(waiter) }
            }
            state.waiters = waiting
            guard !waiting.isEmpty else {
                state.flushing = false
                return nil
            }
            return state.tickets
        }
        for continuation in ready { continuation.resume() }
        if let error { for continuation in failed { continuation.resume(throwing: error) } }
        if let next { startFlush(through: next) }
    }
}

extension WALSync {
    /// Flushes the write-ahead log of the SQLite database at `path` (`<path>-wal`), opening it on first use and again
    /// if SQLite replaced it; the first flush also makes the log's directory entry durable.
    static func writeAheadLog(
        ofDatabaseAt path: String, committing commit: (@Sendable () async throws -> Void)? = nil
    ) -> WALSync {
        let log = path + "-wal"
        let directory = (path as NSString).deletingLastPathComponent
        let descriptor = Mutex<Int32>(-1)
        return WALSync(commit: commit) {
            try descriptor.withLock { fd in
                var status = stat()
                if fd >= 0, fstat(fd, &status) == 0, status.st_nlink == 0 {
                    close(fd)
                    fd = -1
                }
                if fd < 0 {
                    fd = open(log, O_RDONLY | O_CLOEXEC)
                    guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                    let dir = open(directory.isEmpty ? "." : directory, O_RDONLY | O_CLOEXEC)
                    if dir >= 0 {
                        defer { close(dir) }
                        guard fsync(dir) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                    }
                }
                guard syncData(fd) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            }
        }
    }

    /// The log's contents and what reading them back needs (its size), without its times: `fdatasync` on Linux, as
    /// SQLite's own `synchronous = FULL` syncs there; `fsync` elsewhere.
    private static func syncData(_ fd: Int32) -> Int32 {
        #if os(Linux)
            fdatasync(fd)
        #else
            fsync(fd)
        #endif
    }
}

/// The SQLite connection with group commit: each statement returns once ``WALSync`` has on disk what it wrote or
/// may have read.
struct GroupCommitDatabase: AsyncSQLDatabase {
    let base: any SQLDatabase
    let wal: WALSync

    var logger: Logger { base.logger }
    var eventLoop: any EventLoop { base.eventLoop }
    var version: (any SQLDatabaseReportedVersion)? { base.version }
    var dialect: any SQLDialect { base.dialect }
    var queryLogLevel: Logger.Level? { base.queryLogLevel }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        let (sql, binds) = base.serialize(query)
        let statement = Serialized(sql: sql, binds: binds)
        if Self.mayWrite(sql) {
            try await wal.write { try await base.execute(sql: statement, onRow) }
        } else {
            try await base.execute(sql: statement, onRow)
            try await wal.afterRead()
        }
    }

    /// Whether a statement can change the database: anything but a plain `SELECT` counts as a write.
    static func mayWrite(_ sql: String) -> Bool {
        let keyword = sql.utf8.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\t") }
            .prefix(6)
        return !keyword.elementsEqual("SELECT".utf8) && !keyword.elementsEqual("select".utf8)
    }

    /// A statement already rendered in the dialect, so it is not serialized twice.
    private struct Serialized: SQLExpression {
        let sql: String
        let binds: [any Encodable & Sendable]

        func serialize(to serializer: inout SQLSerializer) {
            serializer.write(sql)
            serializer.binds.append(contentsOf: binds)
        }
    }
}
