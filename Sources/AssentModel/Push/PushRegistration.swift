/// The push service a device token belongs to.
///
/// Devices send either the legacy names (`ios`, `android`, `huawei`) or the service names (`apns`, `fcm`, `hms`);
/// both decode to the same case, and the server stores and reports the service name. `webpush` is any push service
/// speaking the Web Push protocol (RFC 8030): a browser's, or a UnifiedPush distributor's (ntfy, NextPush, Sunup).
public enum PushPlatform: String, Codable, Sendable, CaseIterable {
    /// Apple Push Notification service (iOS, iPadOS, macOS).
    case apns
    /// Firebase Cloud Messaging (Android, or an Apple app using Firebase).
    case fcm
    /// Huawei Push Kit.
    case hms
    /// Web Push (RFC 8030) with message encryption (RFC 8291) and VAPID (RFC 8292).
    case webpush

    /// The platform for either spelling, case-insensitively; `nil` for anything else.
    public init?(name: String) {
        switch name.lowercased() {
        case "apns", "ios": self = .apns
        case "fcm", "android": self = .fcm
        case "hms", "huawei": self = .hms
        case "webpush", "web-push", "unifiedpush": self = .webpush
        default: return nil
        }
    }

    public init(from decoder: any Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        guard let platform = PushPlatform(name: name) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: PushPlatform.choices))
        }
        self = platform
    }

    /// The accepted names, as a sentence.
    public static let choices = "platform is one of apns, fcm, hms, webpush (or ios, android, huawei)."
}

/// Which APNs gateway a token belongs to: tokens of development builds only work with the sandbox.
public enum PushEnvironment: String, Codable, Sendable, CaseIterable {
    case development
    case production
}

/// `POST /api/push/device/register[/token]` request object: the device's push token for its activation.
public struct PushRegistrationRequest: Codable, Sendable, Equatable {
    /// The push service (either spelling decodes).
    public var platform: String
    /// The device token (APNs: hexadecimal; FCM and HMS: the registration token; Web Push: the push endpoint URL).
    public var token: String
    /// `development` or `production`, for APNs; `production` when absent.
    public var environment: String?
    /// Web Push only: the subscription's P-256 public key, uncompressed, Base64URL (`keys.p256dh`).
    public var p256dh: String?
    /// Web Push only: the subscription's 16-octet authentication secret, Base64URL (`keys.auth`).
    public var auth: String?

    /// Creates a registration request.
    public init(
        platform: String, token: String, environment: String? = nil, p256dh: String? = nil, auth: String? = nil
    ) {
        self.platform = platform
        self.token = token
        self.environment = environment
        self.p256dh = p256dh
        self.auth = auth
    }
}

/// `GET /api/push/webpush/key` response object: the key a Web Push subscription is made for
/// (`applicationServerKey`), and the only key whose VAPID tokens this server's pushes carry.
public struct WebPushKeyResponse: Codable, Sendable, Equatable {
    /// The server's VAPID public key: an uncompressed P-256 point, Base64URL.
    public var applicationServerKey: String

    public init(applicationServerKey: String) { self.applicationServerKey = applicationServerKey }
}
