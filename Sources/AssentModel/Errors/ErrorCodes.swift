/// The error codes every Assent API answers with, in one place for the server that sends them and the SDK and the
/// CLI that read them: the operator and PowerAuth APIs' ``ServerErrorCode``, the Mobile Token API's
/// ``MobileTokenErrorCode``, the two-factor API's ``TFAFlowErrorCode`` and the OAuth endpoints' ``OAuthErrorCode``.

/// The codes of the server's own failures (``AssentServerError``), as the operator and PowerAuth APIs send them, each
/// with the HTTP status the operator API answers with. The Mobile Token API translates them
/// (``MobileTokenErrorCode``); the two-factor API's flow errors (``TFAError``) and the OAuth endpoints'
/// (``OAuthError``) have their own.
public enum ServerErrorCode: String, Sendable, CaseIterable {
    /// The request is malformed (JSON, Base64, lengths, missing fields).
    case invalidRequest = "ERR_REQUEST"
    /// The body is larger than the limit.
    case payloadTooLarge = "ERR_PAYLOAD_TOO_LARGE"
    /// An end-to-end encrypted request could not be decrypted.
    case encryption = "ERR_ENCRYPTION"
    /// A known path with another method.
    case methodNotAllowed = "ERR_METHOD"
    /// Another refusal of the HTTP layer (its own status).
    case http = "ERR_HTTP"
    /// A rate limit refused the request.
    case rateLimited = "ERR_RATE_LIMITED"
    /// Concurrent updates kept colliding.
    case conflict = "ERR_CONFLICT"
    /// A second-factor policy names a provider this server's configuration cannot serve.
    case providerNotOffered = "ERR_PROVIDER_NOT_OFFERED"
    /// Wrong configuration at start-up.
    case configuration = "ERR_CONFIGURATION"
    /// The database could not make a write durable.
    case storage = "ERR_STORAGE"
    /// A server-side failure; details go to the log only.
    case internalError = "ERR_INTERNAL"
    /// No operator API key, or one that is unknown or revoked.
    case unauthorized = "UNAUTHORIZED"
    /// The API key lacks the scope.
    case forbidden = "FORBIDDEN"
    /// A resource other than an activation or an operation was not found.
    case notFound = "NOT_FOUND"
    /// A signature, MAC token or encrypted message did not authenticate.
    case authenticationFailed = "POWERAUTH_AUTH_FAIL"
    /// The activation does not exist.
    case activationNotFound = "ACTIVATION_NOT_FOUND"
    /// The activation is in a state that does not allow the action.
    case activationInvalidState = "ACTIVATION_INVALID_STATE"
    /// The activation code is unknown, used or expired.
    case activationCodeInvalid = "ACTIVATION_CODE_INVALID"
    /// A login account with this user id exists.
    case accountExists = "ACCOUNT_EXISTS"
    /// A push registration with a bad platform, token or environment.
    case pushRegistrationFailed = "PUSH_REGISTRATION_FAILED"
    /// The operation does not exist, or the caller may not see it.
    case operationNotFound = "OPERATION_NOT_FOUND"
    /// The operation expired.
    case operationExpired = "OPERATION_EXPIRED"
    /// The operation failed after too many attempts.
    case operationAlreadyFailed = "OPERATION_ALREADY_FAILED"
    /// The operation was canceled.
    case operationAlreadyCanceled = "OPERATION_ALREADY_CANCELED"
    /// The operation was already approved or rejected.
    case operationAlreadyFinished = "OPERATION_ALREADY_FINISHED"
    /// The operation has no proximity check, so no proximity code.
    case operationWithoutProximityCheck = "OPERATION_WITHOUT_PROXIMITY_CHECK"
    /// The approval attempt that just failed was the operation's last.
    case operationFailed = "OPERATION_FAILED"
    /// A correctly signed approval of other data than the operation's (the app showed or signed something else): the
    /// attempt counts, but it is no wrong PIN.
    case operationDataMismatch = "OPERATION_DATA_MISMATCH"
    /// An approval without the proximity code the operation needs.
    case proximityCheckMissing = "PROXIMITY_CHECK_MISSING"
    /// An approval with a wrong, stale or implausibly timed proximity code.
    case proximityCheckFailed = "PROXIMITY_CHECK_FAILED"
    /// An approval without the number an operation with number matching needs.
    case numberMissing = "NUMBER_MATCH_MISSING"
    /// An approval with another number than the one shown: the operation is rejected.
    case numberMismatch = "NUMBER_MATCH_FAILED"
    /// The PIN is older than the server allows.
    case pinExpired = "PIN_EXPIRED"
    /// The app's application version is no longer supported: the app must be updated.
    case applicationVersionUnsupported = "APPLICATION_VERSION_UNSUPPORTED"

    /// The HTTP status of the operator API (and the one the other APIs translate from).
    public var status: Int {
        switch self {
        case .invalidRequest, .encryption, .activationCodeInvalid, .pushRegistrationFailed, .proximityCheckMissing,
            .proximityCheckFailed, .numberMissing, .numberMismatch, .http, .operationDataMismatch:
            400
        case .unauthorized, .authenticationFailed, .operationFailed, .applicationVersionUnsupported: 401
        case .forbidden, .pinExpired: 403
        case .notFound, .activationNotFound, .operationNotFound: 404
        case .methodNotAllowed: 405
        case .conflict, .providerNotOffered, .activationInvalidState, .accountExists, .operationExpired,
            .operationAlreadyFailed, .operationAlreadyCanceled, .operationAlreadyFinished,
            .operationWithoutProximityCheck:
            409
        case .payloadTooLarge: 413
        case .rateLimited: 429
        case .configuration, .internalError: 500
        case .storage: 503
        }
    }
}

/// The Mobile Token API's closed list of error codes, and how the server's failures map onto it.
public enum MobileTokenErrorCode: String, Sendable, CaseIterable {
    case invalidRequest = "INVALID_REQUEST"
    case invalidActivation = "INVALID_ACTIVATION"
    case invalidOperation = "INVALID_OPERATION"
    case authenticationFailed = "POWERAUTH_AUTH_FAIL"
    case pushRegistrationFailed = "PUSH_REGISTRATION_FAILED"
    case rateLimited = "ERR_RATE_LIMITED"
    case pinExpired = "PIN_EXPIRED"
    case operationExpired = "OPERATION_EXPIRED"
    case operationAlreadyFailed = "OPERATION_ALREADY_FAILED"
    case operationAlreadyCanceled = "OPERATION_ALREADY_CANCELED"
    case operationAlreadyFinished = "OPERATION_ALREADY_FINISHED"
    case operationWithoutProximityCheck = "OPERATION_WITHOUT_PROXIMITY_CHECK"
    case operationFailed = "OPERATION_FAILED"
    case operationDataMismatch = "OPERATION_DATA_MISMATCH"
    case proximityCheckMissing = "PROXIMITY_CHECK_MISSING"
    case proximityCheckFailed = "PROXIMITY_CHECK_FAILED"
    case numberMissing = "NUMBER_MATCH_MISSING"
    case numberMismatch = "NUMBER_MATCH_FAILED"
    case generic = "ERROR_GENERIC"

    /// The Mobile Token code a server failure is sent as.
    public init(_ code: ServerErrorCode) {
        self =
            switch code {
            case .invalidRequest, .payloadTooLarge, .encryption: .invalidRequest
            case .activationNotFound, .activationInvalidState: .invalidActivation
            case .operationNotFound: .invalidOperation
            case .authenticationFailed, .applicationVersionUnsupported: .authenticationFailed
            case .pushRegistrationFailed: .pushRegistrationFailed
            case .rateLimited: .rateLimited
            case .pinExpired: .pinExpired
            case .operationExpired: .operationExpired
            case .operationAlreadyFailed: .operationAlreadyFailed
            case .operationAlreadyCanceled: .operationAlreadyCanceled
            case .operationAlreadyFinished: .operationAlreadyFinished
            case .operationWithoutProximityCheck: .operationWithoutProximityCheck
            case .operationFailed: .operationFailed
            case .operationDataMismatch: .operationDataMismatch
            case .proximityCheckMissing: .proximityCheckMissing
            case .proximityCheckFailed: .proximityCheckFailed
            case .numberMissing: .numberMissing
            case .numberMismatch: .numberMismatch
            case .methodNotAllowed, .http, .conflict, .providerNotOffered, .configuration, .storage, .internalError,
                .unauthorized, .forbidden, .notFound, .activationCodeInvalid, .accountExists:
                .generic
            }
    }
}

/// The two-factor API's flow error codes (`code` beside the seed's numeric ``TFAErrorCode``), as the server sends
/// them and the SDK reads them.
public enum TFAFlowErrorCode: String, Sendable, CaseIterable {
    case accountDisabled = "ACCOUNT_DISABLED"
    case assertionSpent = "ASSERTION_SPENT"
    case codeAlreadyUsed = "CODE_ALREADY_USED"
    case codeSpent = "CODE_SPENT"
    case invalidAssertion = "INVALID_ASSERTION"
    case invalidCode = "INVALID_CODE"
    case invalidLogin = "INVALID_LOGIN"
    case invalidPhvToken = "INVALID_PHV_TOKEN"
    case invalidProviderAssertion = "INVALID_PROVIDER_ASSERTION"
    case invalidRegToken = "INVALID_REG_TOKEN"
    case invalidSctToken = "INVALID_SCT_TOKEN"
    case providerNotAllowed = "PROVIDER_NOT_ALLOWED"
    case providerNotRegistered = "PROVIDER_NOT_REGISTERED"
    case pushDeviceNotOptedIn = "PUSH_DEVICE_NOT_OPTED_IN"
    case pushLimited = "PUSH_LIMITED"
    case pushNotApproved = "PUSH_NOT_APPROVED"
    case pushSuspended = "PUSH_SUSPENDED"
    case passkeyChallenge = "PASSKEY_CHALLENGE"
    case passkeyExists = "PASSKEY_EXISTS"
    case passkeyFlagged = "PASSKEY_FLAGGED"
    case passkeyNotAllowed = "PASSKEY_NOT_ALLOWED"
    case passkeyRefused = "PASSKEY_REFUSED"
    case passkeyUnknown = "PASSKEY_UNKNOWN"
    case pushNotSent = "PUSH_NOT_SENT"
    case pushRejected = "PUSH_REJECTED"
    case registrationNotAllowed = "REGISTRATION_NOT_ALLOWED"
    case totpNotRegistered = "TOTP_NOT_REGISTERED"
    case unknownDestination = "UNKNOWN_DESTINATION"
}

/// The OAuth error codes this provider answers with (RFC 6749 §5.2, RFC 6750 §3.1, CIBA Core §11 and §13).
public enum OAuthErrorCode: String, Sendable, CaseIterable {
    case invalidRequest = "invalid_request"
    case invalidClient = "invalid_client"
    case invalidGrant = "invalid_grant"
    case invalidScope = "invalid_scope"
    case invalidToken = "invalid_token"
    case unauthorizedClient = "unauthorized_client"
    case unsupportedGrantType = "unsupported_grant_type"
    case unsupportedResponseType = "unsupported_response_type"
    case accessDenied = "access_denied"
    case serverError = "server_error"
    case temporarilyUnavailable = "temporarily_unavailable"
    case authorizationPending = "authorization_pending"
    case slowDown = "slow_down"
    case expiredToken = "expired_token"
    case expiredLoginHintToken = "expired_login_hint_token"
    case unknownUserId = "unknown_user_id"
    case invalidBindingMessage = "invalid_binding_message"
    case loginRequired = "login_required"
    case interactionRequired = "interaction_required"
    case consentRequired = "consent_required"
    case requestNotSupported = "request_not_supported"
    case requestURINotSupported = "request_uri_not_supported"
}
