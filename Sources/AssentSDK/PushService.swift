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
            token: token.map { String(format: "%02x", $0) }.joined(), platform: .apns, environment: environment,
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
