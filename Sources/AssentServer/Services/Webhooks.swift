import AssentCrypto
import AssentModel
import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// Where and how operation status changes are delivered.
public struct WebhookSettings: Sendable {
    /// The receiver's URL.
    public var url: URL
    /// The HMAC-SHA256 key of the `X-Assent-Signature` header.
    public var secret: Data
    /// Attempts before an event is abandoned (default 12, about 1.5 hours with the default back-off).
    public var maxAttempts: Int = 12
    /// The delay after the first failure, doubled after each further one (default 5 s).
    public var initialBackoff: Duration = .seconds(5)
    /// The longest delay between attempts (default 30 minutes).
    public var maximumBackoff: Duration = .seconds(1800)
    /// How often the outbox is polled (default 1 s).
    public var pollInterval: Duration = .seconds(1)
    /// How long one delivery may take (default 10 s).
    public var timeout: Duration = .seconds(10)

    /// Settings for `url` signed with `secret`.
    public init(url: URL, secret: Data) {
        self.url = url
        self.secret = secret
    }

    /// The delay before attempt `attempts + 1`.
    func backoff(afterAttempts attempts: Int) -> Duration {
        let factor = 1 << min(max(attempts - 1, 0), 20)
        return min(initialBackoff * factor, maximumBackoff)
    }
}

/// The JSON a webhook receiver gets for one status change.
public struct WebhookPayload: Codable, Sendable, Equatable {
    /// `operation.status_changed`.
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
        return "t=\(timestamp),v1=" + Data(mac).map { String(format: "%02x", $0) }.joined()
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

/// Delivers the webhook outbox: polls for due events, leases each (so several server processes never send one
/// event twice at once), posts it signed, and records success or schedules a retry with exponential back-off.
/// Events survive restarts because they live in the database until delivered or abandoned.
struct WebhookDispatcher: Service {
    let environment: ServerEnvironment
    let settings: WebhookSettings

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await deliverDue()
                } catch {
                    environment.logger.warning(
                        "webhook outbox poll failed", metadata: ["error": "\(String(reflecting: error))"])
                }
                try? await Task.sleep(for: settings.pollInterval)
            }
        }
    }

    /// Delivers every event due now; returns how many were delivered.
    @discardableResult
    func deliverDue() async throws -> Int {
        var delivered = 0
        let now = environment.nowMillis
        let lease = now + Millis(settings.timeout.components.seconds + 5) * 1000
        for event in try await environment.store.dueWebhookEvents(now: now, limit: 50) {
            guard try await environment.store.leaseWebhookEvent(id: event.id, now: now, until: lease) else { continue }
            if try await deliver(event) { delivered += 1 }
        }
        return delivered
    }

    private func deliver(_ event: WebhookEventRecord) async throws -> Bool {
        let operation = try await environment.store.operation(id: event.operationId)
        let payload = WebhookPayload(
            event: "operation.status_changed", eventId: event.id, operationId: event.operationId,
            userId: operation?.userId, name: operation?.name ?? "", status: event.status,
            statusReason: event.statusReason, activationId: operation?.activationId, at: Date(millis: event.at))
        let body = try OperatorJSON.encoder().encode(payload)
        let failure = await post(body)
        let attempts = event.attempts + 1
        let now = environment.nowMillis
        if let failure {
            let giveUp = attempts >= settings.maxAttempts
            let delay = settings.backoff(afterAttempts: attempts)
            let next = now + delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000
            try await environment.store.recordWebhookAttempt(
                id: event.id, delivered: false, attempts: attempts, nextAttemptAt: giveUp ? nil : next, error: failure,
                now: now)
            environment.logger.warning(
                giveUp ? "webhook abandoned" : "webhook delivery failed",
                metadata: ["event.id": "\(event.id)", "attempts": "\(attempts)", "error": "\(failure)"])
            return false
        }
        try await environment.store.recordWebhookAttempt(
            id: event.id, delivered: true, attempts: attempts, nextAttemptAt: nil, error: nil, now: now)
        return true
    }

    /// Posts the body; returns why it failed, or `nil` on a 2xx answer.
    private func post(_ body: Data) async -> String? {
        var request = HTTPClientRequest(url: settings.url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "Assent-Webhook")
        request.headers.add(
            name: WebhookSignature.headerName,
            value: WebhookSignature.header(
                body: body, secret: settings.secret, timestamp: environment.nowMillis / 1000))
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await HTTPClient.shared.execute(
                request, timeout: .seconds(settings.timeout.components.seconds))
            _ = try? await response.body.collect(upTo: 64 * 1024)
            return (200..<300).contains(response.status.code) ? nil : "HTTP \(response.status.code)"
        } catch {
            return "\(type(of: error))"
        }
    }
}
