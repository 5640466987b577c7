import CSQLite3
import Foundation

/// A consistent copy of a SQLite database while servers write to it: SQLite's online backup, from a connection of
/// its own, into a new file that is checked (`PRAGMA quick_check`) before it is put in place. The copy holds every
/// row the database had when the backup's last step ran; its secrets stay sealed, so it is worth nothing without the
/// key-encryption key, which is backed up separately.
public enum SQLiteBackup {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// What a backup wrote.
    public struct Copied: Sendable, Equatable {
        /// Pages copied, and their size in bytes.
        public var pages: Int
        public var bytes: Int
    }

    /// Copies the database at `source` to `destination`, which must not exist yet (a backup never replaces one).
    @discardableResult
    public static func copy(from source: String, to destination: String) throws -> Copied {
        guard FileManager.default.fileExists(atPath: source) else {
            throw Failure(description: "There is no database at \(source).")
        }
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw Failure(description: "\(destination) exists already: a backup never replaces a file.")
        }
        let partial = destination + ".partial-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: partial) }
        let from = try open(source, SQLITE_OPEN_READONLY)
        defer { sqlite3_close_v2(from) }
        // A busy writer holds the database for a moment at a time: wait for it rather than fail.
        sqlite3_busy_timeout(from, 10_000)
        let to = try open(partial, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        var closed = false
        defer { if !closed { sqlite3_close_v2(to) } }
        guard let backup = sqlite3_backup_init(to, "main", from, "main") else {
            throw Failure(description: "The backup could not start: \(message(to)).")
        }
        var step = sqlite3_backup_step(backup, -1)
        // Another connection writing between steps restarts the copy; busy and locked mean try again.
        var tries = 0
        while step == SQLITE_BUSY || step == SQLITE_LOCKED || step == SQLITE_OK, tries < 1_000 {
            tries += 1
            usleep(10_000)
            step = sqlite3_backup_step(backup, -1)
        }
        let pages = Int(sqlite3_backup_pagecount(backup))
        let finished = sqlite3_backup_finish(backup)
        guard step == SQLITE_DONE, finished == SQLITE_OK else {
            throw Failure(description: "The backup did not finish: \(message(to)) (SQLite code \(step)).")
        }
        let check = try quickCheck(to)
        guard check == "ok" else { throw Failure(description: "The copy failed its check: \(check).") }
        // One file, no log beside it: the copy is what a restore puts in place.
        sqlite3_close_v2(to)
        closed = true
        try FileManager.default.moveItem(atPath: partial, toPath: destination)
        let bytes = (try? FileManager.default.attributesOfItem(atPath: destination)[.size] as? Int) ?? 0
        return Copied(pages: pages, bytes: bytes)
    }

    private static func open(_ path: String, _ flags: Int32) throws -> OpaquePointer {
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let text = handle.map(message) ?? "code \(code)"
            sqlite3_close_v2(handle)
            throw Failure(description: "\(path) could not be opened: \(text).")
        }
        return handle
    }

    private static func quickCheck(_ handle: OpaquePointer) throws -> String {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, "PRAGMA quick_check", -1, &statement, nil) == SQLITE_OK else {
            throw Failure(description: "The copy could not be checked: \(message(handle)).")
        }
        defer { sqlite3_finalize(statement) }
        var lines: [String] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            if let text = sqlite3_column_text(statement, 0) { lines.append(String(cString: text)) }
        }
        return lines.joined(separator: "; ")
    }

    private static func message(_ handle: OpaquePointer) -> String {
        String(cString: sqlite3_errmsg(handle))
    }
}
