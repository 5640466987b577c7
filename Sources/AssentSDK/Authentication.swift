import AssentCrypto
import AssentModel
import Foundation

/// What to show before the user authenticates an operation: its texts, the PIN attempts left, the PIN rules and
/// the methods that can approve it. Returned by ``OperationsService/startAuthentication(operationId:)``.
public struct AuthenticationContext: Sendable {
    /// The operation being authenticated.
    public var operation: MobileOperation
    /// A short title (the operation's form title).
    public var title: String
    /// The context to show (the operation's message); see ``contentType``.
    public var content: String
    /// The MIME type of ``content``: `text/plain`.
    public var contentType: String
    /// Wrong PINs left before the activation blocks.
    public var remainingAttempts: Int
    /// Wrong PINs in a row that block the activation.
    public var totalAttempts: Int
    /// The PIN rules, to choose the keyboard.
    public var pinPolicy: PINPolicy
    /// The methods this device may finish with: `DEVICE` for a one-factor operation, else `PIN` and, when the
    /// operation allows it and it was added, `BIOMETRY`.
    public var methods: [DeviceConfiguration.Method]
    /// When the operation stops being approvable.
    public var expires: Date?
}

/// The outcome of ``OperationsService/finishAuthentication(_:factor:proximityCheck:)``.
public struct AuthenticationResult: Sendable, Equatable {
    /// The approved operation's id.
    public var operationId: String
    /// The text to show after success, if the operation has one (its `resultTexts.success`).
    public var message: String?
}

extension OperationsService {
    /// Starts authenticating an operation (the seed's `startAuthentication`): checks that the activation is
    /// active, fetches the operation, and returns what to show with the attempts left. Throws
    /// ``AssentError/Code/blocked`` or ``AssentError/Code/removed`` for an unusable activation,
    /// ``AssentError/Code/operationFinished`` or ``AssentError/Code/operationExpired`` for an operation that can
    /// no longer be approved.
    public func startAuthentication(operationId: String) async throws -> AuthenticationContext {
        let status = try await client.status()
        switch status.state {
        case .active: break
        case .blocked:
            throw AssentError(
                .blocked, "The activation is blocked; ask the operator to unblock it.", remainingAttempts: 0)
        case .removed: throw AssentError(.removed, "The activation was removed on the server.")
        default: throw AssentError(.notActivated, "The activation is not active yet (\(status.state.name)).")
        }
        let operation = try await detail(id: operationId).value
        switch operation.status {
        case .pending: break
        case .expired:
            throw AssentError(
                .operationExpired, "The operation expired.",
                serverCode: MobileTokenErrorCode.operationExpired.rawValue)
        case .failed:
            throw AssentError(
                .operationFailed, "The operation failed.", serverCode: MobileTokenErrorCode.operationFailed.rawValue)
        default:
            throw AssentError(
                .operationFinished, "The operation is already \(operation.status.rawValue.lowercased()).",
                serverCode: MobileTokenErrorCode.operationAlreadyFinished.rawValue)
        }
        let activated = await client.activatedMethods
        let allowed = operation.allowedSignatureType
        var methods: [DeviceConfiguration.Method]
        if allowed.type == .one {
            methods = activated
        } else {
            methods = []
            if allowed.variants.contains(SignatureType.possessionKnowledge.rawValue), activated.contains(.pin) {
                methods.append(.pin)
            }
            if allowed.allowsBiometry, activated.contains(.biometry) { methods.append(.biometry) }
        }
        return AuthenticationContext(
            operation: operation, title: operation.formData.title, content: operation.formData.message,
            contentType: "text/plain", remainingAttempts: status.remainingAttempts,
            totalAttempts: status.maxFailedAttempts, pinPolicy: await client.pinPolicy, methods: methods,
            expires: MobileTokenJSON.parseTimestamp(operation.operationExpires))
    }

    /// Finishes the authentication with the PIN, biometry or (for a one-factor operation) the device: approves
    /// the operation. A wrong PIN throws ``AssentError/Code/wrongPIN`` with ``AssentError/remainingAttempts``; the
    /// last one ``AssentError/Code/blocked``.
    public func finishAuthentication(
        _ context: AuthenticationContext, factor: AuthenticationFactor, proximityCheck: ProximityCheck? = nil
    ) async throws -> AuthenticationResult {
        try await authorize(context.operation, factor: factor, proximityCheck: proximityCheck)
        return AuthenticationResult(
            operationId: context.operation.id, message: context.operation.formData.resultTexts?.success)
    }

    /// Cancels the authentication on the server (the seed's `cancelSession`): the operation is rejected with
    /// `reason`, so the relying party learns at once.
    public func cancelAuthentication(_ context: AuthenticationContext, reason: String = RejectReason.unknown)
        async throws
    {
        try await reject(id: context.operation.id, reason: reason)
    }
}
