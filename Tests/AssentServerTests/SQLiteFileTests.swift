import Foundation
import Logging
import SQLKit
import Testing

@testable import AssentServer
@testable import AssentServerTesting

@Suite("SQLite driven directly: values, kept statements, schema changes, errors")
struct SQLiteFileTests {
    /// A fresh database file in a folder of its own, removed after `body`.
    func withDatabase(_ body: (SQLiteFile, SQLiteFileDatabase) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-file-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = try SQLiteFile.open(path: folder.appendingPathComponent("test.sqlite").path)
        do {
            try await body(file, SQLiteFileDatabase(file: file, logger: Logger(label: "test")))
        } catch {
            try? await file.close()
            throw error
        }
        try await file.close()
    }

    @Test("Every kind of value comes back as it was bound, including empty text and blobs and NULL")
    func valuesRoundTrip() async throws {
        try await withDatabase { file, database in
            try await database.raw("CREATE TABLE t (i INTEGER, f REAL, s TEXT, b BLOB, n TEXT)").run()
            let texts = ["", "plain", "žluťoučký kůň 🐎", "with\u{0}nul"]
            let blobs: [[UInt8]] = [[], [0], [0, 1, 2, 255]]
            for (index, text) in texts.enumerated() {
                try await database.raw(
                    """
                    INSERT INTO t (i, f, s, b, n) VALUES (\(bind: Int.max - index), \(bind: 0.5 + Double(index)), \
                    \(bind: text), \(bind: Data(blobs[index % blobs.count])), \(bind: String?.none))
                    """
                ).run()
            }
            let rows = try await database.raw("SELECT i, f, s, b, n FROM t ORDER BY i DESC").all()
            #expect(rows.count == texts.count)
            for (index, row) in rows.enumerated() {
                #expect(try row.decode(column: "i", as: Int.self) == Int.max - index)
                #expect(try row.decode(column: "f", as: Double.self) == 0.5 + Double(index))
                #expect(try row.decode(column: "s", as: String.self) == texts[index])
                #expect(try row.decode(column: "b", as: Data.self) == Data(blobs[index % blobs.count]))
                #expect(try row.decodeNil(column: "n"))
                #expect(try row.decode(column: "n", as: String?.self) == nil)
            }
            // An empty blob is a blob, not NULL.
            let empty = try await file.run("SELECT typeof(b) AS kind FROM t WHERE i = ?", [.integer(Int64(Int.max))])
            #expect(empty.rows == [[.text("blob")]])
        }
    }

    @Test("A kept statement runs again with other values; a missing column is an error naming it")
    func keptStatements() async throws {
        try await withDatabase { file, database in
            try await database.raw("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)").run()
            for index in 0..<50 {
                try await database.raw("INSERT INTO t (k, v) VALUES (\(bind: "key-\(index)"), \(bind: index))").run()
            }
            for index in [7, 0, 49, 7] {
                let row = try await database.raw("SELECT v FROM t WHERE k = \(bind: "key-\(index)")").first()
                #expect(try row?.decode(column: "v", as: Int.self) == index)
                #expect(row?.allColumns == ["v"])
                #expect(throws: DecodingError.self) { try row?.decode(column: "w", as: Int.self) }
            }
            // A failed statement leaves its kept copy usable: the same text succeeds with other values.
            let insert = "INSERT INTO t (k, v) VALUES (?, ?)"
            let failure = await #expect(throws: SQLiteFailure.self) {
                try await file.run(insert, [.text("key-1"), .integer(1)])
            }
            #expect(failure?.message.contains("UNIQUE") == true, "\(String(describing: failure))")
            _ = try await file.run(insert, [.text("key-new"), .integer(99)])
            let count = try await file.run("SELECT count(*) AS c FROM t", [])
            #expect(count.rows == [[.integer(51)]])
        }
    }

    @Test("A schema change empties the kept statements: a kept SELECT * sees a column added later")
    func schemaChangeRefreshesColumns() async throws {
        try await withDatabase { _, database in
            try await database.raw("CREATE TABLE t (a INTEGER)").run()
            try await database.raw("INSERT INTO t (a) VALUES (1)").run()
            let before = try await database.raw("SELECT * FROM t").first()
            #expect(before?.allColumns == ["a"])
            try await database.raw("ALTER TABLE t ADD COLUMN b TEXT NOT NULL DEFAULT 'x'").run()
            let after = try await database.raw("SELECT * FROM t").first()
            #expect(after?.allColumns == ["a", "b"])
            #expect(try after?.decode(column: "b", as: String.self) == "x")
        }
    }

    @Test("A statement SQLite cannot prepare fails with SQLite's message; a closed connection refuses calls")
    func errorsAndClose() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-file-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = try SQLiteFile.open(path: folder.appendingPathComponent("test.sqlite").path)
        let failure = await #expect(throws: SQLiteFailure.self) { try await file.run("SELECT * FROM missing", []) }
        #expect(failure?.message.contains("no such table") == true, "\(String(describing: failure))")
        try await file.close()
        await #expect(throws: SQLiteFailure.self) { try await file.run("SELECT 1", []) }
        #expect(throws: SQLiteFailure.self) {
            try SQLiteFile.open(path: folder.appendingPathComponent("no-such-folder/test.sqlite").path)
        }
    }
}

@Suite("Values bound to SQLite and read back as Swift types")
struct SQLiteValueTests {
    enum Kind: String { case one }

    @Test("Bound values map to SQLite's storage classes; a type without one is refused by name, not value")
    func binding() throws {
        #expect(try SQLiteValue(binding: "a") == .text("a"))
        #expect(try SQLiteValue(binding: Int64.min) == .integer(.min))
        #expect(try SQLiteValue(binding: UInt8(7)) == .integer(7))
        #expect(try SQLiteValue(binding: true) == .integer(1))
        #expect(try SQLiteValue(binding: 1.5) == .float(1.5))
        #expect(try SQLiteValue(binding: Data([1, 2])) == .blob(Data([1, 2])))
        #expect(try SQLiteValue(binding: String?.none as Any) == .null)
        #expect(try SQLiteValue(binding: Int64?.some(3) as Any) == .integer(3))
        #expect(try SQLiteValue(binding: Kind.one) == .text("one"))
        #expect(throws: SQLiteFailure.self) { try SQLiteValue(binding: UInt64.max) }
        let refused = #expect(throws: SQLiteFailure.self) { try SQLiteValue(binding: Date(timeIntervalSince1970: 42)) }
        #expect(refused?.message.contains("Date") == true)
        #expect(refused?.message.contains("42") == false)
    }
}
