import AssentCrypto
import AssentModel
import Foundation

/// The push services this server sends through; any of them may be absent.
public struct PushSettings: Sendable {
    /// Apple Push Notification service.
    public var apns: APNsSettings?
    /// Firebase Cloud Messaging HTTP v1.
    public var fcm: FCMSettings?
    /// Huawei Push Kit.
    public var hms: HMSSettings?
    /// Web Push (browsers and UnifiedPush distributors).
    public var webPush: WebPushSettings?
    /// Where pushes go instead of Apple's, Google's and Huawei's own addresses: for the server's credentials and for
    /// every application's own alike.
    public var gateways = PushGateways()
    /// Certificate authorities (PEM) trusted for the push services' TLS besides the system's: for a TLS-inspecting
    /// proxy, or a test server.
    public var additionalTrustRootsPEM: String?
    /// How long connecting (TLS included) and one request to a push service may each take (default 10 s).
    public var timeout: Duration = .seconds(10)

    /// Settings with the given services.
    public init(apns: APNsSettings? = nil, fcm: FCMSettings? = nil, hms: HMSSettings? = nil) {
        self.apns = apns
        self.fcm = fcm
        self.hms = hms
    }

    /// Whether any service is configured.
    public var isEmpty: Bool { apns == nil && fcm == nil && hms == nil && webPush == nil }

    /// How long push attempts are kept in the delivery trace (default 30 days).
    public var traceRetention: Duration = .seconds(30 * 86_400)
    /// The retention when no push service is configured.
    public static let defaultTraceRetention: Duration = .seconds(30 * 86_400)
}

/// Addresses that replace the push services' own (a relay, a test stand-in); `nil` keeps the service's.
public struct PushGateways: Sendable, Equatable {
    /// Every APNs push, production and sandbox tokens alike.
    public var apns: URL?
    /// The FCM API.
    public var fcm: URL?
    /// The Push Kit API.
    public var hms: URL?
    /// Huawei's OAuth token endpoint.
    public var hmsToken: URL?

    public init(apns: URL? = nil, fcm: URL? = nil, hms: URL? = nil, hmsToken: URL? = nil) {
        self.apns = apns
        self.fcm = fcm
        self.hms = hms
        self.hmsToken = hmsToken
    }

    /// `settings` sent through these gateways.
    func routing(_ settings: APNsSettings) -> APNsSettings {
        var routed = settings
        if let apns {
            routed.productionURL = apns
            routed.developmentURL = apns
        }
        return routed
    }

    func routing(_ settings: FCMSettings) -> FCMSettings {
        var routed = settings
        if let fcm { routed.baseURL = fcm }
        return routed
    }

    func routing(_ settings: HMSSettings) -> HMSSettings {
        var routed = settings
        if let hms { routed.baseURL = hms }
        if let hmsToken { routed.tokenURL = hmsToken }
        return routed
    }
}

/// APNs with token-based authentication: a `.p8` signing key, its key id and the team id.
public struct APNsSettings: Sendable {
    /// The 10-character Team ID (`iss` of the provider token).
    public var teamId: String
    /// The 10-character Key ID of the `.p8` key (`kid` of the provider token).
    public var keyId: String
    /// The P-256 key of the `.p8` file.
    public var signingKey: ECPrivateKey
    /// The app's bundle id (`apns-topic`).
    public var topic: String
    /// The production gateway (default `https://api.push.apple.com`).
    public var productionURL = URL(string: "https://api.push.apple.com")!
    /// The sandbox gateway for tokens of development builds (default `https://api.sandbox.push.apple.com`).
    public var developmentURL = URL(string: "https://api.sandbox.push.apple.com")!
    /// How long one provider token is used: Apple wants a new one no more often than every 20 minutes and no less
    /// often than every 60 (default 50 minutes).
    public var tokenLifetime: Duration = .seconds(50 * 60)

    /// Settings from the `.p8` file's text.
    /// - Throws: a configuration error naming what is wrong.
    public init(teamId: String, keyId: String, privateKeyPEM: String, topic: String) throws {
        for (name, value) in [("team id", teamId), ("key id", keyId)] {
            guard value.count == 10, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw AssentServerError.configuration("The APNs \(name) is 10 letters and digits, e.g. ABC123DEFG.")
            }
        }
        guard !topic.isEmpty, topic.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw AssentServerError.configuration("The APNs topic is the app's bundle id, e.g. com.example.bank.")
        }
        do {
            signingKey = try ECPrivateKey(pemRepresentation: privateKeyPEM)
        } catch {
            throw AssentServerError.configuration("The APNs key is not a P-256 .p8 (PKCS#8 PEM) key.")
        }
        self.teamId = teamId
        self.keyId = keyId
        self.topic = topic
    }
}

/// FCM HTTP v1 with a Google service account.
public struct FCMSettings: Sendable {
    /// The service account's fields that matter here.
    public struct ServiceAccount: Sendable, Decodable {
        public var projectId: String
        public var privateKeyId: String?
        public var privateKey: String
        public var clientEmail: String
        public var tokenURI: String?

        enum CodingKeys: String, CodingKey {
            case projectId = "project_id"
            case privateKeyId = "private_key_id"
            case privateKey = "private_key"
            case clientEmail = "client_email"
            case tokenURI = "token_uri"
        }
    }

    public var projectId: String
    public var clientEmail: String
    public var privateKeyId: String?
    public var signingKey: RSAPrivateKey
    /// Where access tokens come from (the account's `token_uri`, default `https://oauth2.googleapis.com/token`).
    public var tokenURL: URL
    /// The FCM API (default `https://fcm.googleapis.com`).
    public var baseURL = URL(string: "https://fcm.googleapis.com")!

    /// Settings from the service-account JSON file's content.
    /// - Throws: a configuration error naming what is wrong.
    public init(serviceAccountJSON: Data) throws {
        let account: ServiceAccount
        do {
            account = try JSONDecoder().decode(ServiceAccount.self, from: serviceAccountJSON)
        } catch {
            throw AssentServerError.configuration(
                "The FCM service account must be Google's JSON with project_id, client_email and private_key.")
        }
        do {
            signingKey = try RSAPrivateKey(pemRepresentation: account.privateKey)
        } catch {
            throw AssentServerError.configuration("The service account's private_key is not an RSA PEM key.")
        }
        guard let tokenURL = URL(string: account.tokenURI ?? "https://oauth2.googleapis.com/token"),
            tokenURL.scheme == "https"
        else { throw AssentServerError.configuration("The service account's token_uri must be an https URL.") }
        projectId = account.projectId
        clientEmail = account.clientEmail
        privateKeyId = account.privateKeyId
        self.tokenURL = tokenURL
    }
}

/// Huawei Push Kit with the app's OAuth client credentials.
public struct HMSSettings: Sendable {
    /// The app id (the OAuth client id).
    public var appId: String
    /// The app secret (the OAuth client secret).
    public var appSecret: String
    /// Where access tokens come from (default `https://oauth-login.cloud.huawei.com/oauth2/v3/token`).
    public var tokenURL = URL(string: "https://oauth-login.cloud.huawei.com/oauth2/v3/token")!
    /// The Push Kit API (default `https://push-api.cloud.huawei.com`).
    public var baseURL = URL(string: "https://push-api.cloud.huawei.com")!

    /// Settings for the app.
    public init(appId: String, appSecret: String) throws {
        guard !appId.isEmpty, appId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw AssentServerError.configuration("The HMS app id is letters and digits.")
        }
        guard !appSecret.isEmpty else { throw AssentServerError.configuration("The HMS app secret is empty.") }
        self.appId = appId
        self.appSecret = appSecret
    }
}

/// Web Push (RFC 8030) with VAPID (RFC 8292). The VAPID key pair is made at first start and sealed in the database;
/// its public key is served at `GET /api/push/webpush/key` for subscribers.
public struct WebPushSettings: Sendable {
    /// The contact a push service may use to reach the sender (`sub`): `mailto:` or `https:`.
    public var subject: String
    /// How long a VAPID token is valid (at most 24 hours; default 12).
    public var tokenLifetime: Duration = .seconds(12 * 3600)
    /// How long one token is reused for an audience (default 1 hour).
    public var tokenReuse: Duration = .seconds(3600)

    /// Settings with `subject`.
    /// - Throws: a configuration error unless it is a `mailto:` address or an https URL.
    public init(subject: String) throws {
        let lowered = subject.lowercased()
        let valid: Bool
        if lowered.hasPrefix("mailto:") {
            let address = subject.dropFirst(7)
            valid = address.contains("@") && !address.hasPrefix("@") && !address.hasSuffix("@")
        } else if lowered.hasPrefix("https://"), let url = URL(string: subject), url.host?.isEmpty == false {
            valid = true
        } else {
            valid = false
        }
        guard valid, subject.count <= 512, subject.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw AssentServerError.configuration(
                "The VAPID subject is a mailto: address or an https URL, e.g. mailto:push@bank.example.")
        }
        self.subject = subject
    }
}
