/// A mobile-token push message: what the server sends through APNs, FCM or HMS when an operation is created or
/// finished, and what an app parses from the notification it receives.
///
/// The keys are those of the Wultra Mobile Token SDKs (`messageType`, `operationId`, `operationName`,
/// `mtokenOperationResult`, `activationId`), so apps written against them keep working. On APNs they sit beside
/// `aps` at the top level of the payload; on FCM they are the `data` map (string values); on HMS the `data` string
/// holds them as a JSON object.
public enum PushMessage: Sendable, Equatable {
    /// A new operation waits for the user (`mtoken.operationInit`).
    case operationCreated(id: String, name: String, activationId: String?, title: String?, body: String?)
    /// An operation ended (`mtoken.operationFinished`), sent silently so that an app can update its screen.
    case operationFinished(id: String, name: String, result: OperationResult, activationId: String?)

    /// How an operation ended, as `mtokenOperationResult` says it.
    public enum OperationResult: Sendable, Equatable {
        /// `authentication.success`: approved.
        case success
        /// `authentication.fail`: the approval failed too many times.
        case failure
        /// `operation.timeout`: expired.
        case timeout
        /// `operation.canceled`: rejected by the user or canceled by the operator.
        case canceled
        /// `operation.methodNotAvailable`.
        case methodNotAvailable
        /// A value this version does not know, kept for forward compatibility.
        case unknown(String)

        /// The value of `mtokenOperationResult`.
        public var rawValue: String {
            switch self {
            case .success: "authentication.success"
            case .failure: "authentication.fail"
            case .timeout: "operation.timeout"
            case .canceled: "operation.canceled"
            case .methodNotAvailable: "operation.methodNotAvailable"
            case .unknown(let value): value
            }
        }

        /// The result for a `mtokenOperationResult` value.
        public init(rawValue: String) {
            switch rawValue {
            case "authentication.success": self = .success
            case "authentication.fail": self = .failure
            case "operation.timeout": self = .timeout
            case "operation.canceled": self = .canceled
            case "operation.methodNotAvailable": self = .methodNotAvailable
            default: self = .unknown(rawValue)
            }
        }

        /// The result a finished operation's status reports; `nil` for a pending one.
        public init?(_ status: OperationStatus) {
            switch status {
            case .pending: return nil
            case .approved: self = .success
            case .rejected, .canceled: self = .canceled
            case .expired: self = .timeout
            case .failed: self = .failure
            }
        }
    }

    /// `messageType` of a new operation.
    public static let operationInitType = "mtoken.operationInit"
    /// `messageType` of a finished operation.
    public static let operationFinishedType = "mtoken.operationFinished"

    /// The custom keys of the message (every value a string), as FCM's `data` map carries them.
    public var data: [String: String] {
        var data: [String: String]
        switch self {
        case .operationCreated(let id, let name, let activationId, _, _):
            data = ["messageType": Self.operationInitType, "operationId": id, "operationName": name]
            if let activationId { data["activationId"] = activationId }
        case .operationFinished(let id, let name, let result, let activationId):
            data = [
                "messageType": Self.operationFinishedType, "operationId": id, "operationName": name,
                "mtokenOperationResult": result.rawValue,
            ]
            if let activationId { data["activationId"] = activationId }
        }
        return data
    }

    /// Parses the custom keys of a received notification: FCM's `data` map, or the top-level keys of an APNs
    /// payload with `title` and `body` taken from `aps.alert` by the caller. Returns `nil` for a notification that
    /// is not a mobile-token message, or one missing `operationId`, `operationName` or (finished) the result.
    public init?(data: [String: String], title: String? = nil, body: String? = nil) {
        guard let id = data["operationId"], !id.isEmpty, let name = data["operationName"], !name.isEmpty else {
            return nil
        }
        let activationId = data["activationId"]
        switch data["messageType"] {
        case Self.operationInitType:
            self = .operationCreated(id: id, name: name, activationId: activationId, title: title, body: body)
        case Self.operationFinishedType:
            guard let result = data["mtokenOperationResult"] else { return nil }
            self = .operationFinished(
                id: id, name: name, result: OperationResult(rawValue: result), activationId: activationId)
        default:
            return nil
        }
    }

    /// The operation the message is about.
    public var operationId: String {
        switch self {
        case .operationCreated(let id, _, _, _, _), .operationFinished(let id, _, _, _): id
        }
    }
}
