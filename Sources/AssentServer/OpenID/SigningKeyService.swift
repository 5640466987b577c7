import AssentCrypto
import Foundation

/// The OpenID provider's signing keys: one ES256 and one RS256 key sign at a time; after a rotation the old keys
/// stay in the JWKS for ``OpenIDSettings/retiredKeyLifetime`` (never less than the token lifetime), so tokens they
/// signed still verify until they expire.
public struct SigningKeyService: Sendable {
    /// The part of the store this sees.
    let store: any OpenIDStore
    let clock: WallClock
    let audit: Auditor
    let openID: OpenIDSettings

    static let algorithms = ["ES256", "RS256"]

    /// Creates a signing key for each algorithm that has none.
    public func ensureKeys() async throws {
        let keys = try await store.signingKeys()
        for algorithm in Self.algorithms
        where !keys.contains(where: { $0.algorithm == algorithm && $0.retiredAt == nil }) {
            try await store.insertSigningKey(try newKey(algorithm))
        }
    }

    /// Creates new signing keys and retires the current ones; returns the new key ids.
    public func rotate(actor: String) async throws -> [String] {
        var created: [String] = []
        for algorithm in Self.algorithms {
            let key = try newKey(algorithm)
            try await store.insertSigningKey(key)
            try await store.retireSigningKeys(algorithm: algorithm, except: key.kid, at: key.createdAt)
            created.append(key.kid)
        }
        await audit(
            .openidKeysRotated, actor: actor, "Signing keys rotated; new key ids \(created.joined(separator: ", "))."
        )
        return created
    }

    /// The key that signs new tokens with `algorithm`.
    func signer(_ algorithm: String) async throws -> SigningKeyRecord {
        let keys = try await store.signingKeys()
        if let key = keys.first(where: { $0.algorithm == algorithm && $0.retiredAt == nil }) { return key }
        try await ensureKeys()
        guard let key = try await store.signingKeys().first(where: { $0.algorithm == algorithm })
        else { throw AssentServerError.internalError("No \(algorithm) signing key.") }
        return key
    }

    /// The published keys: every signing key and the retired ones still within their grace period. Keys are
    /// created here when there are none yet (`assent serve` creates them at start; a server built otherwise, as in
    /// the tests, on first use).
    public func jwks() async throws -> JWKSet {
        var keys = try await store.signingKeys()
        if Set(keys.filter { $0.retiredAt == nil }.map(\.algorithm)).count < Self.algorithms.count {
            try await ensureKeys()
            keys = try await store.signingKeys()
        }
        let cutoff = clock.millis - Millis(publishedAfterRetirement) * 1000
        return JWKSet(keys: try keys.filter { ($0.retiredAt ?? .max) >= cutoff }.map { try $0.jwk() })
    }

    /// Deletes keys whose grace period is over.
    func purge() async throws {
        try await store.deleteSigningKeys(
            retiredBefore: clock.millis - Millis(publishedAfterRetirement) * 1000)
    }

    private var publishedAfterRetirement: Int {
        max(openID.retiredKeyLifetime, openID.tokenLifetime)
    }

    private func newKey(_ algorithm: String) throws -> SigningKeyRecord {
        let material: SigningKeyRecord.Material =
            algorithm == "ES256" ? .es256(ECPrivateKey()) : .rs256(try RSAPrivateKey(bits: 2048))
        var key = SigningKeyRecord(kid: "", material: material, createdAt: clock.millis, retiredAt: nil)
        key.kid = try key.jwk().thumbprint
        return key
    }
}
