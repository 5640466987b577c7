import Foundation

/// A delivery channel of the outbox.
public struct OutboxChannel: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Operation status changes posted to the relying party's webhook.
    public static let webhook = OutboxChannel(rawValue: "webhook")
    /// Push notifications to a device through APNs, FCM or HMS.
    public static let push = OutboxChannel(rawValue: "push")

    public var description: String { rawValue }
}

/// One message waiting in the outbox: "deliver this event to that target, at least once".
///
/// Rows are written by the database in the statement that makes the change they report (a trigger on
/// `operations`), so a change and its messages cannot be separated by a crash.
public struct OutboxItem: Sendable, Equatable {
    public var id: Int64
    public var channel: OutboxChannel
    /// What happened: `operation.status_changed` (webhook), `operation.created` / `operation.finished` (push).
    public var event: String
    /// The operation the event is about.
    public var subject: String
    /// Where it goes, for channels with several receivers (push: the activation id).
    public var target: String?
    /// Event details as a JSON object (e.g. `{"status":"APPROVED","statusReason":null}`).
    public var payload: String?
    /// When the event happened.
    public var at: Millis
    /// Attempts made so far.
    public var attempts: Int
    /// `pending`, `delivered` or `abandoned`.
    public var state: String = "pending"
    /// Why the last attempt failed.
    public var lastError: String?

    /// The JSON payload's string fields.
    var payloadFields: [String: String] {
        guard let payload, let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any]
        else { return [:] }
        return object.compactMapValues { $0 as? String }
    }
}

/// What one delivery attempt came to.
public enum DeliveryOutcome: Sendable, Equatable {
    /// The receiver took it.
    case delivered
    /// A passing failure: try again after the back-off, or after `after` when the receiver said so.
    case retry(String, after: Duration? = nil)
    /// A failure that another attempt cannot mend (the message is abandoned).
    case failed(String)
}

/// Delivers the outbox messages of one channel.
public protocol OutboxSender: Sendable {
    /// The channel this sender serves.
    var channel: OutboxChannel { get }
    /// Tries to deliver `item` once. Never throws: every failure is an outcome.
    func deliver(_ item: OutboxItem) async -> DeliveryOutcome
    /// Releases connections when the dispatcher stops.
    func shutdown() async
    /// Whether it can deliver now; while it cannot, this process leaves the channel's messages to one that can.
    func isReady() async -> Bool
}

extension OutboxSender {
    public func shutdown() async {}
    public func isReady() async -> Bool { true }
}
