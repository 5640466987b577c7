import AssentCrypto
import AssentModel
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// Where operation status changes are delivered. How often and how long the outbox retries is its
/// ``OutboxPolicy``.
public struct WebhookSettings: Sendable {
    /// The receiver's URL.
    public var url: URL
    /// The HMAC-SHA256 key of the `X-Assent-Signature` header.
    public var secret: Data
    /// How long one delivery may take (default 10 s).
    public var timeout: Duration = .seconds(10)

    /// Settings for `url` signed with `secret`.
    public init(url: URL, secret: Data) {
        self.url = url
        self.secret = secret
    }
}

/// The JSON a webhook receiver gets for one status change.
public struct WebhookPayload: Codable, Sendable, Equatable {
    /// `operation.status_changed`, or `security.fraud_reported` (the user reported the operation as fraud: sent
    /// besides its status change).
    public var event: String
    /// Unique per change: receivers use it to ignore a redelivery.
    public var eventId: Int64
    public var operationId: String
    public var userId: String?
    public var name: String
    public var status: OperationStatus
    public var statusReason: String?
    /// The activation that approved, rejected or failed the operation.
    public var activationId: String?
    /// The operation's application.
    public var applicationId: String?
    /// When the status changed.
    public var at: Date
}

/// The `X-Assent-Signature` header: `t={unix seconds},v1={hex HMAC-SHA256 of "{t}.{body}"}`.
public enum WebhookSignature {
    public static let headerName = "X-Assent-Signature"

    /// The header value for `body` sent at `timestamp`.
    public static func header(body: Data, secret: Data, timestamp: Int64) -> String {
        var message = Data("\(timestamp).".utf8)
        message.append(body)
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret))
        return "t=\(timestamp),v1=" + Hex.encode(Data(mac))
    }

    /// Whether `header` is a valid signature of `body` made within `tolerance` seconds of `now`.
    public static func isValid(_ header: String, body: Data, secret: Data, now: Int64, tolerance: Int64 = 300) -> Bool {
        var fields: [String: String] = [:]
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            if pair.count == 2 { fields[pair[0]] = pair[1] }
        }
        guard let timestampText = fields["t"], let timestamp = Int64(timestampText), abs(now - timestamp) <= tolerance,
            let expected = fields["v1"]
        else { return false }
        let computed = Self.header(body: body, secret: secret, timestamp: timestamp)
        return Bytes.constantTimeEqual(Data(computed.utf8), Data("t=\(timestampText),v1=\(expected)".utf8))
    }
}

/// Posts the outbox's `webhook` messages to the relying party, signed — to the operation's application's own webhook
/// (``ApplicationWebhookService``), else to the server's; any non-2xx answer or network failure is retried by the
/// dispatcher.
struct WebhookSender: OutboxSender {
    /// The part of the store this sees.
    let store: any OperationStore
    let clock: WallClock
    let egress: Egress
    /// The server's own webhook, for applications without one.
    let webhook: WebhookSettings?
    let webhooks: ApplicationWebhookService

    var channel: OutboxChannel { .webhook }

    /// Ready when the server has a webhook or some application has its own: a process without either leaves the
    /// messages to one that has.
    func isReady() async -> Bool {
        if webhook != nil { return true }
        return (try? await webhooks.anyApplicationHasWebhook()) ?? false
    }

    func deliver(_ item: OutboxItem) async -> DeliveryOutcome {
        let fields = item.payloadFields
        guard let status = fields["status"].flatMap(OperationStatus.init(rawValue:)) else {
            return .failed("The outbox message has no operation status.")
        }
        var payload = WebhookPayload(
            event: item.event, eventId: item.id, operationId: item.subject,
            userId: fields["userId"], name: fields["name"] ?? "", status: status,
            statusReason: fields["statusReason"], activationId: fields["activationId"], at: Date(millis: item.at))
        let settings: WebhookSettings
        do {
            let operation = try await store.operation(id: item.subject)
            if fields["name"] == nil {
                // A message from before the trigger wrote the operation's fields (schema version 2).
                payload.userId = operation?.userId
                payload.name = operation?.name ?? ""
                payload.activationId = operation?.activationId
            }
            payload.applicationId = operation?.applicationId
            let destination =
                if let operation {
                    try await webhooks.destination(operation.applicationId)
                } else {
                    webhook
                }
            guard let destination else {
                return .failed("Neither the operation's application nor the server has a webhook.")
            }
            settings = destination
        } catch {
            return .retry("The operation or its application's webhook could not be read: \(type(of: error))")
        }
        guard let body = try? OperatorJSON.encoder().encode(payload) else { return .failed("Cannot encode the event.") }
        switch await SignedPost.send(
            body, to: settings, userAgent: "Assent-Webhook", timestamp: clock.millis / 1000,
            egress: egress)
        {
        case .success(let status):
            return (200..<300).contains(status) ? .delivered : .retry("HTTP \(status)")
        case .failure(.refused(let reason)):
            return .failed(reason)
        case .failure(.noAnswer(let reason)):
            return .retry(reason)
        }
    }
}

/// Posts a JSON body signed with `X-Assent-Signature` (webhooks, the SMS/voice gateway) through the egress policy and
/// reports the HTTP status; each sender decides what the status means.
enum SignedPost {
    static func send(
        _ body: Data, to settings: WebhookSettings, userAgent: String, timestamp: Int64, egress: Egress
    ) async -> Result<UInt, Egress.Failure> {
        var egress = egress
        egress.timeout = settings.timeout
        let headers = [
            ("Content-Type", "application/json"), ("User-Agent", userAgent),
            (
                WebhookSignature.headerName,
                WebhookSignature.header(body: body, secret: settings.secret, timestamp: timestamp)
            ),
        ]
        do {
            return .success(
                UInt(try await egress.send(.POST, settings.url.absoluteString, headers: headers, body: body).status))
        } catch {
            return .failure(error)
        }
    }
}
