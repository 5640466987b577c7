import AssentCrypto
import AssentModel
import Foundation

/// The replay guard: values (nonces, JWT ids) that may be used once until they expire.
public protocol ReplayGuard: Sendable {
    /// Records `value` of `kind` as used until `expiresAt`; returns `false` if it was already recorded
    /// (a replayed nonce).
    func claimUnique(kind: String, value: String, expiresAt: Millis) async throws -> Bool
}
