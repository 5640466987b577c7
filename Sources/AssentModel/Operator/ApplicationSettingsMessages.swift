import Foundation

/// `PUT /api/v1/applications/{id}/push/apns`: the application's APNs credentials (token-based authentication).
public struct APNsCredentialsRequest: Codable, Sendable, Equatable {
    /// The 10-character Apple Team ID.
    public var teamId: String
    /// The 10-character Key ID of the signing key.
    public var keyId: String
    /// The `.p8` file's text (PKCS#8 PEM of a P-256 key).
    public var privateKey: String
    /// The app's bundle id (`apns-topic`).
    public var topic: String

    public init(teamId: String, keyId: String, privateKey: String, topic: String) {
        self.teamId = teamId
        self.keyId = keyId
        self.privateKey = privateKey
        self.topic = topic
    }
}

/// `PUT /api/v1/applications/{id}/push/fcm`: the application's Firebase project, as Google's service-account JSON.
public struct FCMCredentialsRequest: Codable, Sendable, Equatable {
    /// The service-account JSON file's text.
    public var serviceAccount: String

    public init(serviceAccount: String) { self.serviceAccount = serviceAccount }
}

/// `PUT /api/v1/applications/{id}/push/hms`: the application's Huawei Push Kit app.
public struct HMSCredentialsRequest: Codable, Sendable, Equatable {
    public var appId: String
    public var appSecret: String

    public init(appId: String, appSecret: String) {
        self.appId = appId
        self.appSecret = appSecret
    }
}

/// `GET /api/v1/applications/{id}/push`: which push credentials the application's devices are reached with. Never
/// carries a secret.
public struct ApplicationPushInfo: Codable, Sendable, Equatable {
    /// Where a service's credentials come from.
    public enum Source: String, Codable, Sendable {
        /// Set for this application (`PUT …/push/{service}`).
        case application
        /// The server's own (`assent serve --apns-*`, `--fcm-*`, `--hms-*`), used by the first application when it
        /// has none of its own.
        case server
    }

    public struct APNs: Codable, Sendable, Equatable {
        public var source: Source
        public var teamId: String
        public var keyId: String
        public var topic: String
        /// When the application's own were set; absent for the server's.
        public var updatedAt: Date?

        public init(source: Source, teamId: String, keyId: String, topic: String, updatedAt: Date?) {
            self.source = source
            self.teamId = teamId
            self.keyId = keyId
            self.topic = topic
            self.updatedAt = updatedAt
        }
    }

    public struct FCM: Codable, Sendable, Equatable {
        public var source: Source
        public var projectId: String
        public var clientEmail: String
        public var updatedAt: Date?

        public init(source: Source, projectId: String, clientEmail: String, updatedAt: Date?) {
            self.source = source
            self.projectId = projectId
            self.clientEmail = clientEmail
            self.updatedAt = updatedAt
        }
    }

    public struct HMS: Codable, Sendable, Equatable {
        public var source: Source
        public var appId: String
        public var updatedAt: Date?

        public init(source: Source, appId: String, updatedAt: Date?) {
            self.source = source
            self.appId = appId
            self.updatedAt = updatedAt
        }
    }

    public var applicationId: String
    /// Absent: the application's iOS devices are not reached by APNs.
    public var apns: APNs?
    public var fcm: FCM?
    public var hms: HMS?

    public init(applicationId: String, apns: APNs? = nil, fcm: FCM? = nil, hms: HMS? = nil) {
        self.applicationId = applicationId
        self.apns = apns
        self.fcm = fcm
        self.hms = hms
    }
}

/// `PATCH /api/v1/applications/{id}/branding`: an absent field keeps what was set, an empty string removes it.
public struct UpdateApplicationBrandingRequest: Codable, Sendable, Equatable {
    /// `#rrggbb`; white text must stay readable on it (contrast 4.5:1 or more).
    public var accentColor: String?
    /// Base64 of a PNG or JPEG image of at most 100 KB.
    public var logo: String?
    /// The language the pages and mail use when neither the person nor their browser names one the server speaks:
    /// `en`, `cs` or `de`.
    public var language: String?

    public init(accentColor: String? = nil, logo: String? = nil, language: String? = nil) {
        self.accentColor = accentColor
        self.logo = logo
        self.language = language
    }
}

/// `GET /api/v1/applications/{id}/branding`: how the application's hosted pages look.
public struct ApplicationBrandingInfo: Codable, Sendable, Equatable {
    public var applicationId: String
    /// The display name the pages show.
    public var name: String
    public var accentColor: String?
    /// Base64 of the logo.
    public var logo: String?
    public var logoType: String?
    /// The pages' default language; `nil`: English.
    public var language: String?
    public var updatedAt: Date?

    public init(
        applicationId: String, name: String, accentColor: String?, logo: String?, logoType: String?,
        language: String? = nil, updatedAt: Date?
    ) {
        self.applicationId = applicationId
        self.name = name
        self.accentColor = accentColor
        self.logo = logo
        self.logoType = logoType
        self.language = language
        self.updatedAt = updatedAt
    }
}

/// `PUT /api/v1/applications/{id}/webhook`: where the application's operation status changes go.
public struct SetApplicationWebhookRequest: Codable, Sendable, Equatable {
    /// An http(s) URL.
    public var url: String
    /// The signing key (16 to 256 characters); absent: the server makes one and answers it once.
    public var secret: String?

    public init(url: String, secret: String? = nil) {
        self.url = url
        self.secret = secret
    }
}

/// An application's own webhook. `secret` is in the answer that set it, never later.
public struct ApplicationWebhookInfo: Codable, Sendable, Equatable {
    public var applicationId: String
    public var url: String
    public var secret: String?
    public var updatedAt: Date

    public init(applicationId: String, url: String, secret: String?, updatedAt: Date) {
        self.applicationId = applicationId
        self.url = url
        self.secret = secret
        self.updatedAt = updatedAt
    }
}

/// `GET|PATCH /api/v1/applications/{id}/rate-limits`: the limits of what the application's people and devices do.
public struct ApplicationRateLimitsInfo: Codable, Sendable, Equatable {
    public struct Limit: Codable, Sendable, Equatable {
        /// As `assent serve --rate-limit` names it, e.g. `login-user`.
        public var name: String
        public var limit: Int
        /// Seconds.
        public var window: Int
        /// `application` (its own) or `server`.
        public var source: String

        public init(name: String, limit: Int, window: Int, source: String) {
            self.name = name
            self.limit = limit
            self.window = window
            self.source = source
        }
    }

    public var applicationId: String
    public var limits: [Limit]

    public init(applicationId: String, limits: [Limit]) {
        self.applicationId = applicationId
        self.limits = limits
    }
}

/// `PATCH /api/v1/applications/{id}/rate-limits`: `{"limits": {"login-user": "5/300", "code-user": ""}}`; an empty
/// value goes back to the server's.
public struct UpdateApplicationRateLimitsRequest: Codable, Sendable, Equatable {
    public var limits: [String: String]
    public init(limits: [String: String]) { self.limits = limits }
}
