import AssentCrypto
import AssentModel
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
    /// The device's public key (uncompressed X9.63, checked when the device sent it), decoded by
    /// ``devicePublicKey()`` where it is used: signature checks, the most frequent reads, need no curve arithmetic.
    public var devicePublicKeyX963: Data?
    /// The scalar of the personal server key pair (made at creation so the activation can sign before the device
    /// arrives), decoded by ``serverPrivateKey()`` where it is used.
    public var serverPrivateKeyScalar: Data
    /// `KEY_MASTER_SECRET`, known once the device sent its public key.
    public var masterSecret: Data?
    /// The hash-based counter `ctrData` the next signature must use (or be ahead of).
    public var counterData: HashCounter
    /// How many signatures were accepted, the numeric twin of ``counterData``.
    public var counter: Int64
    /// The most recent counter values behind ``counterData`` (oldest first): those accepted signatures used and
    /// those the look-ahead skipped. A signature valid for one of them is a replay.
    public var usedCounters: [HashCounter] = []
    public var failedAttempts: Int
    public var maxFailedAttempts: Int
    /// Why the activation is blocked (`MAX_FAILED_ATTEMPTS`, or the operator's reason).
    public var blockedReason: String?
    /// Optimistic-concurrency version, bumped by every update.
    public var version: Int64
    public var createdAt: Millis
    public var updatedAt: Millis
    public var lastUsedAt: Millis?
    /// When the device last reported a PIN change (`nil`: the PIN set at activation).
    public var pinChangedAt: Millis? = nil

    /// Since when the current PIN is in use.
    public var pinSetAt: Millis { pinChangedAt ?? createdAt }

    /// The master secret as the store read it, sealed: an update that leaves the secret alone writes these bytes
    /// back instead of sealing it again. Set by the store only.
    var storedMasterSecret: (plain: Data, sealed: Data)?

    public func devicePublicKey() throws -> ECPublicKey? { try devicePublicKeyX963.map { try ECPublicKey(x963: $0) } }
    public func serverPrivateKey() throws -> ECPrivateKey { try ECPrivateKey(scalar: serverPrivateKeyScalar) }
    public func serverPublicKey() throws -> ECPublicKey { try serverPrivateKey().publicKey }

    /// Who acts when this activation signs.
    public var principal: DevicePrincipal {
        DevicePrincipal(activationId: id, applicationId: applicationId, userId: userId)
    }

    /// The five keys, once the device has exchanged keys.
    public func keys() throws -> ActivationKeys? {
        try masterSecret.map { try ActivationKeys(masterSecret: $0) }
    }

    /// The fingerprint both sides show, once the device has exchanged keys.
    public func fingerprint() throws -> String? {
        try devicePublicKey().map {
            ActivationFingerprint.compute(devicePublicKey: $0, activationId: id, serverPublicKey: try serverPublicKey())
        }
    }

    /// How a page names the device to a person: its name, else its platform, else the start of its id.
    /// How people tell their phones apart: the name given at activation (or the platform), and the id's start.
    var deviceLabel: String { "\(activationName ?? platform ?? "Device") (\(id.prefix(8)))" }

    public static func == (lhs: ActivationRecord, rhs: ActivationRecord) -> Bool {
        lhs.id == rhs.id && lhs.version == rhs.version && lhs.state == rhs.state && lhs.counter == rhs.counter
            && lhs.failedAttempts == rhs.failedAttempts && lhs.counterData == rhs.counterData
    }
}

/// The activation a request comes from, as far as operations care: which user of which application.
public struct DevicePrincipal: Sendable, Equatable {
    public var activationId: String
    public var applicationId: String
    public var userId: String
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
    /// Change the application's display name.
    case applicationWrite = "application:write"
    /// Read activations.
    case activationsRead = "activations:read"
    /// Create, commit, block, unblock and remove activations.
    case activationsWrite = "activations:write"
    /// Read operations and their offline and proximity codes.
    case operationsRead = "operations:read"
    /// Create and cancel operations, verify offline codes, manage operation templates.
    case operationsWrite = "operations:write"
    /// Read the audit trail.
    case auditRead = "audit:read"
    /// Create, list and revoke API keys.
    case apiKeysWrite = "api-keys:write"
    /// Create, list, disable and reset operator accounts.
    case operatorsWrite = "operators:write"
    /// List OpenID clients.
    case clientsRead = "clients:read"
    /// Register and remove OpenID clients, rotate the provider's signing keys.
    case clientsWrite = "clients:write"
    /// Read login accounts, their factors, remembered devices and the second-factor policy.
    case tfaRead = "tfa:read"
    /// Create and remove login accounts, start second factors, revoke remembered devices, set the policy.
    case tfaWrite = "tfa:write"
    /// Check people's sign-ins for a VPN or a host (FreeRADIUS, PAM): password and second factor.
    case accessCheck = "access:check"
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
    /// The applications the key may work with; `nil`: every one.
    public var applications: [String]? = nil

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
    /// The application it is about; `nil` for the organisation's own actions (operators, keys, server settings).
    public var applicationId: String? = nil
}

/// An operation a user approves or rejects on an activated device.
public struct OperationRecord: Sendable, Equatable {
    public var id: String
    public var applicationId: String
    /// `nil` until a device claims a non-personalised operation.
    public var userId: String?
    public var name: String
    /// The operation data string the approval signs.
    public var data: String
    public var status: OperationStatus
    public var statusReason: String?
    /// Texts, attributes and UI hints (``OperationContent``).
    public var content: OperationContent
    public var allowedSignatureType: AllowedSignatureType
    public var failedAttempts: Int
    public var maxFailedAttempts: Int
    /// The proximity check's TOTP seed, when the operation has one.
    public var proximitySeed: Data?
    /// The nonce of the latest offline QR code (Base64), which the typed approval code must be computed with.
    public var offlineNonce: String?
    /// The TOTP line of the latest offline QR code, if it had one.
    public var offlineTOTP: String?
    /// The activation that approved, rejected or failed it.
    public var activationId: String?
    /// The signature type (factors) of the approval, e.g. `possession_knowledge`.
    public var approvedWith: String? = nil
    /// The app's mobile context, signed with the approval (Base64).
    public var mobileContext: String? = nil
    /// `choose` or `type` when the approval must carry ``matchingNumber``.
    public var numberMatching: String? = nil
    /// The number shown where the person started (10–99).
    public var matchingNumber: Int? = nil
    /// What the phone offers for `choose`: three numbers, one of them ``matchingNumber``.
    public var numberChoices: [Int] = []
    /// The only activations that see it (a push sign-in: the devices opted in to approve sign-ins); `nil`: every
    /// device of its user.
    public var devices: [String]? = nil
    public var template: String?
    public var createdAt: Millis
    public var expiresAt: Millis
    public var updatedAt: Millis
    public var finishedAt: Millis?
    /// Who ended it when that is not the usual actor of its status (a cancellation: `operator:<name>`,
    /// `api-key:<name>`, `user`); the audit event of the change names it.
    public var statusActor: String? = nil
    /// Optimistic-concurrency version, bumped by every update.
    public var version: Int64

    /// Ends the operation in `status` (only ever from `PENDING`).
    mutating func finish(_ status: OperationStatus, reason: String?, activationId: String?, at now: Millis) {
        precondition(self.status == .pending && status != .pending)
        self.status = status
        statusReason = reason
        if let activationId { self.activationId = activationId }
        finishedAt = now
    }

    /// Moves a pending operation past its expiry to `EXPIRED`; returns whether it did.
    mutating func expireIfDue(now: Millis) -> Bool {
        guard status == .pending, now >= expiresAt else { return false }
        finish(.expired, reason: nil, activationId: nil, at: now)
        return true
    }
}

/// The presentational part of an operation, stored as one JSON document.
public struct OperationContent: Codable, Sendable, Equatable {
    /// The language used when `Accept-Language` matches none.
    public var defaultLanguage: String
    /// The form per language tag.
    public var formData: [String: FormData]
    public var ui: OperationUI?

    /// The form for the best match of an `Accept-Language` header.
    public func form(acceptLanguage: String?) -> FormData { localized(acceptLanguage: acceptLanguage).form }

    /// The texts in the best language for `acceptLanguage`, with that language's tag (as the operation names it).
    public func localized(acceptLanguage: String?) -> (language: String, form: FormData) {
        for tag in Self.languages(acceptLanguage) {
            if let form = formData[tag] { return (tag, form) }
            if let primary = tag.split(separator: "-").first.map(String.init), let form = formData[primary] {
                return (primary, form)
            }
        }
        if let form = formData[defaultLanguage] { return (defaultLanguage, form) }
        if let (language, form) = formData.min(by: { $0.key < $1.key }) { return (language, form) }
        return (defaultLanguage, FormData(title: "", message: ""))
    }

    /// The language of the pages a person reads an operation on: its texts are taken in it where the operation has
    /// them, so a page does not mix languages; otherwise in the operation's default language.
    public static let pageLanguage = "en"

    /// The language tags of an `Accept-Language` header, most preferred first (lower-cased, `*` and q=0 dropped).
    static func languages(_ header: String?) -> [String] {
        guard let header else { return [] }
        let ranked = header.split(separator: ",").enumerated().compactMap { index, part -> (String, Double, Int)? in
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let tag = pieces.first?.lowercased(), !tag.isEmpty, tag != "*" else { return nil }
            var quality = 1.0
            for piece in pieces.dropFirst() where piece.hasPrefix("q=") {
                quality = Double(piece.dropFirst(2)) ?? 0
            }
            return quality > 0 ? (tag, quality, index) : nil
        }
        return ranked.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.2 < $1.2 }.map(\.0)
    }
}

/// A device's push token (or Web Push endpoint and keys) for one activation. The token is sealed at rest and never
/// logged.
public struct PushRegistrationRecord: Sendable, Equatable {
    public var activationId: String
    public var platform: PushPlatform
    /// APNs gateway of the token (`nil` for FCM and HMS).
    public var environment: PushEnvironment?
    public var token: String
    /// The device's `Accept-Language` when it registered: the language of its notifications.
    public var language: String?
    /// When the token was registered; also identifies this registration (see
    /// ``AssentStore/deletePushRegistration(activationId:registeredAt:)``).
    public var registeredAt: Millis
    /// Web Push only: the subscription's keys (sealed at rest with the endpoint).
    public var webPush: WebPushEncryption.Subscription?

    public init(
        activationId: String, platform: PushPlatform, environment: PushEnvironment?, token: String,
        language: String?, registeredAt: Millis, webPush: WebPushEncryption.Subscription? = nil
    ) {
        self.activationId = activationId
        self.platform = platform
        self.environment = environment
        self.token = token
        self.language = language
        self.registeredAt = registeredAt
        self.webPush = webPush
    }
}

/// One entry of the device event log: an operation of a user was created or finished.
public struct DeviceEventRecord: Sendable, Equatable {
    public var id: Int64
    public var applicationId: String
    public var userId: String
    /// `operation.created` or `operation.finished`.
    public var type: String
    public var operationId: String
    public var status: OperationStatus
    public var at: Millis
}
