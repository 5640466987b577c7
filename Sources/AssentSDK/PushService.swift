import AssentCrypto
import AssentModel
import Foundation

/// Push notifications for one activation: tells the server the device's push token, and reads the mobile-token
/// messages the app receives (``PushMessage``).
///
/// Push is best-effort: an app keeps polling or listening (``OperationsService``) as the source of truth and uses a
/// push to refresh at once.
public struct PushService: Sendable {
    let client: AssentClient

    /// A service for `client`'s activation.
    public init(client: AssentClient) { self.client = client }

    /// Registers an APNs device token (the bytes `didRegisterForRemoteNotificationsWithDeviceToken` gives).
    /// - Parameter environment: `.development` for builds signed for development (the APNs sandbox).
    public func registerForPush(token: Data, environment: PushEnvironment = .production, language: String? = nil)
        async throws
    {
        try await registerForPush(
            token: Hex.encode(token), platform: .apns, environment: environment,
            language: language)
    }

    /// Registers the device's push token for `platform`, replacing an earlier registration of this activation.
    /// - Parameters:
    ///   - language: the `Accept-Language` notifications are written in (default: the server's default language).
    /// - Throws: ``AssentError`` — `PUSH_REGISTRATION_FAILED` when the server refuses the token or platform.
    public func registerForPush(
        token: String, platform: PushPlatform, environment: PushEnvironment? = nil, language: String? = nil
    ) async throws {
        let body = try JSONEncoder().encode(
            RequestEnvelope(
                PushRegistrationRequest(platform: platform.rawValue, token: token, environment: environment?.rawValue)))
        _ = try await client.tokenCall(
            "/api/push/device/register/token", body: body,
            headers: language.map { ["Accept-Language": $0] } ?? [:])
    }

    /// Registers a Web Push endpoint (a browser's push service, or a UnifiedPush distributor's such as ntfy): makes
    /// new subscription keys (P-256 and a 16-byte secret), keeps them with the activation, and registers the
    /// endpoint with them, replacing an earlier registration. Messages then arrive encrypted (RFC 8291) at the
    /// endpoint's owner and are read with ``message(fromWebPush:)``.
    /// - Parameter webPushEndpoint: https (http only to this machine's loopback address, for a local receiver).
    /// - Throws: ``AssentError`` — `PUSH_REGISTRATION_FAILED` when the server refuses the endpoint.
    public func registerForPush(webPushEndpoint: URL, language: String? = nil) async throws {
        let keys = try await client.newWebPushKeys()
        let body = try JSONEncoder().encode(
            RequestEnvelope(
                PushRegistrationRequest(
                    platform: PushPlatform.webpush.rawValue, token: webPushEndpoint.absoluteString,
                    p256dh: keys.p256dh, auth: keys.auth)))
        _ = try await client.tokenCall(
            "/api/push/device/register/token", body: body,
            headers: language.map { ["Accept-Language": $0] } ?? [:])
    }

    /// The key the server signs this application's Web Push requests with (`applicationServerKey`, uncompressed
    /// P-256 in Base64URL): what a browser's `pushManager.subscribe` needs, and what a receiver checks VAPID tokens
    /// against.
    public func webPushServerKey() async throws -> String {
        let key = client.configuration.applicationKey
        let answer = try await client.call(
            "/api/push/webpush/key?application=\(key.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? key)",
            method: "GET", body: nil)
        do {
            return try JSONDecoder().decode(ResponseEnvelope<WebPushKeyResponse>.self, from: answer).responseObject
                .applicationServerKey
        } catch {
            throw AssentError.wrap(error, .server, "The server's Web Push key answer cannot be read.")
        }
    }

    /// The mobile-token message of a Web Push body (`Content-Encoding: aes128gcm`) sent to the endpoint registered
    /// with ``registerForPush(webPushEndpoint:language:)``: decrypted with the kept keys, then read as the server's
    /// `{"data": {…}, "notification": {"title", "body"}}`. `nil` for a message of another kind.
    /// - Throws: ``AssentError`` when the body does not decrypt (not for these keys, or altered).
    public func message(fromWebPush body: Data) async throws -> PushMessage? {
        let plaintext = try await client.decryptWebPush(body)
        struct Payload: Decodable {
            struct Notification: Decodable {
                var title: String?
                var body: String?
            }
            var data: [String: String]
            var notification: Notification?
        }
        guard let payload = try? JSONDecoder().decode(Payload.self, from: plaintext) else { return nil }
        return PushMessage(data: payload.data, title: payload.notification?.title, body: payload.notification?.body)
    }

    /// The mobile-token message of an APNs notification's `userInfo`: the keys beside `aps`, and the title and body
    /// of `aps.alert`. `nil` for other notifications.
    public static func message(fromAPNs userInfo: [AnyHashable: Any]) -> PushMessage? {
        var data: [String: String] = [:]
        for (key, value) in userInfo {
            if let key = key as? String, let value = value as? String { data[key] = value }
        }
        let alert = (userInfo["aps"] as? [String: Any])?["alert"] as? [String: Any]
        return PushMessage(data: data, title: alert?["title"] as? String, body: alert?["body"] as? String)
    }

    /// The mobile-token message of an FCM or HMS data map (HMS: the `data` string decoded as a JSON object).
    public static func message(fromData data: [String: String], title: String? = nil, body: String? = nil)
        -> PushMessage?
    {
        PushMessage(data: data, title: title, body: body)
    }
}
