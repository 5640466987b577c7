import AssentCrypto
import AssentModel
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresKit
import SQLKit
import Synchronization

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
    private let contentCache: ContentCache
    private static let contentCacheLimit = 5_000
    private let close: @Sendable () async throws -> Void

    private final class ContentCache: Sendable {
        let entries = Mutex<[String: (OperationContent, AllowedSignatureType)]>([:])
    }

    private init(
        backend: Backend, database: any SQLDatabase, box: SecretBox, contentCache: ContentCache = ContentCache(),
        close: @escaping @Sendable () async throws -> Void
    ) {
        self.backend = backend
        self.database = database
        self.box = box
        self.contentCache = contentCache
        self.close = close
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

    /// PostgreSQL: `body` runs on one leased connection inside one transaction, committed when it returns and rolled
    /// back when it throws — a request's writes cost one commit (one WAL flush) instead of one each. SQLite: `body`
    /// gets this store; every write is durable by group commit already and one connection serves every request.
    public func inOneCommit<T: Sendable>(_ body: (any AssentStore) async throws -> T) async throws -> T {
        guard let postgres = database as? PostgresClientDatabase else { return try await body(self) }
        return try await postgres.client.withConnection { connection in
            let bound = SQLStore(
                backend: .postgres, database: connection.sql(queryLogLevel: nil), box: box,
                contentCache: contentCache, close: {})
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

    /// Migrates the schema, then seals with the key-encryption key the database names.
    public func migrate() async throws {
        // Concurrent starts may race on CREATE TABLE IF NOT EXISTS; the statements are idempotent, so retry.
        var attempt = 0
        while true {
            do {
                try await migrateOnce()
                break
            } catch  where attempt < 3 {
                attempt += 1
                try await Task.sleep(for: .milliseconds(200 * attempt))
            }
        }
        try await adoptSealingKey()
    }

    private func migrateOnce() async throws {
        try await database.raw(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"
        ).run()
        let applied = Set(
            try await database.raw("SELECT version FROM schema_migrations").all().map {
                try $0.decode(column: "version", as: Int.self)
            })
        for migration in Migrations.all where !applied.contains(migration.version) {
            // SQLite (one connection, transactional DDL) applies a version whole or not at all; PostgreSQL's
            // statements are idempotent, as concurrent starts of several processes need.
            if backend == .sqlite { try await database.raw("BEGIN IMMEDIATE").run() }
            do {
                for statement in backend == .sqlite ? migration.sqlite : migration.postgres {
                    try await database.raw(SQLQueryString(statement)).run()
                }
                try await database.raw(
                    """
                    INSERT INTO schema_migrations (version, applied_at) VALUES (\(bind: migration.version), \
                    \(bind: Date().millis)) ON CONFLICT DO NOTHING
                    """
                ).run()
                if backend == .sqlite { try await database.raw("COMMIT").run() }
            } catch {
                if backend == .sqlite { try? await database.raw("ROLLBACK").run() }
                throw error
            }
        }
    }

    // MARK: Applications

    public func insertApplication(_ application: ApplicationRecord) async throws {
        let secret = try box.seal(
            Data(application.applicationSecret.utf8), context: SealedColumn.applicationSecret.context(application.id))
        let master = try box.seal(
            application.masterPrivateKey.scalar, context: SealedColumn.applicationMasterKey.context(application.id))
        try await database.raw(
            """
            INSERT INTO applications (id, name, application_key, application_secret, master_private_key, created_at)
            VALUES (\(bind: application.id), \(bind: application.name), \(bind: application.applicationKey), \
            \(bind: secret), \(bind: master), \(bind: application.createdAt))
            """
        ).run()
    }

    public func applications() async throws -> [ApplicationRecord] {
        try await database.raw("SELECT * FROM applications ORDER BY created_at").all().map(decodeApplication)
    }

    public func application(id: String) async throws -> ApplicationRecord? {
        try await database.raw("SELECT * FROM applications WHERE id = \(bind: id)").first().map(decodeApplication)
    }

    public func renameApplication(id: String, name: String) async throws -> Bool {
        !(try await database.raw("UPDATE applications SET name = \(bind: name) WHERE id = \(bind: id) RETURNING id")
            .all()).isEmpty
    }

    public func application(key: String) async throws -> ApplicationRecord? {
        try await database.raw("SELECT * FROM applications WHERE application_key = \(bind: key)").first()
            .map(decodeApplication)
    }

    private func decodeApplication(_ row: any SQLRow) throws -> ApplicationRecord {
        let id = try row.decode(column: "id", as: String.self)
        let secret = try box.open(
            try row.decode(column: "application_secret", as: Data.self),
            context: SealedColumn.applicationSecret.context(id))
        let master = try box.open(
            try row.decode(column: "master_private_key", as: Data.self),
            context: SealedColumn.applicationMasterKey.context(id))
        return ApplicationRecord(
            id: id,
            name: try row.decode(column: "name", as: String.self),
            applicationKey: try row.decode(column: "application_key", as: String.self),
            applicationSecret: String(decoding: secret, as: UTF8.self),
            masterPrivateKey: try ECPrivateKey(scalar: master),
            createdAt: try row.decode(column: "created_at", as: Int64.self)
        )
    }

    // MARK: Activations

    public func insertActivation(_ a: ActivationRecord) async throws {
        let sealed = try sealedActivationSecrets(a)
        try await database.raw(
            """
            INSERT INTO activations (id, application_id, user_id, state, activation_code, code_expires_at, commit_mode,
            activation_name, platform, device_info, extras, device_public_key, server_private_key, master_secret,
            counter_data, counter, used_counters, failed_attempts, max_failed_attempts, blocked_reason, version,
            created_at, updated_at, last_used_at)
            VALUES (\(bind: a.id), \(bind: a.applicationId), \(bind: a.userId), \(bind: Int64(a.state.rawValue)), \
            \(bind: a.activationCode), \(bind: a.codeExpiresAt), \(bind: a.commitMode.rawValue), \
            \(bind: a.activationName), \(bind: a.platform), \(bind: a.deviceInfo), \(bind: a.extras), \
            \(bind: a.devicePublicKeyX963), \(bind: sealed.serverPrivateKey), \(bind: sealed.masterSecret), \
            \(bind: a.counterData.data), \(bind: a.counter), \(bind: Self.joined(a.usedCounters)), \
            \(bind: Int64(a.failedAttempts)), \
            \(bind: Int64(a.maxFailedAttempts)), \(bind: a.blockedReason), \(bind: a.version), \(bind: a.createdAt), \
            \(bind: a.updatedAt), \(bind: a.lastUsedAt))
            """
        ).run()
    }

    public func activation(id: String) async throws -> ActivationRecord? {
        try await database.raw("SELECT * FROM activations WHERE id = \(bind: id)").first().map(decodeActivation)
    }

    public func activation(code: String, applicationId: String) async throws -> ActivationRecord? {
        try await database.raw(
            "SELECT * FROM activations WHERE activation_code = \(bind: code) AND application_id = \(bind: applicationId)"
        ).first().map(decodeActivation)
    }

    public func activations(userId: String) async throws -> [ActivationRecord] {
        try await database.raw(
            "SELECT * FROM activations WHERE user_id = \(bind: userId) ORDER BY created_at"
        ).all().map(decodeActivation)
    }

    public func updateActivation(_ a: ActivationRecord, expectedVersion: Int64) async throws -> Bool {
        let masterSecret = try sealedMasterSecret(a)
        let rows = try await database.raw(
            """
            UPDATE activations SET state = \(bind: Int64(a.state.rawValue)), activation_code = \(bind: a.activationCode),
            activation_name = \(bind: a.activationName), platform = \(bind: a.platform),
            device_info = \(bind: a.deviceInfo), extras = \(bind: a.extras),
            device_public_key = \(bind: a.devicePublicKeyX963), master_secret = \(bind: masterSecret),
            counter_data = \(bind: a.counterData.data), counter = \(bind: a.counter),
            used_counters = \(bind: Self.joined(a.usedCounters)),
            failed_attempts = \(bind: Int64(a.failedAttempts)), blocked_reason = \(bind: a.blockedReason),
            version = \(bind: expectedVersion + 1), updated_at = \(bind: a.updatedAt), last_used_at = \(bind: a.lastUsedAt),
            pin_changed_at = \(bind: a.pinChangedAt)
            WHERE id = \(bind: a.id) AND version = \(bind: expectedVersion)
            RETURNING id
            """
        ).all()
        return !rows.isEmpty
    }

    /// Counter values stored as one column: their 16-byte values one after another.
    private static func joined(_ counters: [HashCounter]) -> Data {
        counters.reduce(into: Data()) { $0.append($1.data) }
    }

    private static func split(_ stored: Data?) throws -> [HashCounter] {
        guard let stored, !stored.isEmpty else { return [] }
        guard stored.count % 16 == 0 else {
            throw AssentServerError.internalError("An activation's used counters have an invalid stored length.")
        }
        return try stride(from: stored.startIndex, to: stored.endIndex, by: 16).map {
            try HashCounter(data: stored[$0..<$0 + 16])
        }
    }

    private func sealedActivationSecrets(_ a: ActivationRecord) throws -> (serverPrivateKey: Data, masterSecret: Data?)
    {
        (
            try box.seal(a.serverPrivateKeyScalar, context: SealedColumn.activationServerKey.context(a.id)),
            try sealedMasterSecret(a)
        )
    }

    /// The master secret sealed (an update writes only this secret: the server key never changes); the sealed bytes
    /// the store read when the secret is still the one they hold, under the key that seals now (so an update never
    /// writes back a value the re-seal has rewritten under a newer key).
    private func sealedMasterSecret(_ a: ActivationRecord) throws -> Data? {
        guard let secret = a.masterSecret else { return nil }
        if let stored = a.storedMasterSecret, stored.plain == secret, box.isCurrent(stored.sealed) {
            return stored.sealed
        }
        return try box.seal(secret, context: SealedColumn.activationMasterSecret.context(a.id))
    }

    func decodeActivation(_ row: any SQLRow) throws -> ActivationRecord {
        let id = try row.decode(column: "id", as: String.self)
        let stateValue = try row.decode(column: "state", as: Int64.self)
        guard let state = ActivationState(rawValue: UInt8(clamping: stateValue)),
            let commitMode = CommitMode(rawValue: try row.decode(column: "commit_mode", as: String.self))
        else {
            throw AssentServerError.internalError("Activation \(id) has an invalid stored state.")
        }
        let serverKey = try box.open(
            try row.decode(column: "server_private_key", as: Data.self),
            context: SealedColumn.activationServerKey.context(id))
        let sealedMaster = try row.decode(column: "master_secret", as: Data?.self)
        let master = try sealedMaster.map { try box.open($0, context: SealedColumn.activationMasterSecret.context(id)) }
        var record = ActivationRecord(
            id: id,
            applicationId: try row.decode(column: "application_id", as: String.self),
            userId: try row.decode(column: "user_id", as: String.self),
            state: state,
            activationCode: try row.decode(column: "activation_code", as: String?.self),
            codeExpiresAt: try row.decode(column: "code_expires_at", as: Int64.self),
            commitMode: commitMode,
            activationName: try row.decode(column: "activation_name", as: String?.self),
            platform: try row.decode(column: "platform", as: String?.self),
            deviceInfo: try row.decode(column: "device_info", as: String?.self),
            extras: try row.decode(column: "extras", as: String?.self),
            devicePublicKeyX963: try row.decode(column: "device_public_key", as: Data?.self),
            serverPrivateKeyScalar: serverKey,
            masterSecret: master,
            counterData: try HashCounter(data: try row.decode(column: "counter_data", as: Data.self)),
            counter: try row.decode(column: "counter", as: Int64.self),
            usedCounters: try Self.split(try row.decode(column: "used_counters", as: Data?.self)),
            failedAttempts: Int(try row.decode(column: "failed_attempts", as: Int64.self)),
            maxFailedAttempts: Int(try row.decode(column: "max_failed_attempts", as: Int64.self)),
            blockedReason: try row.decode(column: "blocked_reason", as: String?.self),
            version: try row.decode(column: "version", as: Int64.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            updatedAt: try row.decode(column: "updated_at", as: Int64.self),
            lastUsedAt: try row.decode(column: "last_used_at", as: Int64?.self),
            pinChangedAt: try row.decode(column: "pin_changed_at", as: Int64?.self)
        )
        if let master, let sealedMaster { record.storedMasterSecret = (master, sealedMaster) }
        return record
    }

    // MARK: Tokens

    public func insertToken(_ token: TokenRecord) async throws {
        let secret = try box.seal(token.secret, context: SealedColumn.tokenSecret.context(token.id))
        try await database.raw(
            """
            INSERT INTO tokens (id, activation_id, secret, signature_type, created_at)
            VALUES (\(bind: token.id), \(bind: token.activationId), \(bind: secret), \
            \(bind: token.signatureType.rawValue), \(bind: token.createdAt))
            """
        ).run()
    }

    public func token(id: String) async throws -> TokenRecord? {
        guard let row = try await database.raw("SELECT * FROM tokens WHERE id = \(bind: id)").first() else {
            return nil
        }
        return TokenRecord(
            id: id,
            activationId: try row.decode(column: "activation_id", as: String.self),
            secret: try box.open(
                try row.decode(column: "secret", as: Data.self), context: SealedColumn.tokenSecret.context(id)),
            signatureType: try SignatureType(parsing: try row.decode(column: "signature_type", as: String.self)),
            createdAt: try row.decode(column: "created_at", as: Int64.self)
        )
    }

    public func tokenWithActivation(id: String) async throws -> (TokenRecord, DevicePrincipal, ActivationState)? {
        guard
            let row = try await database.raw(
                """
                SELECT t.activation_id, t.secret, t.signature_type, t.created_at, a.application_id, a.user_id, a.state
                FROM tokens t JOIN activations a ON a.id = t.activation_id WHERE t.id = \(bind: id)
                """
            ).first()
        else { return nil }
        let token = TokenRecord(
            id: id,
            activationId: try row.decode(column: "activation_id", as: String.self),
            secret: try box.open(
                try row.decode(column: "secret", as: Data.self), context: SealedColumn.tokenSecret.context(id)),
            signatureType: try SignatureType(parsing: try row.decode(column: "signature_type", as: String.self)),
            createdAt: try row.decode(column: "created_at", as: Int64.self)
        )
        guard let state = ActivationState(rawValue: UInt8(clamping: try row.decode(column: "state", as: Int64.self)))
        else { throw AssentServerError.internalError("Activation \(token.activationId) has an invalid stored state.") }
        let principal = DevicePrincipal(
            activationId: token.activationId, applicationId: try row.decode(column: "application_id", as: String.self),
            userId: try row.decode(column: "user_id", as: String.self))
        return (token, principal, state)
    }

    public func deleteToken(id: String, activationId: String) async throws -> Bool {
        !(try await database.raw(
            "DELETE FROM tokens WHERE id = \(bind: id) AND activation_id = \(bind: activationId) RETURNING id"
        ).all()).isEmpty
    }

    // MARK: Temporary keys and replay guard

    public func insertTemporaryKey(_ key: TemporaryKeyRecord) async throws {
        let sealed = try box.seal(key.privateKey.scalar, context: SealedColumn.temporaryKey.context(key.id))
        try await database.raw(
            """
            INSERT INTO temporary_keys (id, application_id, activation_id, private_key, expires_at)
            VALUES (\(bind: key.id), \(bind: key.applicationId), \(bind: key.activationId), \(bind: sealed), \
            \(bind: key.expiresAt))
            """
        ).run()
    }

    public func temporaryKey(id: String) async throws -> TemporaryKeyRecord? {
        guard let row = try await database.raw("SELECT * FROM temporary_keys WHERE id = \(bind: id)").first() else {
            return nil
        }
        let scalar = try box.open(
            try row.decode(column: "private_key", as: Data.self), context: SealedColumn.temporaryKey.context(id))
        return TemporaryKeyRecord(
            id: id,
            applicationId: try row.decode(column: "application_id", as: String.self),
            activationId: try row.decode(column: "activation_id", as: String?.self),
            privateKey: try ECPrivateKey(scalar: scalar),
            expiresAt: try row.decode(column: "expires_at", as: Int64.self)
        )
    }

    public func claimUnique(kind: String, value: String, expiresAt: Millis) async throws -> Bool {
        !(try await database.raw(
            """
            INSERT INTO used_values (kind, value, expires_at) VALUES (\(bind: kind), \(bind: value), \(bind: expiresAt))
            ON CONFLICT DO NOTHING RETURNING kind
            """
        ).all()).isEmpty
    }

    public func activationsWithExpiredCode(now: Millis, limit: Int) async throws -> [String] {
        try await database.raw(
            """
            SELECT id FROM activations WHERE activation_code IS NOT NULL AND code_expires_at <= \(bind: now) \
            AND state = \(bind: Int64(ActivationState.created.rawValue)) LIMIT \(unsafeRaw: String(max(1, limit)))
            """
        ).all().map { try $0.decode(column: "id", as: String.self) }
    }

    public func purgeExpired(before: Millis) async throws {
        try await database.raw("DELETE FROM used_values WHERE expires_at < \(bind: before)").run()
        try await database.raw("DELETE FROM temporary_keys WHERE expires_at < \(bind: before)").run()
    }

    // MARK: API keys

    public func insertAPIKey(_ key: APIKeyRecord) async throws {
        try await database.raw(
            """
            INSERT INTO api_keys (id, name, key_hash, scopes, created_at, applications)
            VALUES (\(bind: key.id), \(bind: key.name), \(bind: key.keyHash), \
            \(bind: key.scopes.map(\.rawValue).sorted().joined(separator: " ")), \(bind: key.createdAt), \
            \(bind: key.applications?.joined(separator: " ")))
            """
        ).run()
    }

    public func apiKey(hash: Data) async throws -> APIKeyRecord? {
        try await database.raw("SELECT * FROM api_keys WHERE key_hash = \(bind: hash)").first().map(decodeAPIKey)
    }

    public func apiKeys() async throws -> [APIKeyRecord] {
        try await database.raw("SELECT * FROM api_keys ORDER BY created_at").all().map(decodeAPIKey)
    }

    public func deleteAPIKey(id: String) async throws -> Bool {
        !(try await database.raw("DELETE FROM api_keys WHERE id = \(bind: id) RETURNING id").all()).isEmpty
    }

    private func decodeAPIKey(_ row: any SQLRow) throws -> APIKeyRecord {
        APIKeyRecord(
            id: try row.decode(column: "id", as: String.self),
            name: try row.decode(column: "name", as: String.self),
            keyHash: try row.decode(column: "key_hash", as: Data.self),
            scopes: Set(
                try row.decode(column: "scopes", as: String.self).split(separator: " ").compactMap {
                    APIScope(rawValue: String($0))
                }),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            applications: try row.decode(column: "applications", as: String?.self).map {
                $0.split(separator: " ").map(String.init)
            }
        )
    }

    // MARK: Operations

    public func insertOperation(_ o: OperationRecord) async throws {
        let seed = try o.proximitySeed.map {
            try box.seal($0, context: SealedColumn.operationProximitySeed.context(o.id))
        }
        try await database.raw(
            """
            INSERT INTO operations (id, application_id, user_id, name, data, status, status_reason, content,
            signature_type, failed_attempts, max_failed_attempts, proximity_seed, offline_nonce, offline_totp,
            activation_id, template, created_at, expires_at, updated_at, finished_at, version, number_matching,
            matching_number, number_choices, devices)
            VALUES (\(bind: o.id), \(bind: o.applicationId), \(bind: o.userId), \(bind: o.name), \(bind: o.data), \
            \(bind: o.status.rawValue), \(bind: o.statusReason), \(bind: try Self.json(o.content)), \
            \(bind: try Self.json(o.allowedSignatureType)), \(bind: Int64(o.failedAttempts)), \
            \(bind: Int64(o.maxFailedAttempts)), \(bind: seed), \(bind: o.offlineNonce), \(bind: o.offlineTOTP), \
            \(bind: o.activationId), \(bind: o.template), \(bind: o.createdAt), \(bind: o.expiresAt), \
            \(bind: o.updatedAt), \(bind: o.finishedAt), \(bind: o.version), \(bind: o.numberMatching), \
            \(bind: o.matchingNumber.map(Int64.init)), \(bind: o.numberChoices.map(String.init).joined(separator: " ")), \
            \(bind: o.devices?.joined(separator: " ")))
            """
        ).run()
    }

    public func operation(id: String) async throws -> OperationRecord? {
        try await database.raw("SELECT * FROM operations WHERE id = \(bind: id)").first().map(decodeOperation)
    }

    public func operations(userId: String, status: OperationStatus?, limit: Int) async throws -> [OperationRecord] {
        var query = SQLQueryString("SELECT * FROM operations WHERE user_id = ")
        query.appendInterpolation(bind: userId)
        if let status {
            query.appendInterpolation(unsafeRaw: " AND status = ")
            query.appendInterpolation(bind: status.rawValue)
        }
        query.appendInterpolation(unsafeRaw: " ORDER BY created_at DESC LIMIT \(max(1, min(limit, 1000)))")
        return try await database.raw(query).all().map(decodeOperation)
    }

    public func updateOperation(_ o: OperationRecord, expectedVersion: Int64) async throws -> Bool {
        !(try await database.raw(
            """
            UPDATE operations SET user_id = \(bind: o.userId), status = \(bind: o.status.rawValue),
            status_reason = \(bind: o.statusReason), failed_attempts = \(bind: Int64(o.failedAttempts)),
            offline_nonce = \(bind: o.offlineNonce), offline_totp = \(bind: o.offlineTOTP),
            activation_id = \(bind: o.activationId), approved_with = \(bind: o.approvedWith),
            mobile_context = \(bind: o.mobileContext), status_actor = \(bind: o.statusActor),
            updated_at = \(bind: o.updatedAt),
            finished_at = \(bind: o.finishedAt), version = \(bind: expectedVersion + 1)
            WHERE id = \(bind: o.id) AND version = \(bind: expectedVersion)
            RETURNING id
            """
        ).all()).isEmpty
    }

    public func overdueOperationIds(now: Millis, limit: Int) async throws -> [String] {
        try await database.raw(
            """
            SELECT id FROM operations WHERE status = \(bind: OperationStatus.pending.rawValue) \
            AND expires_at <= \(bind: now) ORDER BY expires_at LIMIT \(unsafeRaw: String(max(1, limit)))
            """
        ).all().map { try $0.decode(column: "id", as: String.self) }
    }

    func decodeOperation(_ row: any SQLRow) throws -> OperationRecord {
        let id = try row.decode(column: "id", as: String.self)
        guard let status = OperationStatus(rawValue: try row.decode(column: "status", as: String.self)) else {
            throw AssentServerError.internalError("Operation \(id) has an invalid stored status.")
        }
        let (content, allowed) = try cachedContent(id: id, row: row)
        return OperationRecord(
            id: id,
            applicationId: try row.decode(column: "application_id", as: String.self),
            userId: try row.decode(column: "user_id", as: String?.self),
            name: try row.decode(column: "name", as: String.self),
            data: try row.decode(column: "data", as: String.self),
            status: status,
            statusReason: try row.decode(column: "status_reason", as: String?.self),
            content: content,
            allowedSignatureType: allowed,
            failedAttempts: Int(try row.decode(column: "failed_attempts", as: Int64.self)),
            maxFailedAttempts: Int(try row.decode(column: "max_failed_attempts", as: Int64.self)),
            proximitySeed: try row.decode(column: "proximity_seed", as: Data?.self).map {
                try box.open($0, context: SealedColumn.operationProximitySeed.context(id))
            },
            offlineNonce: try row.decode(column: "offline_nonce", as: String?.self),
            offlineTOTP: try row.decode(column: "offline_totp", as: String?.self),
            activationId: try row.decode(column: "activation_id", as: String?.self),
            approvedWith: try row.decode(column: "approved_with", as: String?.self),
            mobileContext: try row.decode(column: "mobile_context", as: String?.self),
            numberMatching: try row.decode(column: "number_matching", as: String?.self),
            matchingNumber: try row.decode(column: "matching_number", as: Int64?.self).map { Int($0) },
            numberChoices: (try row.decode(column: "number_choices", as: String?.self) ?? "").split(separator: " ")
                .compactMap { Int($0) },
            devices: try row.decode(column: "devices", as: String?.self).map {
                $0.split(separator: " ").map(String.init)
            },
            template: try row.decode(column: "template", as: String?.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            expiresAt: try row.decode(column: "expires_at", as: Int64.self),
            updatedAt: try row.decode(column: "updated_at", as: Int64.self),
            finishedAt: try row.decode(column: "finished_at", as: Int64?.self),
            statusActor: try row.decode(column: "status_actor", as: String?.self),
            version: try row.decode(column: "version", as: Int64.self)
        )
    }

    private func cachedContent(id: String, row: any SQLRow) throws -> (OperationContent, AllowedSignatureType) {
        if let cached = contentCache.entries.withLock({ $0[id] }) { return cached }
        let decoded = (
            try Self.decodeJSON(OperationContent.self, try row.decode(column: "content", as: String.self)),
            try Self.decodeJSON(AllowedSignatureType.self, try row.decode(column: "signature_type", as: String.self))
        )
        contentCache.entries.withLock {
            if $0.count >= Self.contentCacheLimit { $0.removeAll(keepingCapacity: true) }
            $0[id] = decoded
        }
        return decoded
    }

    private static func json<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    private static func decodeJSON<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }

    // MARK: Operation templates

    public func putTemplate(applicationId: String, name: String, body: String, at: Millis) async throws {
        try await database.raw(
            """
            INSERT INTO operation_templates (application_id, name, body, updated_at)
            VALUES (\(bind: applicationId), \(bind: name), \(bind: body), \(bind: at))
            ON CONFLICT (application_id, name) DO UPDATE SET body = EXCLUDED.body, updated_at = EXCLUDED.updated_at
            """
        ).run()
    }

    public func template(applicationId: String, name: String) async throws -> (body: String, updatedAt: Millis)? {
        guard
            let row = try await database.raw(
                """
                SELECT * FROM operation_templates WHERE application_id = \(bind: applicationId) AND name = \(bind: name)
                """
            ).first()
        else { return nil }
        return (try row.decode(column: "body", as: String.self), try row.decode(column: "updated_at", as: Int64.self))
    }

    public func templates(applicationId: String) async throws -> [(name: String, body: String, updatedAt: Millis)] {
        try await database.raw(
            "SELECT * FROM operation_templates WHERE application_id = \(bind: applicationId) ORDER BY name"
        ).all().map {
            (
                try $0.decode(column: "name", as: String.self), try $0.decode(column: "body", as: String.self),
                try $0.decode(column: "updated_at", as: Int64.self)
            )
        }
    }

    public func deleteTemplate(applicationId: String, name: String) async throws -> Bool {
        !(try await database.raw(
            """
            DELETE FROM operation_templates WHERE application_id = \(bind: applicationId) AND name = \(bind: name) \
            RETURNING name
            """
        ).all()).isEmpty
    }

    // MARK: Audit

    public func appendAudit(_ event: AuditEvent) async throws {
        try await database.raw(
            """
            INSERT INTO audit_events (at, type, activation_id, user_id, actor, detail, application_id)
            VALUES (\(bind: event.at), \(bind: event.type), \(bind: event.activationId), \(bind: event.userId), \
            \(bind: event.actor), \(bind: event.detail), \(bind: event.applicationId))
            """
        ).run()
    }

    public func audit(activationId: String?, userId: String?, limit: Int) async throws -> [AuditEvent] {
        try await auditEvents(AuditFilter(activationId: activationId, userId: userId), limit: limit)
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
