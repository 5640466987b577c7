import AssentCrypto
import Foundation
import SQLKit

/// One version of an application: its own application key and secret (what an app build is configured with), and
/// whether devices using it are still served.
public struct ApplicationVersionRecord: Sendable, Equatable {
    public var id: String
    public var applicationId: String
    /// The operator's name for it, unique in the application (`1`, `2026.11`, `ios-5`).
    public var name: String
    public var applicationKey: String
    public var applicationSecret: String
    public var supported: Bool
    public var createdAt: Millis
}

/// Application versions.
public protocol ApplicationVersionStore: Sendable {
    /// Stores a version; a version with the same id already stored is kept as it is.
    func insertApplicationVersion(_ version: ApplicationVersionRecord) async throws
    func applicationVersions(applicationId: String) async throws -> [ApplicationVersionRecord]
    func applicationVersion(key: String) async throws -> ApplicationVersionRecord?
    /// Sets whether the version is served; returns whether it exists.
    func setApplicationVersionSupported(id: String, applicationId: String, supported: Bool) async throws -> Bool
}

extension Migrations {
    /// Version 22: application versions, each with its own key and secret (sealed) and a supported flag. Every
    /// application's own key and secret become its version `1` when the server starts.
    static func applicationVersionsV22(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS application_versions (
                id TEXT PRIMARY KEY,
                application_id TEXT NOT NULL REFERENCES applications(id),
                name TEXT NOT NULL,
                application_key TEXT NOT NULL UNIQUE,
                application_secret \(dialect.blob) NOT NULL,
                supported \(dialect.bigint) NOT NULL,
                created_at \(dialect.bigint) NOT NULL,
                UNIQUE (application_id, name)
            )
            """
        ]
    }
}

extension SQLStore {
    public func insertApplicationVersion(_ v: ApplicationVersionRecord) async throws {
        let secret = try box.seal(
            Data(v.applicationSecret.utf8), context: SealedColumn.applicationVersionSecret.context(v.id))
        try await database.raw(
            """
            INSERT INTO application_versions (id, application_id, name, application_key, application_secret, \
            supported, created_at)
            VALUES (\(bind: v.id), \(bind: v.applicationId), \(bind: v.name), \(bind: v.applicationKey), \
            \(bind: secret), \(bind: Int64(v.supported ? 1 : 0)), \(bind: v.createdAt))
            ON CONFLICT (id) DO NOTHING
            """
        ).run()
    }

    public func applicationVersions(applicationId: String) async throws -> [ApplicationVersionRecord] {
        try await database.raw(
            """
            SELECT * FROM application_versions WHERE application_id = \(bind: applicationId) ORDER BY created_at, name
            """
        ).all().map(decodeApplicationVersion)
    }

    public func applicationVersion(key: String) async throws -> ApplicationVersionRecord? {
        try await database.raw("SELECT * FROM application_versions WHERE application_key = \(bind: key)").first()
            .map(decodeApplicationVersion)
    }

    public func setApplicationVersionSupported(id: String, applicationId: String, supported: Bool) async throws
        -> Bool
    {
        !(try await database.raw(
            """
            UPDATE application_versions SET supported = \(bind: Int64(supported ? 1 : 0)) \
            WHERE id = \(bind: id) AND application_id = \(bind: applicationId) RETURNING id
            """
        ).all()).isEmpty
    }

    private func decodeApplicationVersion(_ row: any SQLRow) throws -> ApplicationVersionRecord {
        let id = try row.decode(column: "id", as: String.self)
        let secret = try box.open(
            try row.decode(column: "application_secret", as: Data.self),
            context: SealedColumn.applicationVersionSecret.context(id))
        return ApplicationVersionRecord(
            id: id, applicationId: try row.decode(column: "application_id", as: String.self),
            name: try row.decode(column: "name", as: String.self),
            applicationKey: try row.decode(column: "application_key", as: String.self),
            applicationSecret: String(decoding: secret, as: UTF8.self),
            supported: try row.decode(column: "supported", as: Int64.self) != 0,
            createdAt: try row.decode(column: "created_at", as: Int64.self))
    }
}
