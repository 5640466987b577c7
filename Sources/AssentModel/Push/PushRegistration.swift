/// The push service a device token belongs to.
///
/// Devices send either the legacy names (`ios`, `android`, `huawei`) or the service names (`apns`, `fcm`, `hms`);
/// both decode to the same case, and the server stores and reports the service name.
public enum PushPlatform: String, Codable, Sendable, CaseIterable {
    /// Apple Push Notification service (iOS, iPadOS, macOS).
    case apns
    /// Firebase Cloud Messaging (Android, or an Apple app using Firebase).
    case fcm
    /// Huawei Push Kit.
    case hms

    /// The platform for either spelling, case-insensitively; `nil` for anything else.
    public init?(name: String) {
        switch name.lowercased() {
        case "apns", "ios": self = .apns
        case "fcm", "android": self = .fcm
        case "hms", "huawei": self = .hms
        default: return nil
        }
    }

    public init(from decoder: any Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        guard let platform = PushPlatform(name: name) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "platform is one of apns, fcm, hms (or ios, android, huawei)."))
        }
        self = platform
    }
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
    /// The device token (APNs: hexadecimal; FCM and HMS: the registration token).
    public var token: String
    /// `development` or `production`, for APNs; `production` when absent.
    public var environment: String?

    /// Creates a registration request.
    public init(platform: String, token: String, environment: String? = nil) {
        self.platform = platform
        self.token = token
        self.environment = environment
    }
}
