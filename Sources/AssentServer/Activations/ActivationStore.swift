import AssentCrypto
import AssentModel
import Foundation

/// Activations, their MAC tokens and the temporary keys of their encrypted requests.
public protocol ActivationStore: Sendable {
    func insertActivation(_ activation: ActivationRecord) async throws
    func activation(id: String) async throws -> ActivationRecord?
    func activation(code: String, applicationId: String) async throws -> ActivationRecord?
    func activations(userId: String) async throws -> [ActivationRecord]
    /// Writes `activation` (with its version bumped) if the stored version is still `expectedVersion`.
    /// Returns `false` when another request changed it first.
    func updateActivation(_ activation: ActivationRecord, expectedVersion: Int64) async throws -> Bool

    func insertToken(_ token: TokenRecord) async throws
    func token(id: String) async throws -> TokenRecord?
    /// The token with its activation's identity and state, in one read.
    func tokenWithActivation(id: String) async throws -> (TokenRecord, DevicePrincipal, ActivationState)?
    /// Records a use of token `tokenId` (`nonce`: its nonce, single use until `expiresAt`) if the token still exists
    /// and its activation is `ACTIVE`, in one statement: a token removed or an activation blocked before it refuses
    /// the use. With `pendingOf`, also reads that user's newest pending operations (up to 100, newest first) — on
    /// PostgreSQL in the same statement, so a list is one round trip; they are empty unless the use is claimed.
    func claimTokenUse(tokenId: String, nonce: String, expiresAt: Millis, pendingOf userId: String?) async throws
        -> (TokenUse, [OperationRecord])
    /// Deletes the token if it belongs to the activation; returns whether one was deleted.
    func deleteToken(id: String, activationId: String) async throws -> Bool

    func insertTemporaryKey(_ key: TemporaryKeyRecord) async throws
    func temporaryKey(id: String) async throws -> TemporaryKeyRecord?

    /// Up to `limit` activations still `CREATED` whose code expired unused at or before `now`.
    func activationsWithExpiredCode(now: Millis, limit: Int) async throws -> [String]
}

/// What recording a MAC token's use found.
public enum TokenUse: Sendable, Equatable {
    /// The nonce was new and is now used.
    case claimed
    /// The nonce was used before.
    case replayed
    /// The token is gone, or its activation is not `ACTIVE`.
    case refused
}
