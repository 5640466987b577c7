import AssentCrypto
import AssentModel
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresKit
import SQLKit
import Synchronization
import Tracing

/// ``AssentStore`` over SQLKit, with two backends: an embedded SQLite file (the default) and PostgreSQL
/// (several server processes sharing one database).
///
/// Every secret column is sealed with the ``SecretBox`` and bound to its row, so the database alone reveals no key.
public final class SQLStore: AssentStore {
    /// Which database engine backs the store.
    public enum Backend: String, Sendable {
        case sqlite
        case postgres
    }

    public let backend: Backend
    let database: any SQLDatabase
    let box: SecretBox
    /// Decoded presentational parts of operations by id. They never change after creation, so a process may keep
    /// them; the cache is emptied when it grows past ``contentCacheLimit`` entries.
    /// Shared with the stores of ``inOneCommit(_:)``.
    let contentCache: ContentCache
    static let contentCacheLimit = 5_000
    private let close: @Sendable () async throws -> Void

    final class ContentCache: Sendable {
        let entries = Mutex<[String: (OperationContent, AllowedSignatureType)]>([:])
    }

    /// The migrations this build knows: ``Migrations/all``, or in a test a later version's.
    let migrations: [Migrations.Migration]

    private init(
        backend: Backend, database: any SQLDatabase, box: SecretBox, contentCache: ContentCache = ContentCache(),
        migrations: [Migrations.Migration] = Migrations.all, close: @escaping @Sendable () async throws -> Void
    ) {
        self.backend = backend
        self.database = database
        self.box = box
        self.contentCache = contentCache
        self.migrations = migrations
        self.close = close
    }

    /// This store's database as a build knowing `migrations` sees it (a newer version, in the tests of rolling
    /// upgrades); closing it leaves the database open.
    func knowing(_ migrations: [Migrations.Migration]) -> SQLStore {
        SQLStore(
            backend: backend, database: database, box: box, contentCache: contentCache, migrations: migrations,
            close: {})
    }

    /// Opens (creating if needed) the SQLite file at `path` in WAL mode.
    ///
    /// One connection serves every request: SQLite has a single writer anyway, the connection's calls are
    /// serialised (``SQLiteFile``), and every security update is a single conditional statement. Writes are durable
    /// before they are acknowledged — a counter that moved back after a power failure would let a captured signature
    /// be replayed — by group commit (``WALSync``): the connection commits with `synchronous = NORMAL` and each write
    /// statement returns only after an `fsync` of the log that began after it, one `fsync` serving every write
    /// that finished meanwhile.
    public static func sqlite(path: String, secretBox: SecretBox, logger: Logger) async throws -> SQLStore {
        let file = try SQLiteFile.open(path: path)
        let base = SQLiteFileDatabase(file: file, logger: logger)
        do {
            let mode = try await base.raw("PRAGMA journal_mode = WAL").first()?.decode(
                column: "journal_mode", as: String.self)
            guard mode?.lowercased() == "wal" else {
                throw AssentServerError.configuration(
                    "The SQLite file \(path) cannot use a write-ahead log (journal mode \(mode ?? "unknown")); "
                        + "put it on a local file system.")
            }
            // A 16 MiB page cache (SQLite's default is 2 MiB): with the default, the hot pages of a busy server
            // were read again from the file on every statement (a tenth of the server's time under load, in
            // `pread`).
            for pragma in [
                "PRAGMA synchronous = NORMAL", "PRAGMA foreign_keys = ON", "PRAGMA busy_timeout = 5000",
                "PRAGMA cache_size = -16384",
            ] {
                try await base.raw(SQLQueryString(pragma)).run()
            }
        } catch {
            try? await file.close()
            throw error
        }
        logger.debug(
            "Opened the SQLite database", metadata: ["path": "\(path)", "sqlite": "\(SQLiteFile.libraryVersion)"])
        await file.batchWrites()
        let wal = WALSync.writeAheadLog(ofDatabaseAt: path) { try await file.commitBatch() }
        let database = GroupCommitDatabase(base: base, wal: wal)
        return SQLStore(backend: .sqlite, database: database, box: secretBox) {
            try await file.close()
            logger.debug("Closed the SQLite database", metadata: ["path": "\(path)"])
        }
    }

    /// Connects to PostgreSQL at `url` (`postgres://user:password@host:port/database[?sslmode=…]`) through
    /// PostgresNIO's connection pool.
    public static func postgres(url: String, secretBox: SecretBox, logger: Logger, maxConnections: Int = 20)
        async throws -> SQLStore
    {
        let core: PostgresConnection.Configuration
        do {
            core = try SQLPostgresConfiguration(url: url).coreConfiguration
        } catch {
            throw AssentServerError.configuration(
                "The database URL is not a valid postgres://user:password@host:port/database URL.")
        }
        guard let host = core.host, let port = core.port else {
            throw AssentServerError.configuration("The database URL must name a host and port.")
        }
        // One connection first, to fail at once with the reason: the pool retries a refused connection for a minute
        // before it gives up, without saying why.
        do {
            let probe = try await PostgresConnection.connect(configuration: core, id: 0, logger: logger)
            try await probe.close()
        } catch {
            throw AssentServerError.configuration(
                "Cannot connect to PostgreSQL at \(host):\(port): \(Self.reason(connecting: error))")
        }
        let tls: PostgresClient.Configuration.TLS =
            core.tls.isEnforced
            ? .require(.makeClientConfiguration()) : core.tls.isAllowed ? .prefer(.makeClientConfiguration()) : .disable
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: core.username, password: core.password, database: core.database, tls: tls)
        configuration.options.maximumConnections = maxConnections
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let runner = Task { await client.run() }
        let database = PostgresClientDatabase(client: client, logger: logger)
        let store = SQLStore(backend: .postgres, database: database, box: secretBox) {
            runner.cancel()
            await runner.value
        }
        do {
            try await database.raw("SELECT 1").run()
        } catch {
            try? await store.shutdown()
            throw AssentServerError.configuration("Cannot connect to PostgreSQL at \(host):\(port): \(error)")
        }
        return store
    }

    public func shutdown() async throws { try await close() }

    /// Why a connection failed, in a few words: the server's message (a refused login, a missing database) or the
    /// network's, never the URL's password (PostgresNIO's own description hides everything).
    static func reason(connecting error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return message }
            if let underlying = error.underlying { return String(describing: underlying) }
            return "\(error.code)"
        }
        return String(describing: error)
    }

    /// PostgreSQL: `body` runs on one leased connection inside one transaction, committed when it returns and rolled
    /// back when it throws — a request's writes cost one commit (one WAL flush) instead of one each. SQLite: `body`
    /// gets this store; every write is durable by group commit already and one connection serves every request.
    public func inOneCommit<T: Sendable>(_ body: (any AssentStore) async throws -> T) async throws -> T {
        guard let postgres = database as? PostgresClientDatabase else { return try await body(self) }
        return try await spanned("db transaction") { try await inOneCommit(postgres, body) }
    }

    /// On PostgreSQL, `body` in a span named `name`, child of the request's when requests are traced: a transaction,
    /// or the statements a request's answer waits for outside one (an approval's read and write).
    func spanned<T: Sendable>(_ name: String, _ body: () async throws -> T) async throws -> T {
        guard backend == .postgres else { return try await body() }
        return try await withSpan(name, ofKind: .client) { span in
            span.attributes["db.system.name"] = "postgresql"
            return try await body()
        }
    }

    private func inOneCommit<T: Sendable>(
        _ postgres: PostgresClientDatabase, _ body: (any AssentStore) async throws -> T
    ) async throws -> T {
        try await postgres.client.withConnection { connection in
            let bound = SQLStore(
                backend: .postgres, database: connection.sql(queryLogLevel: nil), box: box,
                contentCache: contentCache, migrations: migrations, close: {})
            _ = try await connection.query("BEGIN", logger: postgres.logger).get()
            let value: T
            do {
                value = try await body(bound)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: postgres.logger).get()
                throw error
            }
            // PostgreSQL answers COMMIT in a transaction a failed statement aborted with ROLLBACK, not an error
            // (the failure may have been caught and logged, as a failed audit write is).
            let result = try await connection.query("COMMIT", logger: postgres.logger).get()
            guard result.metadata.command == "COMMIT" else {
                throw AssentServerError.internalError("The transaction was rolled back: one of its statements failed.")
            }
            return value
        }
    }

    // MARK: Migrations

    /// Migrates the schema when it is behind, then seals with the key-encryption key the database names. A schema
    /// that is current, or newer with versions that declared this build still serves it, is not touched, so a
    /// server whose role may not change the schema starts on it.
    /// - Throws: ``SchemaNewerThanServer`` when a newer server migrated the database past what this build serves; a
    ///   configuration error when the schema is behind and this role may not change it.
    public func migrate() async throws {
        switch try await schemaState() {
        case .current, .aheadCompatible: break
        case .ahead(let unknown): throw SchemaNewerThanServer(unknown: unknown, known: newestKnown)
        case .behind: _ = try await migrateSchema()
        }
        try await adoptSealingKey()
    }

    /// The newest version this build knows.
    var newestKnown: Int { migrations.map(\.version).max() ?? 0 }

    /// Applies the migrations the schema lacks (`assent migrate`); the versions it applied.
    public func migrateSchema() async throws -> [Int] {
        if backend == .postgres, case .behind(let missing) = try await schemaState() {
            try await requireSchemaPrivileges(missing: missing)
        }
        // Concurrent starts may race on CREATE TABLE IF NOT EXISTS; the statements are idempotent, so retry.
        var attempt = 0
        while true {
            do {
                return try await migrateOnce()
            } catch let error as SchemaNewerThanServer {
                throw error
            } catch  where attempt < 3 {
                attempt += 1
                try await Task.sleep(for: .milliseconds(200 * attempt))
            }
        }
    }

    /// PostgreSQL: refuses, with a sentence, a role that may not create tables in the schema or does not own its
    /// tables — the server's least-privilege role (docs/DEPLOY.md); `assent migrate` runs with the owner's.
    private func requireSchemaPrivileges(missing: [Int]) async throws {
        let row = try await database.raw(
            """
            SELECT current_user AS role, has_schema_privilege(current_schema(), 'CREATE') AS may_create, \
            coalesce((SELECT bool_and(pg_has_role(current_user, tableowner, 'USAGE')) FROM pg_tables \
            WHERE schemaname = current_schema()), true) AS owns_tables
            """
        ).first()
        let role = try row?.decode(column: "role", as: String.self) ?? "?"
        let mayCreate = try row?.decode(column: "may_create", as: Bool.self) ?? false
        let ownsTables = try row?.decode(column: "owns_tables", as: Bool.self) ?? false
        guard mayCreate && ownsTables else {
            throw AssentServerError.configuration(
                "The database's schema lacks this build's migrations (versions "
                    + missing.map(String.init).joined(separator: ", ")
                    + ") and role \(role) may not change it: run `assent migrate` with the schema owner's database "
                    + "URL first (docs/DEPLOY.md).")
        }
    }

    public func schemaState() async throws -> SchemaState {
        let applied = try await appliedVersions()
        return SchemaState(
            applied: Set(applied.keys), known: migrations.map(\.version),
            compatibleFrom: applied.compactMapValues { $0 })
    }

    /// The versions the schema has, each with the oldest build that serves it where the schema records that;
    /// empty before the first migration.
    private func appliedVersions() async throws -> [Int: Int?] {
        let columns: [String]
        switch backend {
        case .sqlite:
            columns = try await database.raw("SELECT name FROM pragma_table_info('schema_migrations')").all().map {
                try $0.decode(column: "name", as: String.self)
            }
        case .postgres:
            columns = try await database.raw(
                """
                SELECT column_name FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = 'schema_migrations'
                """
            ).all().map { try $0.decode(column: "column_name", as: String.self) }
        }
        guard !columns.isEmpty else { return [:] }
        let recorded = columns.contains("compatible_from")
        let rows = try await database.raw(
            recorded
                ? "SELECT version, compatible_from FROM schema_migrations" : "SELECT version FROM schema_migrations"
        ).all()
        var versions: [Int: Int?] = [:]
        for row in rows {
            versions[try row.decode(column: "version", as: Int.self)] =
                recorded ? try row.decode(column: "compatible_from", as: Int?.self) : nil
        }
        return versions
    }

    private func migrateOnce() async throws -> [Int] {
        try await database.raw(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"
        ).run()
        let state = try await schemaState()
        if case .ahead(let unknown) = state {
            throw SchemaNewerThanServer(unknown: unknown, known: newestKnown)
        }
        guard case .behind(let missing) = state else { return [] }
        var done: [Int] = []
        for migration in migrations where missing.contains(migration.version) {
            // SQLite (one connection, transactional DDL) applies a version whole or not at all; PostgreSQL's
            // statements are idempotent, as concurrent starts of several processes need.
            if backend == .sqlite { try await database.raw("BEGIN IMMEDIATE").run() }
            do {
                for statement in backend == .sqlite ? migration.sqlite : migration.postgres {
                    try await database.raw(SQLQueryString(statement)).run()
                }
                // Versions before the column existed record none; each later one the oldest build serving it.
                if migration.version >= Migrations.compatibilityRecorded {
                    try await database.raw(
                        """
                        INSERT INTO schema_migrations (version, applied_at, compatible_from) \
                        VALUES (\(bind: migration.version), \(bind: Date().millis), \(bind: migration.compatibleFrom)) \
                        ON CONFLICT DO NOTHING
                        """
                    ).run()
                } else {
                    try await database.raw(
                        """
                        INSERT INTO schema_migrations (version, applied_at) VALUES (\(bind: migration.version), \
                        \(bind: Date().millis)) ON CONFLICT DO NOTHING
                        """
                    ).run()
                }
                if backend == .sqlite { try await database.raw("COMMIT").run() }
            } catch {
                if backend == .sqlite { try? await database.raw("ROLLBACK").run() }
                throw error
            }
            done.append(migration.version)
        }
        return done
    }
}

/// An ``SQLDatabase`` written with `async` only: SQLKit's older future-based entry point runs the `async` one.
protocol AsyncSQLDatabase: SQLDatabase {}

extension AsyncSQLDatabase {
    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<
        Void
    > {
        let promise = eventLoop.makePromise(of: Void.self)
        promise.completeWithTask { try await self.execute(sql: query, onRow) }
        return promise.futureResult
    }
}

/// An ``SQLDatabase`` over PostgresNIO's ``PostgresClient`` pool: each statement leases a connection.
struct PostgresClientDatabase: AsyncSQLDatabase {
    let client: PostgresClient
    let logger: Logger

    var eventLoop: any EventLoop { MultiThreadedEventLoopGroup.singleton.any() }
    var version: (any SQLDatabaseReportedVersion)? { nil }
    var dialect: any SQLDialect { PostgresDialect() }
    var queryLogLevel: Logger.Level? { nil }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        try await client.withConnection { connection in
            try await connection.sql(queryLogLevel: nil).execute(sql: query, onRow)
        }
    }
}
