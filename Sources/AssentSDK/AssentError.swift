import AssentModel
import Foundation

/// Every failure the SDK reports: an opaque ``Code``, a sentence, and what is known besides (the server's code and
/// HTTP status, the remaining PIN attempts, the underlying error).
public struct AssentError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. Compare with the static members; new codes may appear.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code as text, e.g. `WRONG_PIN`.
        public let rawValue: String
        /// A code with this text.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The server could not be reached or the connection failed.
        public static let network = Code("NETWORK")
        /// The server refused the request; see ``AssentError/serverCode`` and ``AssentError/httpStatus``.
        public static let server = Code("SERVER")
        /// The PIN was wrong; see ``AssentError/remainingAttempts``.
        public static let wrongPIN = Code("WRONG_PIN")
        /// The activation is blocked (too many wrong PINs, or by the operator).
        public static let blocked = Code("BLOCKED")
        /// The activation was removed on the server.
        public static let removed = Code("REMOVED")
        /// There is no activation on this device (or the action needs a different activation state).
        public static let notActivated = Code("NOT_ACTIVATED")
        /// The device is already activated.
        public static let alreadyActivated = Code("ALREADY_ACTIVATED")
        /// Input failed local validation (code format, PIN policy, QR format).
        public static let invalidInput = Code("INVALID_INPUT")
        /// A server signature (activation QR, offline operation QR, temporary key) did not verify.
        public static let signatureVerificationFailed = Code("SIGNATURE_VERIFICATION_FAILED")
        /// The operation expired.
        public static let operationExpired = Code("OPERATION_EXPIRED")
        /// The operation already ended (approved, rejected, canceled or failed).
        public static let operationFinished = Code("OPERATION_FINISHED")
        /// The operation failed after too many attempts.
        public static let operationFailed = Code("OPERATION_FAILED")
        /// The factor asked for is not part of this activation (no PIN on a device-only activation, no biometry
        /// added, no ``BiometryProvider``), or biometry is not enabled on the server.
        public static let factorUnavailable = Code("FACTOR_UNAVAILABLE")
        /// The biometric check failed or the server refused the biometry signature.
        public static let biometryFailed = Code("BIOMETRY_FAILED")
        /// The keystore could not be read or written.
        public static let keystore = Code("KEYSTORE")
        /// The call was cancelled.
        public static let cancelled = Code("CANCELLED")
        /// A transaction of unknown owner arrived while this app holds several activations for the server: retry
        /// naming one of ``AssentError/candidateUserIds`` (seed 003's `HIDInexplicitContainer`).
        public static let inexplicitContainer = Code("INEXPLICIT_CONTAINER")
        /// The PIN is older than the server allows: change it (``AssentClient/changePIN(from:to:)``), then approve.
        public static let pinExpired = Code("PIN_EXPIRED")
        /// The operation needs a proximity check and none was sent: scan the code the site shows and approve again
        /// with it (nothing was counted).
        public static let proximityCheckMissing = Code("PROXIMITY_CHECK_MISSING")
        /// The proximity code was wrong or too old: it counted against the operation; scan the current one.
        public static let proximityCheckFailed = Code("PROXIMITY_CHECK_FAILED")
        /// The operation asks for the number shown where it started (``MobileOperation/numberMatching``) and none
        /// was sent: ask the person and approve again with it (nothing was counted).
        public static let numberMissing = Code("NUMBER_MATCH_MISSING")
        /// The number was not the one shown: the server rejected the operation (someone else may have started it).
        public static let numberMismatch = Code("NUMBER_MATCH_FAILED")
        /// The approval signed other data than the operation's (the app showed or signed something else): the PIN
        /// was right, the attempt counted against the operation; reload the operation before approving again.
        public static let operationDataMismatch = Code("OPERATION_DATA_MISMATCH")
        /// The server's answer could not be understood.
        public static let invalidResponse = Code("INVALID_RESPONSE")
    }

    /// What kind of failure this is.
    public var code: Code
    /// One sentence for a developer (not localised).
    public var message: String
    /// The server's error code (e.g. `OPERATION_EXPIRED`), when the server answered with one.
    public var serverCode: String?
    /// The HTTP status, when the server answered.
    public var httpStatus: Int?
    /// ``serverCode`` as the Mobile Token API's code, when it is one (compare it as a type, not as a string).
    public var mobileTokenCode: MobileTokenErrorCode? { serverCode.flatMap(MobileTokenErrorCode.init(rawValue:)) }
    /// ``serverCode`` as the two-factor API's code, when it is one.
    public var tfaCode: TFAFlowErrorCode? { serverCode.flatMap(TFAFlowErrorCode.init(rawValue:)) }
    /// PIN attempts left before the activation blocks, after ``Code/wrongPIN``.
    public var remainingAttempts: Int?
    /// The error that caused this one.
    public var underlying: (any Error & Sendable)?
    /// After ``Code/inexplicitContainer``: the users whose activations could take the transaction.
    public var candidateUserIds: [String]? = nil

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, serverCode: String? = nil, httpStatus: Int? = nil,
        remainingAttempts: Int? = nil, underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.serverCode = serverCode
        self.httpStatus = httpStatus
        self.remainingAttempts = remainingAttempts
        self.underlying = underlying
    }

    public var description: String {
        var text = "\(code): \(message)"
        if let serverCode { text += " [\(serverCode)\(httpStatus.map { ", HTTP \($0)" } ?? "")]" }
        if let remainingAttempts { text += " (\(remainingAttempts) attempts left)" }
        return text
    }

    /// Wraps any error: an ``AssentError`` stays itself, cancellation becomes ``Code/cancelled``.
    static func wrap(_ error: any Error, _ code: Code, _ message: String) -> AssentError {
        if let error = error as? AssentError { return error }
        if error is CancellationError { return AssentError(.cancelled, "The call was cancelled.") }
        return AssentError(code, message, underlying: SendableError(description: String(describing: error)))
    }
}

/// A description of a non-Sendable underlying error.
struct SendableError: Error, Sendable, CustomStringConvertible {
    var description: String

    init(description: String) { self.description = description }
    init(_ error: any Error) { description = String(describing: error) }
}
