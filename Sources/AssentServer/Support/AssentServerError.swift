import AssentModel

/// A failure the server reports to a caller: a stable code, the HTTP status and a sentence for people.
///
/// PowerAuth endpoints send it as `{"status":"ERROR","responseObject":{"code","message"}}`, the operator API as
/// `{"code","message"}`. Messages never contain secrets, signatures or codes.
public struct AssentServerError: Error, Sendable, CustomStringConvertible {
    /// The stable error code, e.g. `ACTIVATION_NOT_FOUND`.
    public var code: ServerErrorCode
    /// The HTTP status to answer with.
    public var status: Int
    /// What happened and what to do.
    public var message: String
    /// Seconds after which trying again can succeed (sent as `Retry-After`).
    public var retryAfter: Int?

    /// Creates an error with the code's status, or another where the HTTP layer gave one.
    public init(_ code: ServerErrorCode, _ message: String, status: Int? = nil, retryAfter: Int? = nil) {
        self.code = code
        self.status = status ?? code.status
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String { "\(code.rawValue) (\(status)): \(message)" }

    /// The request is malformed (JSON, Base64, lengths, missing fields).
    public static func invalidRequest(_ message: String) -> Self {
        .init(.invalidRequest, message)
    }

    /// A signature, MAC token or encrypted message did not authenticate.
    public static func authenticationFailed(_ message: String = "Authentication failed.") -> Self {
        .init(.authenticationFailed, message)
    }

    /// A correctly signed approval of other data than the operation's.
    public static func operationDataMismatch(attemptsLeft: Int) -> Self {
        .init(
            .operationDataMismatch,
            "The approval signs other data than the operation's: the app showed or signed something else. The PIN was "
                + "right; \(attemptsLeft) \(attemptsLeft == 1 ? "attempt" : "attempts") left on this operation.")
    }

    /// An end-to-end encrypted request could not be decrypted.
    public static func decryptionFailed() -> Self {
        .init(.encryption, "The encrypted request could not be decrypted: check the keys, scope and temporary key.")
    }

    /// The application version a device's app uses is no longer supported.
    public static func applicationVersionUnsupported() -> Self {
        .init(
            .applicationVersionUnsupported,
            "This version of the app is no longer supported: update the app to go on.")
    }

    /// The activation does not exist.
    public static func activationNotFound() -> Self {
        .init(.activationNotFound, "No activation has this id.")
    }

    /// The activation is in a state that does not allow the action.
    public static func invalidActivationState(_ message: String) -> Self {
        .init(.activationInvalidState, message)
    }

    /// The activation code is unknown, used or expired.
    public static func activationCodeInvalid() -> Self {
        .init(.activationCodeInvalid, "The activation code is unknown, already used or expired: ask for a new one.")
    }

    /// A missing operator API key.
    public static func unauthorized() -> Self {
        .init(.unauthorized, "Send an operator API key as 'Authorization: Bearer <key>'.")
    }

    /// An operator API key that is unknown or revoked.
    public static func apiKeyRefused() -> Self {
        .init(.unauthorized, "The API key was refused: it is unknown or revoked. Check it, or ask for a new one.")
    }

    /// The API key lacks the scope.
    public static func forbidden(_ scope: APIScope) -> Self {
        .init(.forbidden, "This API key lacks the scope \(scope.rawValue).")
    }

    /// A resource other than an activation was not found.
    public static func notFound(_ message: String) -> Self {
        .init(.notFound, message)
    }

    /// The body is larger than the limit.
    public static func payloadTooLarge(limit: Int) -> Self {
        .init(.payloadTooLarge, "The request body is larger than \(limit) bytes.")
    }

    /// The operation does not exist, or the caller may not see it.
    public static func operationNotFound() -> Self {
        .init(.operationNotFound, "No operation with this id is available.")
    }

    /// The operation already ended (approved, rejected, canceled, expired or failed).
    public static func operationFinished(_ status: OperationStatus) -> Self {
        switch status {
        case .expired:
            .init(.operationExpired, "The operation expired; start a new one.")
        case .failed:
            .init(.operationAlreadyFailed, "The operation failed after too many attempts; start a new one.")
        case .canceled:
            .init(.operationAlreadyCanceled, "The operation was canceled.")
        default:
            .init(.operationAlreadyFinished, "The operation was already \(status.rawValue.lowercased()).")
        }
    }

    /// The proximity code of an operation created without `proximityCheck`: it has none.
    public static func proximityCheckNotEnabled() -> Self {
        .init(
            .operationWithoutProximityCheck,
            "The operation was created without proximityCheck: it has no proximity code.")
    }

    /// An approval without the proximity code the operation needs: a request error that counts nothing.
    public static func proximityCheckMissing() -> Self {
        .init(
            .proximityCheckMissing,
            "The operation needs a proximity check: scan the QR code (or open the link) the site shows and "
                + "send its code with the approval.")
    }

    /// An approval whose proximity code is wrong, too old or implausibly timed: it counts against the operation.
    public static func proximityCheckFailed(_ problem: String, attemptsLeft: Int) -> Self {
        .init(
            .proximityCheckFailed,
            "\(problem) Scan the current code again. \(attemptsLeft) "
                + "\(attemptsLeft == 1 ? "attempt" : "attempts") left on this operation.")
    }

    /// An approval without the number an operation with number matching needs: a request error that counts nothing.
    public static func numberMissing() -> Self {
        .init(.numberMissing, "Choose (or type) the number shown where the request started, and approve again.")
    }

    /// An approval with another number than the one shown: the operation is rejected.
    public static func numberMismatch() -> Self {
        .init(
            .numberMismatch,
            "That is not the number shown where the request started: the request is rejected. If you did not start "
                + "it, someone else may be trying to use your account.")
    }

    /// The approval attempt that just failed was the last one the operation allowed.
    public static func operationFailed() -> Self {
        .init(.operationFailed, "The approval failed too many times; the operation is now FAILED.")
    }

    /// The PIN is older than the server's maximum PIN age: the device must change it before approving.
    public static func pinExpired() -> Self {
        .init(.pinExpired, "The PIN is older than this server allows: change the PIN, then approve again.")
    }

    /// A login account with `userId` exists.
    public static func accountExists(_ userId: String) -> Self {
        .init(.accountExists, "An account with user id \(userId) exists.")
    }

    /// A push registration the server cannot use.
    public static func pushRegistrationFailed(_ message: String) -> Self { .init(.pushRegistrationFailed, message) }

    /// A known endpoint asked with a method it does not accept.
    public static func methodNotAllowed(_ message: String) -> Self { .init(.methodNotAllowed, message) }

    /// A rate limit refused the request.
    public static func rateLimited(retryAfter: Int) -> Self {
        .init(.rateLimited, "Too many attempts: try again in \(retryAfter) seconds.", retryAfter: retryAfter)
    }

    /// Concurrent updates kept colliding.
    public static func conflict() -> Self {
        .init(.conflict, "The record changed concurrently too often: try again.")
    }

    /// Wrong configuration at start-up.
    public static func configuration(_ message: String) -> Self {
        .init(.configuration, message)
    }

    /// The database could not make a write durable; nothing more is acknowledged until a restart.
    public static func storageFailed(_ message: String) -> Self {
        .init(.storage, message)
    }

    /// A server-side failure; details go to the log only.
    public static func internalError(_ message: String) -> Self {
        .init(.internalError, message)
    }
}
