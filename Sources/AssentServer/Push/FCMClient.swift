import AssentCrypto
import Foundation

/// Sends notifications through FCM HTTP v1: a service-account assertion (RS256 JWT) is exchanged for an OAuth
/// access token, which is cached until shortly before it expires and replaced when FCM answers 401.
struct FCMClient: Sendable {
    let settings: FCMSettings
    let transport: PushTransport
    let accessTokens = AccessTokenCache()

    static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    /// Sends `content` to the registration token.
    func send(_ content: PushContent, to token: String) async -> PushDelivery {
        let url = settings.baseURL.appendingPathComponent("v1/projects/\(settings.projectId)/messages:send")
            .absoluteString
        guard
            let body = try? JSONSerialization.data(
                withJSONObject: content.fcmMessage(token: token, now: Date()), options: .sortedKeys)
        else { return .failed("The FCM message cannot be encoded.") }
        return await transport.send(
            "FCM", url: url, body: body, headers: [("content-type", "application/json")],
            credential: { refused in try await accessTokens.token(replacing: refused) { try await fetchAccessToken() }
            },
            authorization: { "Bearer \($0)" },
            interpret: { response in response.status == 401 ? .renewCredential : .delivery(Self.delivery(of: response))
            })
    }

    /// Exchanges a signed assertion for an access token (RFC 7523 JWT bearer grant).
    func fetchAccessToken() async throws -> (String, Duration) {
        let now = Int64(Date().timeIntervalSince1970.rounded(.down))
        let claims: [String: Any] = [
            "iss": settings.clientEmail, "scope": Self.scope, "aud": settings.tokenURL.absoluteString, "iat": now,
            "exp": now + 3600,
        ]
        let assertion = try CompactJWS.sign(
            payload: try JSONSerialization.data(withJSONObject: claims, options: .sortedKeys),
            with: .rs256(settings.signingKey), keyId: settings.privateKeyId)
        return try await OAuthToken.fetch(
            transport: transport, url: settings.tokenURL,
            form: [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion)],
            service: "Google OAuth")
    }

    /// What an FCM answer means: branch on the `FcmError` detail's `errorCode`, not on the HTTP status.
    static func delivery(of response: OutboundResponse) -> PushDelivery {
        if response.status == 200 {
            struct Sent: Decodable { var name: String }
            guard let sent = try? JSONDecoder().decode(Sent.self, from: response.body),
                sent.name.hasPrefix("projects/"), sent.name.contains("/messages/")
            else { return .retry("FCM answered 200 without a message name.", after: nil) }
            return .delivered
        }
        struct Failure: Decodable {
            struct Body: Decodable {
                struct Detail: Decodable {
                    struct Violation: Decodable { var field: String? }
                    var type: String?
                    var errorCode: String?
                    var fieldViolations: [Violation]?
                    enum CodingKeys: String, CodingKey {
                        case type = "@type"
                        case errorCode, fieldViolations
                    }
                }
                var status: String?
                var message: String?
                var details: [Detail]?
            }
            var error: Body
        }
        let failure = try? JSONDecoder().decode(Failure.self, from: response.body)
        let details = failure?.error.details ?? []
        let errorCode = details.first { $0.type?.hasSuffix("google.firebase.fcm.v1.FcmError") == true }?.errorCode
        let said = "FCM: \(errorCode ?? failure?.error.status ?? "HTTP") (HTTP \(response.status))"
        switch errorCode {
        case "UNREGISTERED":
            return .tokenInvalid(reason: said, since: nil)
        case "INVALID_ARGUMENT":
            // Only a malformed token is the device's fault; any other invalid field is ours.
            let tokenIsInvalid = details.contains { detail in
                detail.type?.hasSuffix("google.rpc.BadRequest") == true
                    && (detail.fieldViolations ?? []).contains { $0.field == "message.token" }
            }
            return tokenIsInvalid ? .tokenInvalid(reason: said, since: nil) : .failed(said)
        case "SENDER_ID_MISMATCH", "THIRD_PARTY_AUTH_ERROR", "APNS_AUTH_ERROR":
            return .failed(said)
        case "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL":
            return .retry(said, after: response.retryAfter)
        default:
            return response.status == 429 || response.status >= 500 || response.status == 401
                ? .retry(said, after: response.retryAfter) : .failed(said)
        }
    }
}

/// The OAuth token endpoints of Google and Huawei: a form POST answered by `{access_token, expires_in}`.
enum OAuthToken {
    static func fetch(transport: PushTransport, url: URL, form: [(String, String)], service: String) async throws
        -> (String, Duration)
    {
        let response = try await transport.send(
            .POST, url.absoluteString, headers: [("content-type", "application/x-www-form-urlencoded")],
            body: PushTransport.form(form))
        struct Token: Decodable {
            var accessToken: String
            var expiresIn: Int?
            enum CodingKeys: String, CodingKey {
                case accessToken = "access_token"
                case expiresIn = "expires_in"
            }
        }
        guard response.status == 200, let token = try? JSONDecoder().decode(Token.self, from: response.body),
            !token.accessToken.isEmpty
        else {
            throw AssentServerError.configuration("\(service) refused the credentials (HTTP \(response.status)).")
        }
        return (token.accessToken, .seconds(max(60, token.expiresIn ?? 3600)))
    }
}
