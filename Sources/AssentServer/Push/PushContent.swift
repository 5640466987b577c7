import AssentModel
import Foundation

/// Everything a push service needs to know about one notification, independent of the service.
struct PushContent: Sendable {
    var message: PushMessage
    /// The operation's system name: APNs `category`, Android notification `tag`.
    var category: String
    /// Shown to the user (new operations only).
    var title: String?
    var body: String?
    /// When the notification stops being useful (absolute).
    var expiresAt: Date
    /// Notifications about one operation replace each other.
    var collapseKey: String
    /// The page the notification opens (a browser's sign-in request only).
    var link: String? = nil

    /// Whether the notification alerts the user (a new operation) or only wakes the app (a finished one).
    var isAlert: Bool {
        if case .operationCreated = message { return true }
        return false
    }

    /// The longest title and body sent: the payload must stay within the services' 4 KB.
    static let titleLimit = 200
    static let bodyLimit = 1000

    /// The APNs payload: `aps` plus the message keys beside it.
    func apnsPayload() -> [String: Any] {
        var aps: [String: Any]
        if isAlert {
            var alert: [String: Any] = [:]
            if let title { alert["title"] = title }
            if let body { alert["body"] = body }
            aps = ["alert": alert, "sound": "default", "category": category, "thread-id": collapseKey]
        } else {
            aps = ["content-available": 1]
        }
        var payload: [String: Any] = message.data
        payload["aps"] = aps
        return payload
    }

    /// The APNs request headers besides authorization and topic.
    func apnsHeaders() -> [(String, String)] {
        [
            ("apns-push-type", isAlert ? "alert" : "background"),
            // Background notifications must use priority 5; alerts are sent immediately.
            ("apns-priority", isAlert ? "10" : "5"),
            ("apns-expiration", String(Int64(expiresAt.timeIntervalSince1970.rounded(.down)))),
            ("apns-collapse-id", collapseKey),
        ]
    }

    /// Seconds until expiry, within what Android accepts (0 … 4 weeks).
    func ttlSeconds(now: Date) -> Int {
        min(max(Int(expiresAt.timeIntervalSince(now).rounded(.down)), 0), 2_419_200)
    }

    /// The FCM HTTP v1 `message` for `token`: the message keys as string `data`, an Android notification for a
    /// new operation, and APNs overrides for an Apple device using Firebase.
    func fcmMessage(token: String, now: Date) -> [String: Any] {
        var android: [String: Any] = [
            "priority": isAlert ? "high" : "normal", "ttl": "\(ttlSeconds(now: now))s", "collapse_key": collapseKey,
        ]
        var message: [String: Any] = ["token": token, "data": self.message.data]
        if isAlert {
            var notification: [String: Any] = ["tag": category]
            if let title { notification["title"] = title }
            if let body { notification["body"] = body }
            android["notification"] = notification
        }
        message["android"] = android
        message["apns"] = [
            "headers": Dictionary(apnsHeaders().filter { $0.0 != "apns-collapse-id" }, uniquingKeysWith: { a, _ in a }),
            "payload": apnsPayload(),
        ]
        return ["validate_only": false, "message": message]
    }

    /// The HMS Push Kit `message` for `token`: a token array and the message keys as a JSON string.
    func hmsMessage(token: String, now: Date) throws -> [String: Any] {
        let data = String(
            decoding: try JSONSerialization.data(withJSONObject: message.data, options: .sortedKeys), as: UTF8.self)
        var android: [String: Any] = [
            "urgency": isAlert ? "HIGH" : "NORMAL", "ttl": "\(ttlSeconds(now: now))s", "collapse_key": -1,
        ]
        if isAlert {
            var notification: [String: Any] = ["click_action": ["type": 3], "tag": category]
            if let title { notification["title"] = title }
            if let body { notification["body"] = body }
            android["notification"] = notification
        }
        return ["validate_only": false, "message": ["token": [token], "data": data, "android": android]]
    }
}
