import AssentModel
import Foundation

/// A login account of an application: its password hash (absent when the relying party checks the first factor).
public struct TFAAccountRecord: Sendable, Equatable {
    public var applicationId: String
    public var userId: String
    /// A ``PasswordHasher`` string (`scrypt$…`).
    public var passwordHash: String?
    public var createdAt: Millis
    /// The name people know the account's owner by (`name` in Sign in with Assent).
    public var displayName: String? = nil
    /// When an operator disabled the account: no sign-in until it is enabled again.
    public var disabledAt: Millis? = nil
    /// The language the owner chose for their pages and mail (``Languages/supported``); `nil` follows the browser.
    public var language: String? = nil
}

/// A second factor of an account. A TOTP secret is sealed at rest; e-mail addresses and phone numbers are stored
/// as given.
public struct TFAFactorRecord: Sendable, Equatable {
    public enum State: String, Sendable {
        /// Registered in a flow that has not verified it yet.
        case pending
        case active
    }

    public var id: String
    public var applicationId: String
    public var userId: String
    public var provider: TFAProvider
    public var state: State
    /// The e-mail address or phone number.
    public var destination: String?
    /// The TOTP secret.
    public var secret: Data?
    /// The newest TOTP time step accepted (a code of it or an older step is a replay).
    public var lastStep: Int64?
    /// How the last code went to a phone (`sms` or `voice`).
    public var lastMethod: String?
    public var createdAt: Millis
    public var lastVerifiedAt: Millis?
}

/// A login a second factor interrupted; its id is the `regToken`'s `jti`.
public struct TFAFlowRecord: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// The account has factors: one of them must pass.
        case verification
        /// The account has none: it registers one.
        case registration
    }

    public var id: String
    public var applicationId: String
    public var userId: String
    public var kind: Kind
    /// RFC 8176 methods of the first factor (`pwd`, or none when the relying party checked it).
    public var firstFactor: String?
    public var createdAt: Millis
    public var expiresAt: Millis
    public var finishedAt: Millis?
}

/// One provider's part of a flow (the seed's `gigyaAssertion`; only its SHA-256 is stored): the factor it works
/// on, the tries left, and once passed the hash of the proof (`providerAssertion`) that finalizes the flow.
public struct TFAChallengeRecord: Sendable, Equatable {
    public var assertionHash: Data
    public var flowId: String
    public var provider: TFAProvider
    public var mode: TFAMode
    public var factorId: String?
    public var attemptsLeft: Int
    public var createdAt: Millis
    public var expiresAt: Millis
    public var passedAt: Millis?
    public var proofHash: Data?
    /// The operation a push challenge waits on.
    public var operationId: String?
}

/// A remembered browser or app: the device token's `jti`.
public struct RememberedDeviceRecord: Sendable, Equatable {
    public var id: String
    public var applicationId: String
    public var userId: String
    public var createdAt: Millis
    public var expiresAt: Millis
    public var lastUsedAt: Millis?
    public var revokedAt: Millis?
}

/// A verification code sent by e-mail, SMS or voice (the seed's `phvToken` names it; only its SHA-256 is stored).
/// The code is sealed at rest; the outbox message that delivers it names the row, never the code.
public struct TFACodeRecord: Sendable, Equatable {
    public var id: String
    public var tokenHash: Data
    /// The challenge (assertion) it belongs to.
    public var assertionHash: Data
    /// The e-mail or phone factor it goes to.
    public var factorId: String
    /// `email`, `sms` or `voice`.
    public var channel: String
    public var code: String
    public var lang: String
    public var attemptsLeft: Int
    public var createdAt: Millis
    public var expiresAt: Millis
}

/// What two-factor login persists, in its own tables.
public protocol TFAStore: Sendable {
    /// Inserts the account; `false` when the application already has one with this user id.
    func insertTFAAccount(_ account: TFAAccountRecord) async throws -> Bool
    func tfaAccount(applicationId: String, userId: String) async throws -> TFAAccountRecord?
    /// Sets (or, with `nil`, clears) the account's display name; `false` when there is no such account.
    func setTFAAccountName(applicationId: String, userId: String, name: String?) async throws -> Bool
    /// Disables the account at `disabledAt`, or enables it with `nil`; whether the account exists.
    func setTFAAccountDisabled(applicationId: String, userId: String, disabledAt: Millis?) async throws -> Bool
    /// Sets (or with `nil` clears) the language the account's owner chose; `false` when there is no such account.
    func setTFAAccountLanguage(applicationId: String, userId: String, language: String?) async throws -> Bool
    /// Replaces the account's password hash; `false` when there is no such account.
    func setTFAPassword(applicationId: String, userId: String, hash: String) async throws -> Bool
    /// Deletes the account with its factors and remembered devices; returns whether it existed.
    func deleteTFAAccount(applicationId: String, userId: String) async throws -> Bool

    func insertTFAFactor(_ factor: TFAFactorRecord) async throws
    func tfaFactor(id: String) async throws -> TFAFactorRecord?
    /// The account's factors, oldest first.
    func tfaFactors(applicationId: String, userId: String) async throws -> [TFAFactorRecord]
    /// Makes a pending factor active and deletes the account's other factors of `replacing` (one TOTP secret per
    /// account); returns whether it was pending.
    func activateTFAFactor(id: String, replacing: TFAProvider?, at now: Millis) async throws -> Bool
    /// Records `step` as the factor's newest accepted TOTP step if it is newer than the recorded one; `false` for
    /// a replay.
    func claimTOTPStep(factorId: String, step: Int64, at now: Millis) async throws -> Bool

    func insertTFAFlow(_ flow: TFAFlowRecord) async throws
    func tfaFlow(id: String) async throws -> TFAFlowRecord?
    /// Marks the open, unexpired flow finished; `false` when it already was (a replayed `regToken`) or expired.
    func finishTFAFlow(id: String, at now: Millis) async throws -> Bool

    func insertTFAChallenge(_ challenge: TFAChallengeRecord) async throws
    func tfaChallenge(assertionHash: Data) async throws -> TFAChallengeRecord?
    /// Takes one try of an unpassed, unexpired challenge before a code is checked; returns the tries left after
    /// it, or `nil` when none was left (so parallel guesses cannot share one try).
    func takeTFAChallengeAttempt(assertionHash: Data, at now: Millis) async throws -> Int?
    /// Names the factor a challenge works on (a TOTP secret it registered).
    func setTFAChallengeFactor(assertionHash: Data, factorId: String) async throws
    /// Names the operation a push challenge waits on.
    func setTFAChallengeOperation(assertionHash: Data, operationId: String) async throws
    /// Marks the challenge passed with the proof's hash unless it already passed; returns whether this call did.
    func passTFAChallenge(assertionHash: Data, proofHash: Data, at now: Millis) async throws -> Bool

    /// Stores a code; the same statement queues its delivery in the outbox (channel `email` or `phone`).
    func insertTFACode(_ code: TFACodeRecord) async throws
    func tfaCode(id: String) async throws -> TFACodeRecord?
    func tfaCode(tokenHash: Data) async throws -> TFACodeRecord?
    /// Takes one try of an unexpired code before it is compared; the tries left after it, or `nil` when none was.
    func takeTFACodeAttempt(tokenHash: Data, at now: Millis) async throws -> Int?
    /// Records how the factor's latest code went out.
    func setTFAFactorMethod(id: String, method: String) async throws
    /// Records that an active factor was just verified (its `lastVerification`).
    func markTFAFactorVerified(id: String, at now: Millis) async throws
    /// Deletes a factor of the account; returns whether it existed.
    func deleteTFAFactor(id: String, applicationId: String, userId: String) async throws -> Bool

    func tfaPolicy(applicationId: String) async throws -> TFAPolicy?
    func putTFAPolicy(applicationId: String, _ policy: TFAPolicy) async throws

    func insertRememberedDevice(_ device: RememberedDeviceRecord) async throws
    func rememberedDevice(id: String) async throws -> RememberedDeviceRecord?
    /// The user's remembered devices, newest first.
    func rememberedDevices(applicationId: String, userId: String) async throws -> [RememberedDeviceRecord]
    /// Revokes the device unless it already was; returns whether this call did.
    func revokeRememberedDevice(id: String, at now: Millis) async throws -> Bool
    func touchRememberedDevice(id: String, at now: Millis) async throws

    /// Deletes flows, challenges and pending factors that expired before `before`, and remembered devices that
    /// expired before it.
    func purgeTFA(before: Millis) async throws
}
