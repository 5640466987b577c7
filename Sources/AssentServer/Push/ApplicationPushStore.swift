import AssentCrypto
import AssentModel
import Foundation
import SQLKit

/// One push service's credentials of one application: the operator's request as it was set (sealed in the database).
public struct ApplicationPushCredentialRecord: Sendable, Equatable {
    public var applicationId: String
    /// `apns`, `fcm` or `hms`.
    public var service: PushPlatform
    /// The request's JSON (``APNsCredentialsRequest``, ``FCMCredentialsRequest`` or ``HMSCredentialsRequest``).
    public var settings: Data
    public var updatedAt: Millis
}

/// Applications' own push credentials.
public protocol ApplicationPushStore: Sendable {
    /// Stores the credentials, replacing the application's earlier ones for that service.
    func putApplicationPushCredential(_ credential: ApplicationPushCredentialRecord) async throws
    /// The application's credentials, by service.
    func applicationPushCredentials(applicationId: String) async throws -> [ApplicationPushCredentialRecord]
    /// Whether any application has credentials of its own.
    func anyApplicationPushCredentials() async throws -> Bool
    /// Removes them; returns whether there were any.
    func deleteApplicationPushCredential(applicationId: String, service: PushPlatform) async throws -> Bool
}

extension Migrations {
    /// Version 26: each application's own APNs, FCM and HMS credentials, sealed.
    static func applicationPushV26(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS application_push_credentials (
                application_id TEXT NOT NULL REFERENCES applications(id),
                service TEXT NOT NULL,
                settings \(dialect.blob) NOT NULL,
                updated_at \(dialect.bigint) NOT NULL,
                PRIMARY KEY (application_id, service)
            )
            """
        ]
    }
}

extension SQLStore {
    public func putApplicationPushCredential(_ credential: ApplicationPushCredentialRecord) async throws {
        let sealed = try box.seal(
            credential.settings,
            context: SealedColumn.applicationPushSettings.context(credential.applicationId, credential.service.rawValue)
        )
        try await database.raw(
            """
            INSERT INTO application_push_credentials (application_id, service, settings, updated_at)
            VALUES (\(bind: credential.applicationId), \(bind: credential.service.rawValue), \(bind: sealed), \
            \(bind: credential.updatedAt))
            ON CONFLICT (application_id, service) DO UPDATE SET settings = excluded.settings, \
            updated_at = excluded.updated_at
            """
        ).run()
    }

    public func applicationPushCredentials(applicationId: String) async throws -> [ApplicationPushCredentialRecord] {
        try await database.raw(
            """
            SELECT * FROM application_push_credentials WHERE application_id = \(bind: applicationId) ORDER BY service
            """
        ).all().compactMap { row in
            guard let service = PushPlatform(rawValue: try row.decode(column: "service", as: String.self)) else {
                return nil
            }
            return ApplicationPushCredentialRecord(
                applicationId: applicationId, service: service,
                settings: try box.open(
                    try row.decode(column: "settings", as: Data.self),
                    context: SealedColumn.applicationPushSettings.context(applicationId, service.rawValue)),
                updatedAt: try row.decode(column: "updated_at", as: Int64.self))
        }
    }

    public func anyApplicationPushCredentials() async throws -> Bool {
        try await database.raw("SELECT 1 AS present FROM application_push_credentials LIMIT 1").first() != nil
    }

    public func deleteApplicationPushCredential(applicationId: String, service: PushPlatform) async throws -> Bool {
        !(try await database.raw(
            """
            DELETE FROM application_push_credentials \
            WHERE application_id = \(bind: applicationId) AND service = \(bind: service.rawValue) RETURNING service
            """
        ).all()).isEmpty
    }
}
