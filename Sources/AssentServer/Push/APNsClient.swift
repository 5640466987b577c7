import AssentCrypto
import AssentModel
import Foundation
import Synchronization

/// Sends notifications to APNs over HTTP/2 with a provider token (ES256 JWT) shared by every request and renewed
/// after ``APNsSettings/tokenLifetime`` or when APNs says it expired.
struct APNsClient: Sendable {
    let settings: APNsSettings
    let transport: PushTransport
    let tokens: ProviderTokens

    init(settings: APNsSettings, transport: PushTransport) {
        self.settings = settings
        self.transport = transport
        self.tokens = ProviderTokens(settings: settings)
    }

    /// The provider token: one per team, reused for ``APNsSettings/tokenLifetime``.
    final class ProviderTokens: Sendable {
        let settings: APNsSettings
        private let current = Mutex<(token: String, issuedAt: Date)?>(nil)
        private let minted = Atomic<Int>(0)

        init(settings: APNsSettings) { self.settings = settings }

        /// How many tokens this process has made (for the logs and tests).
        var mintedCount: Int { minted.load(ordering: .relaxed) }

        /// The current token, or a new one when it is older than the lifetime or is `refused`.
        func token(now: Date = Date(), refused: String? = nil) throws -> String {
            try current.withLock { current in
                if let existing = current, existing.token != refused,
                    now.timeIntervalSince(existing.issuedAt) < Double(settings.tokenLifetime.components.seconds)
                {
                    return existing.token
                }
                let iat = Int64(now.timeIntervalSince1970.rounded(.down))
                let claims = Data(#"{"iss":"\#(settings.teamId)","iat":\#(iat)}"#.utf8)
                let token = try CompactJWS.sign(
                    payload: claims, with: .es256(settings.signingKey), keyId: settings.keyId)
                current = (token, now)
                minted.add(1, ordering: .relaxed)
                return token
            }
        }
    }

    /// Sends `content` to the device token of `registration`.
    func send(_ content: PushContent, to registration: PushRegistrationRecord) async -> PushDelivery {
        let base = registration.environment == .development ? settings.developmentURL : settings.productionURL
        let url = base.appendingPathComponent("3/device/\(registration.token)").absoluteString
        guard let body = try? JSONSerialization.data(withJSONObject: content.apnsPayload(), options: .sortedKeys)
        else { return .failed("The APNs payload cannot be encoded.") }
        guard body.count <= 4096 else { return .failed("The APNs payload is larger than 4096 bytes.") }
        return await transport.send(
            "APNs", url: url, body: body,
            headers: [("apns-topic", settings.topic), ("content-type", "application/json")] + content.apnsHeaders(),
            credential: { refused in try tokens.token(refused: refused) }, authorization: { "bearer \($0)" },
            interpret: Self.outcome(of:))
    }

    /// What an APNs answer means (Apple's table of status codes and reasons).
    static func outcome(of response: OutboundResponse) -> CredentialOutcome {
        if response.status == 200 { return .delivery(.delivered) }
        struct ErrorBody: Decodable {
            var reason: String?
            var timestamp: Int64?
        }
        let error = try? JSONDecoder().decode(ErrorBody.self, from: response.body)
        let reason = error?.reason ?? "HTTP \(response.status)"
        let said = "APNs: \(reason) (HTTP \(response.status))"
        switch (response.status, reason) {
        case (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"):
            return .delivery(.tokenInvalid(reason: said, since: nil))
        case (410, _):
            return .delivery(.tokenInvalid(reason: said, since: error?.timestamp))
        case (403, "ExpiredProviderToken"):
            return .renewCredential
        case (403, _):
            // Our credentials (key, team, environment) are wrong: retry later, never drop the device.
            return .delivery(.retry(said, after: response.retryAfter))
        case (429, _), (500...599, _):
            return .delivery(.retry(said, after: response.retryAfter))
        default:
            return .delivery(.failed(said))
        }
    }
}
