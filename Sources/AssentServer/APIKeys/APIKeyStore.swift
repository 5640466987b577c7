import AssentCrypto
import AssentModel
import Foundation

/// Operator API keys (only their hashes).
public protocol APIKeyStore: Sendable {
    func insertAPIKey(_ key: APIKeyRecord) async throws
    func apiKey(hash: Data) async throws -> APIKeyRecord?
    func apiKeys() async throws -> [APIKeyRecord]
    func deleteAPIKey(id: String) async throws -> Bool
}
