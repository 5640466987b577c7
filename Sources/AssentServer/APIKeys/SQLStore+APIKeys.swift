import AssentCrypto
import AssentModel
import Foundation
import SQLKit

/// Operator API keys in SQL: only their hashes, their scopes and the applications they are limited to.
extension SQLStore {
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
}
