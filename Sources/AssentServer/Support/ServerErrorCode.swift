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
            .proximityCheckFailed, .numberMissing, .numberMismatch, .http:
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
            case .proximityCheckMissing: .proximityCheckMissing
            case .proximityCheckFailed: .proximityCheckFailed
            case .numberMissing: .numberMissing
            case .numberMismatch: .numberMismatch
            case .methodNotAllowed, .http, .conflict, .providerNotOffered, .configuration, .storage, .internalError,
                .unauthorized, .forbidden, .notFound, .activationCodeInvalid, .accountExists:
                .generic
            }
    }

    /// The Mobile Token API's status for a failure of `status`: authentication failures 401, an unknown endpoint
    /// 404, HTTP's own 405, 413 and 429, server faults 500, every other refusal 400.
    public static func status(of failure: AssentServerError) -> Int {
        switch failure.status {
        case 401: 401
        case 404 where failure.code == .notFound: 404
        case 405, 413, 429: failure.status
        case 500...: 500
        default: 400
        }
    }
}
