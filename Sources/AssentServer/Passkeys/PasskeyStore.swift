import AssentModel
import Foundation

/// A registered WebAuthn credential. Its factor row (`tfa_factors`, provider `passkey`, destination = the name)
/// makes it one of the account's second factors; this row holds what verifies it.
public struct PasskeyRecord: Sendable, Equatable {
    /// The factor's id.
    public var factorId: String
    public var applicationId: String
    public var userId: String
    public var credentialId: Data
    /// The COSE_Key bytes.
    public var publicKey: Data
    /// The COSE algorithm.
    public var algorithm: Int
    public var signCount: Int64
    public var aaguid: Data
    public var transports: [String]
    /// Backup eligible (a synced passkey) and backed up now.
    public var multiDevice: Bool
    public var backedUp: Bool
    /// The attestation format the registration sent, and whether its chain led to a configured root.
    public var attestationFormat: String
    public var attested: Bool
    public var createdAt: Millis
    public var lastUsedAt: Millis?
    /// When a signature counter went backwards (a possible copy); a flagged credential is refused.
    public var flaggedAt: Millis?
}

/// A challenge handed to a browser for one ceremony: stored as its SHA-256, used once, for 5 minutes.
public struct PasskeyChallengeRecord: Sendable, Equatable {
    public enum Purpose: String, Sendable {
        /// A registration (in a TFA registration flow or on the account page).
        case register
        /// A second factor of a TFA flow.
        case verify
        /// A passwordless sign-in.
        case signIn = "sign-in"
        /// A push sign-in approved in a subscribed browser (bound to its operation).
        case approve
    }

    public var challengeHash: Data
    public var applicationId: String
    /// The account the ceremony is for (absent for a passwordless sign-in, whose credential names it).
    public var userId: String?
    public var purpose: Purpose
    /// The TFA challenge (assertion) this ceremony belongs to.
    public var assertionHash: Data?
    public var userVerification: Bool
    public var createdAt: Millis
    public var expiresAt: Millis
}

/// What passkeys persist.
public protocol PasskeyStore: Sendable {
    /// The account's user handle, creating `proposed` as it when it has none (one handle per account, so that
    /// an authenticator keeps one credential per account and site).
    func passkeyUserHandle(applicationId: String, userId: String, proposed: Data) async throws -> Data
    /// The account a user handle names.
    func passkeyUser(applicationId: String, handle: Data) async throws -> String?
    /// Stores an active passkey factor and its credential in one commit; `false` when the application already has
    /// a credential with this id.
    func insertPasskey(_ passkey: PasskeyRecord, factor: TFAFactorRecord) async throws -> Bool
    func passkey(applicationId: String, credentialId: Data) async throws -> PasskeyRecord?
    func passkey(factorId: String) async throws -> PasskeyRecord?
    /// The account's passkeys, oldest first.
    func passkeys(applicationId: String, userId: String) async throws -> [PasskeyRecord]
    /// Records a verified use if the counter is still `expected` (two uses of one response cannot both win).
    func recordPasskeyUse(factorId: String, expected: Int64, signCount: Int64, backedUp: Bool, at now: Millis)
        async throws -> Bool
    /// Renames the account's passkey (its factor's destination); `false` when it has no such passkey.
    func renamePasskey(factorId: String, applicationId: String, userId: String, name: String) async throws -> Bool
    /// Flags a credential whose counter went backwards.
    func flagPasskey(factorId: String, at now: Millis) async throws
    func insertPasskeyChallenge(_ challenge: PasskeyChallengeRecord) async throws
    /// Takes (deletes) an unexpired challenge: only one caller gets it.
    func takePasskeyChallenge(challengeHash: Data, at now: Millis) async throws -> PasskeyChallengeRecord?
    /// Deletes challenges that expired before `before`.
    func purgePasskeyChallenges(before: Millis) async throws
}
