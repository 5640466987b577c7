import AssentCrypto
import Foundation

/// Milliseconds since 1970, the one time unit of storage and the protocol.
public typealias Millis = Int64

extension Date {
    /// This date in milliseconds since 1970.
    public var millis: Millis { Millis((timeIntervalSince1970 * 1000).rounded(.down)) }

    /// The date `millis` milliseconds after 1970.
    public init(millis: Millis) { self.init(timeIntervalSince1970: Double(millis) / 1000) }
}

/// An application: the app (or family of apps) devices activate against, with its master server key pair.
public struct ApplicationRecord: Sendable, Equatable {
    public var id: String
    public var name: String
    /// Base64 of 16 random bytes; sent by devices in headers.
    public var applicationKey: String
    /// Base64 of 16 random bytes; bundled in the app, part of every signature.
    public var applicationSecret: String
    /// Signs activation-code QRs, offline operations and application-scope temporary keys.
    public var masterPrivateKey: ECPrivateKey
    public var createdAt: Millis

    public var masterPublicKey: ECPublicKey { masterPrivateKey.publicKey }

    public static func == (lhs: ApplicationRecord, rhs: ApplicationRecord) -> Bool {
        lhs.id == rhs.id && lhs.applicationKey == rhs.applicationKey
            && lhs.masterPrivateKey.scalar == rhs.masterPrivateKey.scalar
    }
}

/// How an activation becomes `ACTIVE` once the device finished its part.
public enum CommitMode: String, Sendable, Codable, CaseIterable {
    /// Immediately, when the device completes the key exchange.
    case auto
    /// When the operator commits it after comparing the fingerprint with the user.
    case manual
}

/// One device's activation: its keys, counter and lifecycle state.
public struct ActivationRecord: Sendable, Equatable {
    public var id: String
    public var applicationId: String
    public var userId: String
    public var state: ActivationState
    /// The activation code while it can still be used; cleared once a device used it.
    public var activationCode: String?
    public var codeExpiresAt: Millis
    public var commitMode: CommitMode
    public var activationName: String?
    public var platform: String?
    public var deviceInfo: String?
    public var extras: String?
    public var devicePublicKey: ECPublicKey?
    /// The personal server key pair (made at creation so the activation can sign before the device arrives).
    public var serverPrivateKey: ECPrivateKey
    /// `KEY_MASTER_SECRET`, known once the device sent its public key.
    public var masterSecret: Data?
    /// The hash-based counter `ctrData` the next signature must use (or be ahead of).
    public var counterData: HashCounter
    /// How many signatures were accepted, the numeric twin of ``counterData``.
    public var counter: Int64
    public var failedAttempts: Int
    public var maxFailedAttempts: Int
    /// Why the activation is blocked (`MAX_FAILED_ATTEMPTS`, or the operator's reason).
    public var blockedReason: String?
    /// Optimistic-concurrency version, bumped by every update.
    public var version: Int64
    public var createdAt: Millis
    public var updatedAt: Millis
    public var lastUsedAt: Millis?

    public var serverPublicKey: ECPublicKey { serverPrivateKey.publicKey }

    /// The five keys, once the device has exchanged keys.
    public func keys() throws -> ActivationKeys? {
        try masterSecret.map { try ActivationKeys(masterSecret: $0) }
    }

    /// The fingerprint both sides show, once the device has exchanged keys.
    public var fingerprint: String? {
        devicePublicKey.map {
            ActivationFingerprint.compute(devicePublicKey: $0, activationId: id, serverPublicKey: serverPublicKey)
        }
    }

    public static func == (lhs: ActivationRecord, rhs: ActivationRecord) -> Bool {
        lhs.id == rhs.id && lhs.version == rhs.version && lhs.state == rhs.state && lhs.counter == rhs.counter
            && lhs.failedAttempts == rhs.failedAttempts && lhs.counterData == rhs.counterData
    }
}

/// A MAC token of an activation.
public struct TokenRecord: Sendable, Equatable {
    public var id: String
    public var activationId: String
    public var secret: Data
    /// The factors the token was created with.
    public var signatureType: SignatureType
    public var createdAt: Millis
}

/// A short-lived ECIES recipient key from `/pa/v3/keystore/create`.
public struct TemporaryKeyRecord: Sendable {
    public var id: String
    public var applicationId: String
    /// Set for activation scope.
    public var activationId: String?
    public var privateKey: ECPrivateKey
    public var expiresAt: Millis
}

/// What an operator API key may do.
public enum APIScope: String, Sendable, Codable, CaseIterable {
    /// Read the application's keys and SDK configuration.
    case applicationRead = "application:read"
    /// Read activations.
    case activationsRead = "activations:read"
    /// Create, commit, block, unblock and remove activations.
    case activationsWrite = "activations:write"
    /// Read the audit trail.
    case auditRead = "audit:read"
    /// Create, list and revoke API keys.
    case apiKeysWrite = "api-keys:write"
    /// Everything.
    case all = "*"
}

/// An operator API key; only the SHA-256 of the key itself is stored.
public struct APIKeyRecord: Sendable, Equatable {
    public var id: String
    public var name: String
    public var keyHash: Data
    public var scopes: Set<APIScope>
    public var createdAt: Millis

    /// Whether the key may act with `scope`.
    public func allows(_ scope: APIScope) -> Bool { scopes.contains(.all) || scopes.contains(scope) }
}

/// One security-relevant event.
public struct AuditEvent: Sendable, Equatable, Codable {
    public var id: Int64?
    public var at: Millis
    /// e.g. `activation.created`, `signature.failed`.
    public var type: String
    public var activationId: String?
    public var userId: String?
    /// Who caused it: `device`, `operator:<key name>`, `system`.
    public var actor: String
    /// A sentence with details; never secrets.
    public var detail: String
}
