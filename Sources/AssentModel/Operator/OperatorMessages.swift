import Foundation

/// `GET /api/v1/application`.
public struct ApplicationInfo: Codable, Sendable, Equatable {
    public var applicationId: String
    public var name: String
    public var applicationKey: String
    public var applicationSecret: String
    /// Base64 of the master server public key (X9.63, uncompressed).
    public var masterServerPublicKey: String
    /// The opaque string an app or the CLI token is configured with.
    public var sdkConfiguration: String

    public init(
        applicationId: String, name: String, applicationKey: String, applicationSecret: String,
        masterServerPublicKey: String, sdkConfiguration: String
    ) {
        self.applicationId = applicationId
        self.name = name
        self.applicationKey = applicationKey
        self.applicationSecret = applicationSecret
        self.masterServerPublicKey = masterServerPublicKey
        self.sdkConfiguration = sdkConfiguration
    }
}

/// `PATCH /api/v1/application` request: the display name people see (pages, the phone's requests, the
/// authenticator app's issuer).
public struct UpdateApplicationRequest: Codable, Sendable {
    public var name: String

    public init(name: String) { self.name = name }
}

/// `POST /api/v1/applications` request: the new application's display name.
public struct CreateApplicationRequest: Codable, Sendable {
    public var name: String

    public init(name: String) { self.name = name }
}

/// `POST /api/v1/activations` request.
public struct CreateActivationRequest: Codable, Sendable {
    public var userId: String
    /// `auto` (default) or `manual`.
    public var commitMode: String?

    public init(userId: String, commitMode: String?) {
        self.userId = userId
        self.commitMode = commitMode
    }
}

/// `POST /api/v1/activations` response (201).
public struct CreateActivationResponse: Codable, Sendable, Equatable {
    public var activationId: String
    public var activationCode: String
    /// Base64 of the DER signature of the code by the master server key.
    public var activationSignature: String
    /// `CODE#signature`, the text to show as a QR code.
    public var activationQRCode: String
    public var expiresAt: Date

    public init(
        activationId: String, activationCode: String, activationSignature: String, activationQRCode: String,
        expiresAt: Date
    ) {
        self.activationId = activationId
        self.activationCode = activationCode
        self.activationSignature = activationSignature
        self.activationQRCode = activationQRCode
        self.expiresAt = expiresAt
    }
}

/// An activation as the operator sees it.
public struct ActivationInfo: Codable, Sendable, Equatable {
    public var activationId: String
    public var userId: String
    /// `CREATED`, `PENDING_COMMIT`, `ACTIVE`, `BLOCKED` or `REMOVED`.
    public var status: String
    public var commitMode: String
    public var failedAttempts: Int
    public var maxFailedAttempts: Int
    public var blockedReason: String?
    public var platform: String?
    public var deviceInfo: String?
    public var activationName: String?
    /// The 8-digit fingerprint to compare with the device, once it exchanged keys.
    public var fingerprint: String?
    public var createdAt: Date
    public var lastUsedAt: Date?
    /// The device's push registration, if it registered a push token.
    public var push: PushRegistrationInfo?

    public init(
        activationId: String, userId: String, status: String, commitMode: String, failedAttempts: Int,
        maxFailedAttempts: Int, blockedReason: String?, platform: String?, deviceInfo: String?,
        activationName: String?, fingerprint: String?, createdAt: Date, lastUsedAt: Date?
    ) {
        self.activationId = activationId
        self.userId = userId
        self.status = status
        self.commitMode = commitMode
        self.failedAttempts = failedAttempts
        self.maxFailedAttempts = maxFailedAttempts
        self.blockedReason = blockedReason
        self.platform = platform
        self.deviceInfo = deviceInfo
        self.activationName = activationName
        self.fingerprint = fingerprint
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}

/// An activation's push registration as the operator sees it: the service and when, never the token.
public struct PushRegistrationInfo: Codable, Sendable, Equatable {
    /// `apns`, `fcm`, `hms` or `webpush`.
    public var platform: String
    /// `development` or `production` (APNs only).
    public var environment: String?
    public var registeredAt: Date

    public init(platform: String, environment: String?, registeredAt: Date) {
        self.platform = platform
        self.environment = environment
        self.registeredAt = registeredAt
    }
}

/// One push attempt in the delivery trace: which service, what it answered, what became of the notification.
public struct PushDeliveryInfo: Codable, Sendable, Equatable {
    public var activationId: String
    public var operationId: String
    /// `operation.created` or `operation.finished`.
    public var event: String
    /// `apns`, `fcm`, `hms` or `webpush`.
    public var service: String
    /// `delivered`, `unregistered` (the service said the token is dead; the registration was removed), `retry`
    /// or `failed`.
    public var outcome: String
    /// The HTTP status the service answered, when it answered.
    public var httpStatus: Int?
    /// The service's reason and what was done.
    public var reason: String?
    public var latencyMillis: Int64
    public var at: Date

    public init(
        activationId: String, operationId: String, event: String, service: String, outcome: String,
        httpStatus: Int?, reason: String?, latencyMillis: Int64, at: Date
    ) {
        self.activationId = activationId
        self.operationId = operationId
        self.event = event
        self.service = service
        self.outcome = outcome
        self.httpStatus = httpStatus
        self.reason = reason
        self.latencyMillis = latencyMillis
        self.at = at
    }
}

/// `GET /api/v1/activations/{id}/push-deliveries` and `GET /api/v1/operations/{id}/push-deliveries`: the newest
/// attempts first.
public struct PushDeliveryList: Codable, Sendable, Equatable {
    public var deliveries: [PushDeliveryInfo]
    public init(deliveries: [PushDeliveryInfo]) { self.deliveries = deliveries }
}

/// `GET /api/v1/users/{userId}/activations`.
public struct ActivationList: Codable, Sendable, Equatable {
    public var activations: [ActivationInfo]
    public init(activations: [ActivationInfo]) { self.activations = activations }
}

/// `POST /api/v1/activations/{id}/block` request (optional body).
public struct BlockActivationRequest: Codable, Sendable {
    public var reason: String?
    public init(reason: String?) { self.reason = reason }
}

/// One audit event.
public struct AuditEventInfo: Codable, Sendable, Equatable {
    public var id: Int64
    public var at: Date
    public var type: String
    public var activationId: String?
    public var userId: String?
    public var actor: String
    public var detail: String
    /// The application the event is about; absent for the organisation's own actions (operators, API keys,
    /// signing keys, console sign-ins) and for events written before events named one.
    public var applicationId: String?

    public init(
        id: Int64, at: Date, type: String, activationId: String?, userId: String?, actor: String, detail: String,
        applicationId: String? = nil
    ) {
        self.applicationId = applicationId
        self.id = id
        self.at = at
        self.type = type
        self.activationId = activationId
        self.userId = userId
        self.actor = actor
        self.detail = detail
    }
}

/// `GET /api/v1/audit`.
public struct AuditList: Codable, Sendable, Equatable {
    public var events: [AuditEventInfo]
    public init(events: [AuditEventInfo]) { self.events = events }
}

/// `POST /api/v1/api-keys` request.
public struct CreateAPIKeyRequest: Codable, Sendable {
    public var name: String
    /// Scopes such as `activations:read`; `*` for all. Defaults to all.
    public var scopes: [String]?
    /// The application ids the key may work with; absent: every one.
    public var applications: [String]?
    public init(name: String, scopes: [String]?, applications: [String]? = nil) {
        self.name = name
        self.scopes = scopes
        self.applications = applications
    }
}

/// An API key as listed (never the key itself).
public struct APIKeyInfo: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public var scopes: [String]
    public var createdAt: Date
    /// The applications the key may work with; absent: every one.
    public var applications: [String]?
    public init(id: String, name: String, scopes: [String], createdAt: Date, applications: [String]? = nil) {
        self.id = id
        self.name = name
        self.scopes = scopes
        self.createdAt = createdAt
        self.applications = applications
    }
}

/// `POST /api/v1/api-keys` response: the key, shown once.
public struct CreateAPIKeyResponse: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public var scopes: [String]
    public var apiKey: String
    /// The applications the key may work with; absent: every one.
    public var applications: [String]?
    public init(id: String, name: String, scopes: [String], apiKey: String, applications: [String]? = nil) {
        self.id = id
        self.name = name
        self.scopes = scopes
        self.apiKey = apiKey
        self.applications = applications
    }
}

/// `GET /api/v1/api-keys`.
public struct APIKeyList: Codable, Sendable, Equatable {
    public var apiKeys: [APIKeyInfo]
    public init(apiKeys: [APIKeyInfo]) { self.apiKeys = apiKeys }
}

/// The operator API's error body.
public struct OperatorError: Codable, Sendable, Equatable, Error {
    public var code: String
    public var message: String
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}

/// JSON coders with the operator API's conventions (ISO 8601 dates).
public enum OperatorJSON {
    /// An encoder with ISO 8601 dates, sorted keys and slashes left as they are.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        // URLs stay as people copy them (`https://…`, not `https:\/\/…`).
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// A decoder with ISO 8601 dates.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

/// `GET /api/v1/audit/chain`: the tamper-evident audit chain's state.
public struct AuditChainInfo: Codable, Sendable, Equatable {
    /// The newest sealed row (`seq`); `nil` before the first.
    public var sealedThrough: Int64?
    /// Rows written and not sealed yet (the sealer links them within a second or so).
    public var unsealed: Int
    public var lastCheckpointSeq: Int64?
    public var lastCheckpointAt: Date?
    /// The oldest row still stored (older ones were pruned behind a checkpoint).
    public var firstSeq: Int64?
    /// How many of the newest rows were just verified against the audit key (from the checkpoint before the last).
    public var verified: Int?
    /// Where that verification failed, if it did.
    public var problem: String?
    /// The first 16 hex digits of SHA-256 of the audit public key (X9.63), to compare with the key file's.
    public var keyFingerprint: String

    public init(
        sealedThrough: Int64?, unsealed: Int, lastCheckpointSeq: Int64?, lastCheckpointAt: Date?, firstSeq: Int64?,
        verified: Int?, problem: String?, keyFingerprint: String
    ) {
        self.sealedThrough = sealedThrough
        self.unsealed = unsealed
        self.lastCheckpointSeq = lastCheckpointSeq
        self.lastCheckpointAt = lastCheckpointAt
        self.firstSeq = firstSeq
        self.verified = verified
        self.problem = problem
        self.keyFingerprint = keyFingerprint
    }
}

/// `GET /api/v1/audit/key`: the key audit checkpoints are signed with.
public struct AuditKeyInfo: Codable, Sendable, Equatable {
    /// `BEGIN PUBLIC KEY` PEM: what `assent audit verify --key` reads.
    public var publicKeyPem: String
    public var fingerprint: String

    public init(publicKeyPem: String, fingerprint: String) {
        self.publicKeyPem = publicKeyPem
        self.fingerprint = fingerprint
    }
}

/// `GET /api/v1/applications`.
public struct ApplicationList: Codable, Sendable, Equatable {
    public var applications: [ApplicationInfo]
    public init(applications: [ApplicationInfo]) { self.applications = applications }
}

/// One version of an application: its own key and secret, and whether its devices are served.
public struct ApplicationVersionInfo: Codable, Sendable, Equatable {
    public var versionId: String
    public var applicationId: String
    public var name: String
    public var applicationKey: String
    public var applicationSecret: String
    public var supported: Bool
    public var createdAt: Date
    /// The SDK configuration string of this version (its key and secret, the application's master public key).
    public var sdkConfiguration: String

    public init(
        versionId: String, applicationId: String, name: String, applicationKey: String, applicationSecret: String,
        supported: Bool, createdAt: Date, sdkConfiguration: String
    ) {
        self.versionId = versionId
        self.applicationId = applicationId
        self.name = name
        self.applicationKey = applicationKey
        self.applicationSecret = applicationSecret
        self.supported = supported
        self.createdAt = createdAt
        self.sdkConfiguration = sdkConfiguration
    }
}

/// `GET /api/v1/applications/{id}/versions`.
public struct ApplicationVersionList: Codable, Sendable, Equatable {
    public var versions: [ApplicationVersionInfo]
    public init(versions: [ApplicationVersionInfo]) { self.versions = versions }
}

/// `POST /api/v1/applications/{id}/versions`.
public struct CreateApplicationVersionRequest: Codable, Sendable, Equatable {
    /// 1 to 64 letters, digits, dots, dashes or underscores, unique in the application.
    public var name: String
    public init(name: String) { self.name = name }
}

/// `POST /api/v1/operators` request: a named person with a role (`admin`, `operator`, `auditor`, `support`),
/// optionally limited to some applications.
public struct CreateOperatorRequest: Codable, Sendable {
    public var name: String
    public var role: String
    /// The application ids the operator may work with; absent: every one.
    public var applications: [String]?

    public init(name: String, role: String, applications: [String]? = nil) {
        self.name = name
        self.role = role
        self.applications = applications
    }
}

/// An operator account as the operator API shows it (never its password or secret).
public struct OperatorInfo: Codable, Sendable, Equatable {
    public var name: String
    public var role: String
    /// The scopes the role grants.
    public var scopes: [String]
    /// The applications the operator may work with; absent: every one.
    public var applications: [String]?
    /// `SETUP_PENDING` (the set-up link is open), `ACTIVE` or `DISABLED`.
    public var state: String
    public var createdAt: Date
    public var lastSignInAt: Date?
    /// Until when the set-up link is open.
    public var setupExpiresAt: Date?

    public init(
        name: String, role: String, scopes: [String], applications: [String]?, state: String, createdAt: Date,
        lastSignInAt: Date?, setupExpiresAt: Date?
    ) {
        self.name = name
        self.role = role
        self.scopes = scopes
        self.applications = applications
        self.state = state
        self.createdAt = createdAt
        self.lastSignInAt = lastSignInAt
        self.setupExpiresAt = setupExpiresAt
    }
}

/// `GET /api/v1/operators`.
public struct OperatorList: Codable, Sendable, Equatable {
    public var operators: [OperatorInfo]
    public init(operators: [OperatorInfo]) { self.operators = operators }
}

/// An operator with its one-time set-up link (`POST /api/v1/operators`, `…/{name}/reset`): shown once.
public struct OperatorSetup: Codable, Sendable, Equatable {
    public var `operator`: OperatorInfo
    public var setupLink: String

    public init(operator: OperatorInfo, setupLink: String) {
        self.operator = `operator`
        self.setupLink = setupLink
    }
}
