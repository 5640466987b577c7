import Foundation
import Logging
import Testing

@testable import AssentServer

@Suite("Checkpoints: the log is copied in the background and still starts over")
struct CheckpointTests {
    @Test("The policy copies in the background, leaves the rest to the connection, and forgets a restarted log")
    func policy() {
        var policy = CheckpointPolicy(backgroundFrames: 100, restartFrames: 400)
        #expect(policy.committed(frames: 50) == .none)
        #expect(policy.committed(frames: 120) == .background(generation: 0))
        // One background checkpoint at a time.
        #expect(policy.committed(frames: 200) == .none)
        policy.backgroundEnded(generation: 0, copied: 120, failed: false)
        #expect(policy.copied == 120)
        #expect(policy.committed(frames: 219) == .none)
        #expect(policy.committed(frames: 220) == .background(generation: 0))
        policy.backgroundEnded(generation: 0, copied: 220, failed: false)
        // A busy background checkpoint copied nothing: the next commit tries again.
        #expect(policy.committed(frames: 390) == .background(generation: 0))
        policy.backgroundEnded(generation: 0, copied: nil, failed: false)
        #expect(policy.copied == 220)
        #expect(policy.committed(frames: 395) == .background(generation: 0))
        policy.backgroundEnded(generation: 0, copied: 395, failed: false)
        // Past the restart size, with little left, the connection copies the rest.
        #expect(policy.committed(frames: 430) == .connection)
        policy.connectionEnded(copied: 430)
        #expect(policy.committed(frames: 430) == .none)
        // The log started over: nothing of it is copied.
        #expect(policy.committed(frames: 12) == .none)
        #expect(policy.generation == 1)
        #expect(policy.copied == 0)
        #expect(policy.committed(frames: 112) == .background(generation: 1))
        // A background outcome of the previous log does not count for this one.
        #expect(policy.committed(frames: 5) == .none)
        policy.backgroundEnded(generation: 1, copied: 112, failed: false)
        #expect(policy.copied == 0)
        #expect(policy.committed(frames: 90) == .none)
        // After a background failure the connection checkpoints as SQLite would by itself.
        #expect(policy.committed(frames: 105) == .background(generation: 2))
        policy.backgroundEnded(generation: 2, copied: nil, failed: true)
        #expect(policy.failed)
        #expect(policy.committed(frames: 150) == .connection)
        policy.connectionEnded(copied: 150)
        #expect(policy.committed(frames: 3) == .none)
        #expect(policy.committed(frames: 103) == .connection)
    }

    @Test("Under a stream of commits the log stays small, both connections copy, and every row survives")
    func streamOfCommits() async throws {
        let path = TestFiles.sqlitePath()
        var logger = Logger(label: "assent.test")
        logger.logLevel = .critical
        let file = try SQLiteFile.open(path: path)
        _ = try await file.run("PRAGMA journal_mode = WAL", [])
        _ = try await file.run("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB NOT NULL)", [])
        _ = try await file.run("CREATE INDEX t_v ON t (v)", [])
        await file.batchWrites()
        try await file.checkpointInBackground(
            path: path, logger: logger, policy: CheckpointPolicy(backgroundFrames: 20, restartFrames: 60))
        let commits = 3000
        var generator = SystemRandomNumberGenerator()
        for k in 0..<commits {
            // A random index key: each commit changes pages all over the index, as an approval does.
            let value = Data((0..<64).map { _ in UInt8.random(in: 0...255, using: &generator) })
            _ = try await file.run("INSERT INTO t (k, v) VALUES (?, ?)", [.integer(Int64(k)), .blob(value)])
            try await file.commitBatch()
        }
        let checkpoints = try #require(await file.checkpointer).checkpoints
        #expect(checkpoints.background > 0)
        #expect(checkpoints.connection > 0)
        // Without checkpoints the log would hold every frame of every commit (over 6,000 here); it started over.
        let frame = 4096 + 24
        let logSize = try #require(try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int)
        #expect(logSize < 1000 * frame)
        try await file.close()

        let reopened = try SQLiteFile.open(path: path)
        #expect(try await reopened.run("SELECT count(*) FROM t", []).rows.first?.first == .integer(Int64(commits)))
        #expect(try await reopened.run("PRAGMA integrity_check", []).rows.first?.first == .text("ok"))
        try await reopened.close()
    }
}
