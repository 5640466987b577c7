import AssentCrypto
import Foundation
import Logging

/// Opens the store `assent serve` and `assent admin` share, and prepares a fresh installation.
public enum ServerBootstrap {
    /// Where the data lives and which database to use.
    public struct Location: Sendable {
        /// The directory of the SQLite file and the key-encryption key file (default `./assent-data`).
        public var dataDirectory: URL
        /// A `postgres://` URL, or `nil` for the embedded SQLite file.
        public var databaseURL: String?

        public init(dataDirectory: URL, databaseURL: String?) {
            self.dataDirectory = dataDirectory
            self.databaseURL = databaseURL
        }

        /// Whether the data lives in PostgreSQL (a `--database` URL), not in the data directory's SQLite file.
        var usesPostgres: Bool { databaseURL.map { !$0.isEmpty } ?? false }

        /// The SQLite file in the data directory.
        var sqlitePath: String { dataDirectory.appendingPathComponent("assent.sqlite").path }
    }

    /// The store at `location`, sealed with `box`, neither migrated nor prepared: PostgreSQL when a URL is given,
    /// else the SQLite file (made if missing).
    static func open(_ location: Location, box: SecretBox, logger: Logger, maxConnections: Int = 20) async throws
        -> SQLStore
    {
        guard let url = location.databaseURL, location.usesPostgres else {
            return try await SQLStore.sqlite(path: location.sqlitePath, secretBox: box, logger: logger)
        }
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else {
            throw AssentServerError.configuration("--database takes a postgres:// URL; omit it for SQLite.")
        }
        return try await SQLStore.postgres(url: url, secretBox: box, logger: logger, maxConnections: maxConnections)
    }

    /// What ``migrateSchema(_:logger:)`` did.
    public struct Migration: Sendable {
        /// The versions it applied, oldest first (none when the schema was current).
        public var applied: [Int]
        /// The newest version the schema now has.
        public var version: Int
        public var backend: SQLStore.Backend
        /// Whether a newer Assent migrated the schema past this build (whose servers still serve it).
        public var newerThanBuild: Bool
    }

    /// `assent migrate`: applies the migrations the schema lacks, with the privileges of the URL's role (on
    /// PostgreSQL, the schema's owner; the servers' role may only read and write rows). Touches no secret: the
    /// key-encryption key is not needed, and none is made.
    public static func migrateSchema(_ location: Location, logger: Logger) async throws -> Migration {
        // Migrations are statements only: nothing is sealed, so a key of the moment stands in for the ring.
        let box = try SecretBox(keyEncryptionKey: Bytes.random(count: 32))
        if !location.usesPostgres {
            try FileManager.default.createDirectory(
                at: location.dataDirectory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        let store = try await open(location, box: box, logger: logger, maxConnections: 2)
        do {
            let applied = try await store.migrateSchema()
            let state = try await store.schemaState()
            try await store.shutdown()
            var version = store.newestKnown
            if case .aheadCompatible(let unknown) = state { version = unknown.last ?? version }
            return Migration(
                applied: applied, version: version, backend: store.backend, newerThanBuild: version > store.newestKnown)
        } catch {
            try? await store.shutdown()
            throw error
        }
    }

    /// Opens and migrates the store; the key-encryption key comes from `ASSENT_KEK` or the data directory.
    public static func openStore(
        _ location: Location, environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger
    ) async throws -> SQLStore {
        // The directory holds the database and the key-encryption key: only the owner may enter it.
        try FileManager.default.createDirectory(
            at: location.dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let box = try SecretBox.load(dataDirectory: location.dataDirectory, environment: environment)
        let store = try await open(location, box: box, logger: logger)
        do {
            try await store.migrate()
        } catch {
            try? await store.shutdown()
            throw error
        }
        return store
    }

    /// What a first start created.
    public struct Prepared: Sendable {
        public var application: ApplicationRecord
        public var applicationCreated: Bool
        /// The first operator API key, created when the store had none. Shown once.
        public var bootstrapAPIKey: String?
        /// The path of the first admin account's one-time set-up link (on the server's base URL), made when the store
        /// had no operator account.
        public var firstAdminSetupPath: String? = nil
    }

    /// Makes sure there is an application (named `organisation`, else ``hostName(issuer:)``), at least one operator
    /// API key, and an admin who can set up their account (the first admin's set-up link, new on every start until
    /// an admin has set up).
    public static func prepare(_ environment: ServerEnvironment, organisation: String? = nil) async throws -> Prepared {
        // The audit key first: a server whose key no longer signs its newest checkpoint does not start.
        let services = Services(environment)
        _ = try await services.auditChain.signingKey()
        let (application, created) = try await services.applications.ensureDefault(
            named: organisation ?? hostName(issuer: environment.openID.configuredIssuer))
        // Every application's own key and secret are its version 1 (also for a database made before versions).
        for existing in try await environment.store.applications() {
            try await services.versions.ensureInitial(existing)
        }
        var bootstrapKey: String?
        if try await services.apiKeys.all().isEmpty {
            bootstrapKey = try await services.apiKeys.create(
                name: "bootstrap", scopes: [.all], actor: "system"
            ).key
        }
        return Prepared(
            application: application, applicationCreated: created, bootstrapAPIKey: bootstrapKey,
            firstAdminSetupPath: try await services.operators.ensureFirstAdmin())
    }

    /// The name a first application gets when the organisation named none: the host of the public URL
    /// (`--issuer`), else this machine's host name — what people recognise, rather than a placeholder.
    public static func hostName(issuer: String?, machine: String = ProcessInfo.processInfo.hostName) -> String {
        if let host = issuer.flatMap({ URLComponents(string: $0)?.host }), !host.isEmpty { return host }
        let name = machine.split(separator: ".").first.map(String.init) ?? ""
        return name.isEmpty || name == "localhost" ? "Assent" : name
    }
}
