import CSQLite3
import Logging
import NIOPosix
import Synchronization

/// When the write-ahead log is copied into the database file, and by which connection.
///
/// SQLite's automatic checkpoint runs on the committing connection: at 1,000 frames it copies the log into the
/// database file and syncs the file. Under authorize load that happened ~22 times a second, each time holding the
/// one connection that serves every request for several milliseconds — about a sixth of its time. Here a second
/// connection copies in the background instead (a passive checkpoint, which never waits for the writer and never
/// blocks it). But the log starts over only once every frame in it has been copied, which a background copy never
/// reaches while writes go on: so once the log holds `restartFrames`, the serving connection itself copies what the
/// last background copy left (a few frames, one short checkpoint), and its next write starts the log over.
///
/// A background checkpoint that fails (anything but "busy") ends background copying: from then on the serving
/// connection checkpoints every `backgroundFrames`, as SQLite would by itself.
struct CheckpointPolicy: Sendable {
    enum Action: Equatable {
        case none
        /// Start a background checkpoint; report its outcome with this generation.
        case background(generation: Int)
        /// Checkpoint on the serving connection now.
        case connection
    }

    /// A background checkpoint starts once this many frames were added since the last copy.
    let backgroundFrames: Int
    /// From this many frames on, the serving connection copies the rest so that the log starts over.
    let restartFrames: Int

    private var running = false
    /// Counts the times the log started over; a background outcome from an earlier log is stale.
    private(set) var generation = 0
    private var frames = 0
    /// Frames of the current log already copied into the database file.
    private(set) var copied = 0
    private(set) var failed = false

    init(backgroundFrames: Int = 1000, restartFrames: Int = 4000) {
        self.backgroundFrames = backgroundFrames
        self.restartFrames = max(restartFrames, backgroundFrames)
    }

    /// After a commit that left `frames` frames in the log.
    mutating func committed(frames: Int) -> Action {
        if frames < self.frames {
            // Fewer frames than before: the log started over, nothing of it is copied yet.
            generation += 1
            copied = 0
        }
        self.frames = frames
        if running { return .none }
        if failed { return frames >= backgroundFrames ? .connection : .none }
        if frames - copied >= backgroundFrames {
            running = true
            return .background(generation: generation)
        }
        return frames >= restartFrames && copied < frames ? .connection : .none
    }

    /// A background checkpoint ended: `copied` frames of the log are in the database file, `nil` when it was busy
    /// (another checkpoint held the log); `failed` when it cannot work at all.
    mutating func backgroundEnded(generation: Int, copied: Int?, failed: Bool) {
        running = false
        if failed { self.failed = true }
        if let copied, generation == self.generation { self.copied = max(self.copied, copied) }
    }

    /// The serving connection's checkpoint copied `copied` frames (`nil`: it could not).
    mutating func connectionEnded(copied: Int?) {
        if let copied { self.copied = max(self.copied, copied) }
    }
}

/// Runs ``CheckpointPolicy`` for one SQLite file: the background connection on a thread of its own, and the
/// frame count SQLite reports after each commit of the serving connection (its write-ahead-log hook).
final class WALCheckpointer: Sendable {
    /// The background connection; used on the checkpoint thread only, and closed after it stopped.
    private final class Connection: @unchecked Sendable {
        let handle: OpaquePointer
        init(handle: OpaquePointer) { self.handle = handle }
    }

    /// The serving connection's log size after its last commit: written by SQLite's hook during the commit, read
    /// right after it, both on that connection's executor.
    private final class FrameCount: @unchecked Sendable {
        var value: Int32 = 0
    }

    private let connection: Connection
    private let frames = FrameCount()
    private let thread: NIOThreadPool
    private let policy: Mutex<CheckpointPolicy>
    private let logger: Logger
    private let counts = Mutex((background: 0, connection: 0))

    /// Opens the background connection to the SQLite file at `path` (in WAL mode already).
    init(path: String, policy: CheckpointPolicy, logger: Logger) throws {
        _ = SQLiteFile.librarySettings
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let handle else {
            let failure = SQLiteFailure(code: code, handle: handle)
            sqlite3_close_v2(handle)
            throw failure
        }
        // A connection opens the log at its first read; a checkpoint before that copies nothing.
        let read = sqlite3_exec(handle, "SELECT count(*) FROM sqlite_schema", nil, nil, nil)
        guard read == SQLITE_OK else {
            let failure = SQLiteFailure(code: read, handle: handle)
            sqlite3_close_v2(handle)
            throw failure
        }
        connection = Connection(handle: handle)
        self.policy = Mutex(policy)
        self.logger = logger
        thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
    }

    /// Checkpoints so far: in the background, and on the serving connection (for tests and diagnostics).
    var checkpoints: (background: Int, connection: Int) { counts.withLock { $0 } }

    /// Makes `handle` (the serving connection) report its log's size after each commit, in place of SQLite's
    /// automatic checkpoint.
    func watch(_ handle: OpaquePointer) {
        sqlite3_wal_hook(
            handle,
            { context, _, _, frames in
                if let context { Unmanaged<FrameCount>.fromOpaque(context).takeUnretainedValue().value = frames }
                return SQLITE_OK
            }, Unmanaged.passUnretained(frames).toOpaque())
    }

    /// After a commit of the serving connection `handle`: starts a background checkpoint, or checkpoints on
    /// `handle` now, as the policy says.
    func committed(on handle: OpaquePointer) {
        let count = Int(frames.value)
        switch policy.withLock({ $0.committed(frames: count) }) {
        case .none:
            break
        case .background(let generation):
            startBackground(generation: generation)
        case .connection:
            let copied = Self.checkpoint(handle)
            policy.withLock { $0.connectionEnded(copied: copied) }
            counts.withLock { $0.connection += 1 }
        }
    }

    /// Stops the checkpoint thread (waiting for a running checkpoint) and closes the background connection.
    func close() async {
        try? await thread.shutdownGracefully()
        sqlite3_close_v2(connection.handle)
    }

    private func startBackground(generation: Int) {
        thread.submit { [self] state in
            guard state == .active else {
                policy.withLock { $0.backgroundEnded(generation: generation, copied: nil, failed: false) }
                return
            }
            var log: Int32 = 0
            var copied: Int32 = 0
            let code = sqlite3_wal_checkpoint_v2(connection.handle, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied)
            // A log size of -1: the connection does not see a write-ahead log, so its checkpoints copy nothing.
            let failed = (code != SQLITE_OK && code != SQLITE_BUSY) || (code == SQLITE_OK && log < 0)
            policy.withLock {
                $0.backgroundEnded(
                    generation: generation, copied: code == SQLITE_OK && !failed ? Int(copied) : nil, failed: failed)
            }
            counts.withLock { $0.background += 1 }
            if failed {
                logger.warning(
                    "Background checkpoints of the SQLite log stopped; the serving connection checkpoints from now on",
                    metadata: [
                        "error":
                            "\(code == SQLITE_OK ? "no write-ahead log" : "\(SQLiteFailure(code: code, handle: connection.handle))")"
                    ])
            }
        }
    }

    /// A passive checkpoint on `handle`: the frames of the log copied so far, `nil` when it could not run.
    private static func checkpoint(_ handle: OpaquePointer) -> Int? {
        var log: Int32 = 0
        var copied: Int32 = 0
        let code = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied)
        return code == SQLITE_OK ? Int(copied) : nil
    }
}
