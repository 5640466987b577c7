import AssentCrypto
import AssentModel
import Crypto
import Foundation
import Synchronization

/// Sends notifications to Web Push endpoints (RFC 8030): the message encrypted for the subscription (RFC 8291,
/// padded to its length class), a VAPID token for the endpoint's origin (RFC 8292), `TTL` from the notification's
/// expiry, `Urgency` high for a new operation and normal otherwise, and a `Topic` from the operation id so that
/// notifications about one operation replace each other while they wait.
struct WebPushClient: Sendable {
    let settings: WebPushSettings
    /// Endpoints are chosen by devices and browsers: every push goes through the egress policy.
    let egress: Egress
    /// Reads (and on first use makes) an application's VAPID key.
    let loadKey: @Sendable (_ applicationId: String) async throws -> ECPrivateKey
    private let cache = Cache()

    /// Each application's key once read, and the token last made per application and audience.
    private final class Cache: Sendable {
        struct State {
            var keys: [String: ECPrivateKey] = [:]
            var tokens: [String: (header: String, issuedAt: Date)] = [:]
        }
        let state = Mutex(State())

        func withLock<T>(_ body: (inout State) -> T) -> T { state.withLock { body(&$0) } }
    }

    init(
        settings: WebPushSettings, egress: Egress,
        loadKey: @escaping @Sendable (_ applicationId: String) async throws -> ECPrivateKey
    ) {
        self.settings = settings
        self.egress = egress
        self.loadKey = loadKey
    }

    /// Sends `content` to the registration's endpoint, signed with the VAPID key of `applicationId` (the one the
    /// subscription was made for); a body the service finds too large (413) is sent once more without its title
    /// and text.
    func send(
        _ content: PushContent, to registration: PushRegistrationRecord, applicationId: String, now: Date = Date()
    ) async -> PushDelivery {
        guard let subscription = registration.webPush, let endpoint = URL(string: registration.token) else {
            return .failed("The Web Push registration has no endpoint keys.")
        }
        let authorization: String
        do {
            authorization = try await self.authorization(for: endpoint, applicationId: applicationId, now: now)
        } catch {
            return .retry("No VAPID token: \(type(of: error))", after: nil)
        }
        let headers = [
            ("content-encoding", "aes128gcm"), ("content-type", "application/octet-stream"),
            ("ttl", String(content.ttlSeconds(now: now))), ("urgency", content.isAlert ? "high" : "normal"),
            ("topic", Self.topic(for: content.collapseKey)), ("authorization", authorization),
        ]
        for trimmed in [false, true] {
            let body: Data
            do {
                body = try WebPushEncryption.encrypt(try content.webPushPayload(trimmed: trimmed), for: subscription)
            } catch {
                if !trimmed { continue }
                return .failed("The Web Push message does not fit 4096 bytes.")
            }
            let response: OutboundResponse
            do {
                response = try await egress.send(.POST, registration.token, headers: headers, body: body)
            } catch .refused(let reason) {
                return .failed("Web Push: \(reason)")
            } catch {
                return .retry("The push service did not answer: \(error.reason)", after: nil)
            }
            PushAttemptRecorder.current?.record(status: response.status)
            if response.status == 413, !trimmed { continue }
            return Self.delivery(of: response)
        }
        return .failed("Web Push: the push service refused the message as too large (HTTP 413), also without its text.")
    }

    /// What a push service's answer means (RFC 8030 §5 and §8.3).
    static func delivery(of response: OutboundResponse) -> PushDelivery {
        let said = "Web Push: HTTP \(response.status)" + (reason(response).map { " \($0)" } ?? "")
        switch response.status {
        case 200..<300: return .delivered
        case 404, 410: return .tokenInvalid(reason: said, since: nil)
        case 300..<400: return .failed("\(said); redirects are not followed.")
        case 429, 500..<600: return .retry(said, after: response.retryAfter)
        default: return .failed(said)
        }
    }

    /// The service's own words: a problem document's `title` or `detail`, else its short text body.
    static func reason(_ response: OutboundResponse) -> String? {
        struct Problem: Decodable {
            var title: String?
            var detail: String?
            var reason: String?
            var message: String?
        }
        let text: String?
        if let problem = try? JSONDecoder().decode(Problem.self, from: response.body) {
            text = problem.detail ?? problem.title ?? problem.reason ?? problem.message
        } else {
            text = String(data: response.body.prefix(200), encoding: .utf8)
        }
        guard
            let cleaned = text.map({ String($0.filter { !$0.isNewline }.prefix(200)) })?
                .trimmingCharacters(in: .whitespaces), !cleaned.isEmpty
        else { return nil }
        return "— \(cleaned)"
    }

    /// RFC 8030 §5.4: a topic is at most 32 characters of the URL-safe Base64 alphabet; 24 octets of SHA-256 of
    /// the operation id are exactly that.
    static func topic(for collapseKey: String) -> String {
        Base64URL.encode(Data(SHA256.hash(data: Data(collapseKey.utf8))).prefix(24))
    }

    /// The `Authorization` header for the endpoint's origin, signed with the application's key: a token reused for
    /// ``WebPushSettings/tokenReuse``.
    func authorization(for endpoint: URL, applicationId: String, now: Date) async throws -> String {
        let audience = try VAPID.audience(of: endpoint)
        let slot = "\(applicationId) \(audience)"
        let reuse = Double(settings.tokenReuse.components.seconds)
        if let cached = cache.withLock({ $0.tokens[slot] }), now.timeIntervalSince(cached.issuedAt) < reuse,
            cached.issuedAt <= now
        {
            return cached.header
        }
        let key: ECPrivateKey
        if let known = cache.withLock({ $0.keys[applicationId] }) {
            key = known
        } else {
            key = try await loadKey(applicationId)
            cache.withLock { $0.keys[applicationId] = key }
        }
        let header = try VAPID.authorization(
            audience: audience, subject: settings.subject,
            expiresAt: now + Double(settings.tokenLifetime.components.seconds), key: key)
        cache.withLock { $0.tokens[slot] = (header, now) }
        return header
    }
}

extension PushContent {
    /// The Web Push message: the mobile-token keys as `data` and, for a new operation (or anything with a title),
    /// its title, text and link as `notification` (what a service worker shows); `trimmed` leaves the notification
    /// out.
    func webPushPayload(trimmed: Bool) throws -> Data {
        var payload: [String: Any] = ["data": message.data]
        if isAlert || title != nil, !trimmed {
            var notification: [String: Any] = ["tag": collapseKey]
            if let title { notification["title"] = title }
            if let body { notification["body"] = body }
            if let link { notification["url"] = link }
            payload["notification"] = notification
        }
        return try JSONSerialization.data(withJSONObject: payload, options: .sortedKeys)
    }
}
