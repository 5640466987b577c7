import CSQLite3
import Foundation
import Logging
import NIOCore
import NIOPosix
import SQLKit

/// One SQLite connection driven through the C library directly.
///
/// Each distinct SQL text is prepared once and kept (parsing and planning were a tenth of SQLite's time when every
/// statement was prepared anew), and statements run on the calling task's thread: the actor serialises the
/// connection's calls without a hop to another thread and back per statement. A statement that changes the schema
/// empties the cache, so no kept statement describes columns that changed.
actor SQLiteFile {
    /// What a statement returned: its rows, their columns by name.
    struct Rows: Sendable {
        var columns: SQLiteColumns
        var rows: [[SQLiteValue]]
    }

    private let handle: OpaquePointer
    private var cache: [String: Prepared] = [:]
    private var closed = false
    /// Set by ``batchWrites()``: a row change opens a transaction that the next ``commitBatch()`` commits.
    private var batching = false
    private var batchOpen = false
    /// Row changes that succeeded in the open batch; each has a waiter whose flush commits the batch.
    private var batchChanges = 0
    /// SQLite rolled back an open batch (an error can end the whole transaction): writes waiting for the disk are gone.
    private var batchLost = false
    /// Batches committed so far (for tests and diagnostics).
    private(set) var batchesCommitted = 0
    /// Above this many kept statements the cache starts over (texts that differ in a list's length add up).
    private static let cacheLimit = 512

    private struct Prepared {
        let statement: OpaquePointer
        let columns: SQLiteColumns
    }

    private init(handle: OpaquePointer) {
        self.handle = handle
    }

    /// Opens (creating if needed) the database file at `path`.
    static func open(path: String) throws -> SQLiteFile {
        var handle: OpaquePointer?
        // The actor serialises every call, so SQLite's own per-call mutex is not needed (multi-thread mode).
        let flags = SQLITE_OPEN_CREATE | SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let failure = SQLiteFailure(code: code, handle: handle)
            sqlite3_close_v2(handle)
            throw failure
        }
        return SQLiteFile(handle: handle)
    }

    /// The version of the SQLite library in use, e.g. `3.40.1`.
    static var libraryVersion: String { String(cString: sqlite3_libversion()) }

    /// Runs `sql` with `binds` (`?` placeholders, in order) and returns every row.
    func run(_ sql: String, _ binds: [SQLiteValue]) throws -> Rows {
        guard !closed else { throw SQLiteFailure(code: SQLITE_MISUSE, message: "The connection is closed.") }
        let keyword = Self.keyword(sql)
        let kept = keyword != nil
        // Schema changes, pragmas and transaction control run outside a batch.
        if batching, !kept { try commitBatch() }
        let prepared: Prepared
        if kept, let cached = cache[sql] {
            prepared = cached
        } else {
            prepared = try prepare(sql)
            if kept {
                if cache.count >= Self.cacheLimit { emptyCache() }
                cache[sql] = prepared
            }
        }
        let statement = prepared.statement
        defer {
            if kept {
                sqlite3_reset(statement)
                sqlite3_clear_bindings(statement)
            } else {
                sqlite3_finalize(statement)
                // A statement that is not a plain query or change may have altered the schema.
                emptyCache()
            }
        }
        try bind(binds, to: statement)
        if batching, keyword == .change, !batchOpen, sqlite3_get_autocommit(handle) != 0 {
            try execute("BEGIN")
            batchOpen = true
            batchChanges = 0
        }
        var rows: [[SQLiteValue]] = []
        let count = prepared.columns.count
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else {
                let failure = SQLiteFailure(code: code, handle: handle)
                if batchOpen { endFailedBatch() }
                throw failure
            }
            var row: [SQLiteValue] = []
            row.reserveCapacity(count)
            for column in 0..<Int32(count) { row.append(value(of: statement, at: column)) }
            rows.append(row)
        }
        if batchOpen, keyword == .change { batchChanges += 1 }
        return Rows(columns: prepared.columns, rows: rows)
    }

    /// After a failed statement in the open batch: SQLite may have rolled the whole batch back (its writes are then
    /// lost); a batch with no change yet has no waiter to commit it, so it ends here rather than hold the write lock.
    private func endFailedBatch() {
        if sqlite3_get_autocommit(handle) != 0 {
            batchOpen = false
            batchLost = batchChanges > 0
        } else if batchChanges == 0 {
            batchOpen = false
            if sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) != SQLITE_OK { batchLost = true }
        }
    }

    /// From now on, row changes share one transaction until ``commitBatch()``: the writes of concurrent requests
    /// then reach the log together, each page they change once per batch instead of once per statement. Only for a
    /// caller that commits each batch before it reports any of its writes done (``WALSync``).
    func batchWrites() {
        batching = true
    }

    /// Commits the open batch, if any.
    /// - Throws: when SQLite rolled the batch back or cannot commit it — its writes are lost, and so is every later
    ///   batch's trust: this error stays.
    func commitBatch() throws {
        if batchLost {
            throw SQLiteFailure(
                code: SQLITE_ABORT,
                message: "SQLite rolled back a transaction of writes that were waiting for the disk.")
        }
        guard batchOpen else { return }
        batchOpen = false
        do {
            try execute("COMMIT")
        } catch {
            batchLost = true
            if sqlite3_get_autocommit(handle) == 0 { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
            throw error
        }
        batchesCommitted += 1
    }

    /// Finalises every kept statement and closes the connection (after committing an open batch); later calls fail.
    func close() throws {
        guard !closed else { return }
        if batchOpen { try? commitBatch() }
        closed = true
        emptyCache()
        let code = sqlite3_close_v2(handle)
        guard code == SQLITE_OK else { throw SQLiteFailure(code: code, handle: nil) }
    }

    private enum Keyword {
        case query
        case change
    }

    /// Queries and changes of rows are kept; anything else (schema changes, pragmas, transaction control, `nil`
    /// here) is prepared for one run.
    private static func keyword(_ sql: String) -> Keyword? {
        let keyword = sql.utf8.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\t") }
            .prefix(6)
        func isWord(_ word: String) -> Bool {
            keyword.elementsEqual(word.utf8) || keyword.elementsEqual(word.lowercased().utf8)
        }
        if isWord("SELECT") { return .query }
        return ["INSERT", "UPDATE", "DELETE"].contains(where: isWord) ? .change : nil
    }

    private func execute(_ sql: String) throws {
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw SQLiteFailure(code: code, handle: handle) }
    }

    private func prepare(_ sql: String) throws -> Prepared {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw SQLiteFailure(code: code, handle: handle)
        }
        var names: [String] = []
        for column in 0..<sqlite3_column_count(statement) {
            names.append(sqlite3_column_name(statement, column).map { String(cString: $0) } ?? "")
        }
        return Prepared(statement: statement, columns: SQLiteColumns(names: names))
    }

    private func emptyCache() {
        for prepared in cache.values { sqlite3_finalize(prepared.statement) }
        cache.removeAll(keepingCapacity: true)
    }

    private func bind(_ binds: [SQLiteValue], to statement: OpaquePointer) throws {
        for (offset, bind) in binds.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch bind {
            case .integer(let value): code = sqlite3_bind_int64(statement, index, value)
            case .float(let value): code = sqlite3_bind_double(statement, index, value)
            case .null: code = sqlite3_bind_null(statement, index)
            case .text(let value):
                var value = value
                code = value.withUTF8 { text in
                    text.withMemoryRebound(to: CChar.self) { text in
                        // A null pointer would bind NULL, not the empty text.
                        guard let start = text.baseAddress, !text.isEmpty else {
                            return sqlite3_bind_text(statement, index, "", 0, nil)
                        }
                        return sqlite3_bind_text64(
                            statement, index, start, UInt64(text.count), Self.transient, UInt8(SQLITE_UTF8))
                    }
                }
            case .blob(let value):
                code = value.withUnsafeBytes { bytes in
                    // A null pointer would bind NULL, not the empty blob.
                    guard let start = bytes.baseAddress, !bytes.isEmpty else {
                        return sqlite3_bind_zeroblob64(statement, index, 0)
                    }
                    return sqlite3_bind_blob64(statement, index, start, UInt64(bytes.count), Self.transient)
                }
            }
            guard code == SQLITE_OK else { throw SQLiteFailure(code: code, handle: handle) }
        }
    }

    private func value(of statement: OpaquePointer, at column: Int32) -> SQLiteValue {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT:
            return .float(sqlite3_column_double(statement, column))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(statement, column) else { return .text("") }
            let length = Int(sqlite3_column_bytes(statement, column))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self))
        case SQLITE_BLOB:
            let length = Int(sqlite3_column_bytes(statement, column))
            guard let bytes = sqlite3_column_blob(statement, column), length > 0 else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: length))
        default:
            return .null
        }
    }

    /// `SQLITE_TRANSIENT`: SQLite copies a bound text or blob before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}

/// The columns of a statement's rows, by name (the first of equal names wins, as in SQLite's own look-up).
final class SQLiteColumns: Sendable {
    let names: [String]
    private let index: [String: Int]

    init(names: [String]) {
        self.names = names
        index = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }

    var count: Int { names.count }

    func offset(of name: String) -> Int? { index[name] }
}

/// An error of the SQLite library: its result code and message (never a bound value).
struct SQLiteFailure: Error, CustomStringConvertible {
    let code: Int32
    let message: String

    init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    init(code: Int32, handle: OpaquePointer?) {
        self.code = code
        if let handle, let text = sqlite3_errmsg(handle) {
            message = String(cString: text)
        } else {
            message = String(cString: sqlite3_errstr(code))
        }
    }

    var description: String { "SQLite error \(code): \(message)" }
}

/// A value as SQLite stores it: one of its five storage classes.
enum SQLiteValue: Sendable, Hashable {
    case integer(Int64)
    case float(Double)
    case text(String)
    case blob(Data)
    case null

    /// The value SQLite stores for a bound Swift value: integers and booleans as integers, floating-point numbers,
    /// strings as text, `Data` and bytes as blobs, `nil` as NULL, a raw-representable value as its raw value.
    init(binding value: Any) throws {
        switch value {
        case let optional as any OptionalValue where optional.isNone: self = .null
        case let text as String: self = .text(text)
        case let flag as Bool: self = .integer(flag ? 1 : 0)
        case let number as any BinaryInteger:
            guard let integer = Int64(exactly: number) else {
                throw SQLiteFailure(code: SQLITE_RANGE, message: "An integer beyond 64 bits cannot be bound.")
            }
            self = .integer(integer)
        case let number as Double: self = .float(number)
        case let number as Float: self = .float(Double(number))
        case let bytes as Data: self = .blob(bytes)
        case let bytes as [UInt8]: self = .blob(Data(bytes))
        case let raw as any RawRepresentable: self = try SQLiteValue(binding: raw.rawValue)
        default:
            // The type only: a bound value may be a secret.
            throw SQLiteFailure(code: SQLITE_MISMATCH, message: "A value of type \(type(of: value)) cannot be bound.")
        }
    }

    var storageClass: String {
        switch self {
        case .integer: "integer"
        case .float: "float"
        case .text: "text"
        case .blob: "blob"
        case .null: "NULL"
        }
    }
}

/// Tells a `nil` among bound values of any type.
private protocol OptionalValue {
    var isNone: Bool { get }
}

extension Optional: OptionalValue {
    var isNone: Bool { self == nil }
}

/// A Swift type a column's value is read as.
protocol SQLiteColumnDecodable {
    init(column value: SQLiteValue) throws(SQLiteColumnMismatch)
}

/// A column's value is of another storage class than the type asked for.
struct SQLiteColumnMismatch: Error {
    let found: String
}

extension String: SQLiteColumnDecodable {
    init(column value: SQLiteValue) throws(SQLiteColumnMismatch) {
        guard case .text(let text) = value else { throw SQLiteColumnMismatch(found: value.storageClass) }
        self = text
    }
}

extension Int64: SQLiteColumnDecodable {
    init(column value: SQLiteValue) throws(SQLiteColumnMismatch) {
        guard case .integer(let integer) = value else { throw SQLiteColumnMismatch(found: value.storageClass) }
        self = integer
    }
}

extension Int: SQLiteColumnDecodable {
    init(column value: SQLiteValue) throws(SQLiteColumnMismatch) {
        guard case .integer(let integer) = value, let fitting = Int(exactly: integer) else {
            throw SQLiteColumnMismatch(found: value.storageClass)
        }
        self = fitting
    }
}

extension Bool: SQLiteColumnDecodable {
    init(column value: SQLiteValue) throws(SQLiteColumnMismatch) {
        guard case .integer(let integer) = value else { throw SQLiteColumnMismatch(found: value.storageClass) }
        self = integer != 0
    }
}

extension Double: SQLiteColumnDecodable {
    init(column value: SQLiteValue) throws(SQLiteColumnMismatch) {
        switch value {
        case .float(let number): self = number
        case .integer(let integer): self = Double(integer)
        default: throw SQLiteColumnMismatch(found: value.storageClass)
        }
    }
}

extension Data: SQLiteColumnDecodable {
    init(column value: SQLiteValue) throws(SQLiteColumnMismatch) {
        guard case .blob(let bytes) = value else { throw SQLiteColumnMismatch(found: value.storageClass) }
        self = bytes
    }
}

extension Optional: SQLiteColumnDecodable where Wrapped: SQLiteColumnDecodable {
    init(column value: SQLiteValue) throws(SQLiteColumnMismatch) {
        self = value == .null ? nil : try Wrapped(column: value)
    }
}

/// ``SQLiteFile`` as an SQLKit database: statements rendered in SQLite's dialect, values bound and read as
/// ``SQLiteValue``.
struct SQLiteFileDatabase: SQLDatabase {
    let file: SQLiteFile
    let logger: Logger
    let eventLoop: any EventLoop

    init(file: SQLiteFile, logger: Logger, eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.any()) {
        self.file = file
        self.logger = logger
        self.eventLoop = eventLoop
    }

    var dialect: any SQLDialect { SQLiteFileDialect() }
    /// No statement logging, at any level: the bound values include sealed secrets, nonces and key hashes.
    var queryLogLevel: Logger.Level? { nil }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void)
        -> EventLoopFuture<Void>
    {
        eventLoop.makeFutureWithTask { try await self.execute(sql: query, onRow) }
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        let (sql, binds) = serialize(query)
        let values = try binds.map { try SQLiteValue(binding: $0) }
        let rows = try await file.run(sql, values)
        for values in rows.rows { onRow(SQLiteFileRow(columns: rows.columns, values: values)) }
    }
}

/// SQLite's SQL as the store writes it: numbered `?N` placeholders, double-quoted identifiers.
private struct SQLiteFileDialect: SQLDialect {
    var name: String { "sqlite" }
    var identifierQuote: any SQLExpression { SQLRaw("\"") }
    var literalStringQuote: any SQLExpression { SQLRaw("'") }
    func bindPlaceholder(at position: Int) -> any SQLExpression { SQLRaw("?\(position)") }
    func literalBoolean(_ value: Bool) -> any SQLExpression { SQLRaw(value ? "TRUE" : "FALSE") }
    var supportsAutoIncrement: Bool { false }
    var autoIncrementClause: any SQLExpression { SQLRaw("AUTOINCREMENT") }
    var supportsReturning: Bool { true }
    var upsertSyntax: SQLUpsertSyntax { .standard }
}

/// One row of a ``SQLiteFile`` statement.
private struct SQLiteFileRow: SQLRow {
    let columns: SQLiteColumns
    let values: [SQLiteValue]

    var allColumns: [String] { columns.names }

    func contains(column: String) -> Bool { columns.offset(of: column) != nil }

    func decodeNil(column: String) throws -> Bool {
        guard let offset = columns.offset(of: column) else { return true }
        return values[offset] == .null
    }

    func decode<D: Decodable>(column: String, as type: D.Type) throws -> D {
        let key = SQLiteColumnKey(stringValue: column)
        guard let offset = columns.offset(of: column) else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: [], debugDescription: "The row has no column \(column)."))
        }
        guard let readable = D.self as? any SQLiteColumnDecodable.Type else {
            throw DecodingError.typeMismatch(
                D.self, .init(codingPath: [key], debugDescription: "A column cannot be read as \(D.self)."))
        }
        do {
            if let value = try readable.init(column: values[offset]) as? D { return value }
        } catch {
            throw DecodingError.typeMismatch(
                D.self,
                .init(codingPath: [key], debugDescription: "Column \(column) holds \(error.found), not \(D.self)."))
        }
        throw DecodingError.typeMismatch(
            D.self, .init(codingPath: [key], debugDescription: "Column \(column) cannot be read as \(D.self)."))
    }
}

private struct SQLiteColumnKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
