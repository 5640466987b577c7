import AssentCrypto
import AssentModel
import Foundation
import SQLKit

/// Applications in SQL: their keys (the secret and the master private key sealed) and names.
extension SQLStore {
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
}
