import AssentCrypto
import AssentModel
import Crypto
import Foundation

/// Operator API keys: `ak_` followed by 32 random bytes in Base64URL; only their SHA-256 is stored.
public struct APIKeyService: Sendable {
    /// The part of the store this sees.
    let store: any APIKeyStore & ApplicationStore
    let clock: WallClock
    let audit: Auditor

    /// Creates a key, for every application or (`applications`) some; the returned text is shown once and cannot be
    /// recovered.
    public func create(name: String, scopes: Set<APIScope>, applications: [String]? = nil, actor: String) async throws
        -> (APIKeyRecord, key: String)
    {
        guard let trimmed = InputText.displayName(name) else {
            throw AssentServerError.invalidRequest("An API key name has 1 to 100 characters, not only spaces.")
        }
        guard !scopes.isEmpty else { throw AssentServerError.invalidRequest("An API key needs at least one scope.") }
        if let applications {
            guard !applications.isEmpty else {
                throw AssentServerError.invalidRequest("Name at least one application, or none for every one.")
            }
            for id in applications where try await store.application(id: id) == nil {
                throw AssentServerError.notFound("No application has the id \(id).")
            }
        }
        let key = "ak_" + Base64URL.encode(Bytes.random(count: 32))
        let record = APIKeyRecord(
            id: UUID().uuidString.lowercased(), name: trimmed, keyHash: Self.hash(key), scopes: scopes,
            createdAt: clock.millis, applications: applications)
        try await store.insertAPIKey(record)
        await audit(
            .apiKeyCreated, actor: actor,
            "API key \(trimmed) created with scopes \(scopes.map(\.rawValue).sorted().joined(separator: " "))"
                + (applications.map { " for applications \($0.joined(separator: ", "))" } ?? "") + ".")
        return (record, key)
    }

    /// Every key, without the keys themselves.
    public func all() async throws -> [APIKeyRecord] { try await store.apiKeys() }

    /// The key with `id`, if it still exists.
    public func key(id: String) async throws -> APIKeyRecord? { try await all().first { $0.id == id } }

    /// Revokes the key `id`, or answers that there is none.
    public func revoke(id: String, actor: String) async throws {
        guard try await store.deleteAPIKey(id: id) else {
            throw AssentServerError.notFound("No API key has this id.")
        }
        await audit(.apiKeyRevoked, actor: actor, "API key \(id) revoked.")
    }

    /// The scopes named in a request, or a 400 naming the unknown one and those that exist.
    public static func scopes(_ names: [String]) throws -> Set<APIScope> {
        try Set(
            names.map { name in
                guard let scope = APIScope(rawValue: name) else {
                    throw AssentServerError.invalidRequest(
                        "Unknown scope \(name); known: \(APIScope.allCases.map(\.rawValue).joined(separator: ", ")).")
                }
                return scope
            })
    }

    /// The key record for a presented key, or `nil`.
    public func authenticate(_ key: String) async throws -> APIKeyRecord? {
        guard key.hasPrefix("ak_"), key.utf8.count <= 100 else { return nil }
        return try await store.apiKey(hash: Self.hash(key))
    }

    static func hash(_ key: String) -> Data { Data(SHA256.hash(data: Data(key.utf8))) }
}
