import Foundation

/// Sends notifications through Huawei Push Kit v1 with an OAuth client-credentials token, cached until shortly
/// before it expires and replaced when Huawei says it expired or failed.
struct HMSClient: Sendable {
    let settings: HMSSettings
    let transport: PushTransport
    let accessTokens = AccessTokenCache()

    /// Sends `content` to the device token.
    func send(_ content: PushContent, to token: String) async -> PushDelivery {
        let url = settings.baseURL.appendingPathComponent("v1/\(settings.appId)/messages:send").absoluteString
        guard
            let body = try? JSONSerialization.data(
                withJSONObject: try content.hmsMessage(token: token, now: Date()), options: .sortedKeys)
        else { return .failed("The HMS message cannot be encoded.") }
        let settings = settings
        let transport = transport
        return await transport.send(
            "HMS", url: url, body: body, headers: [("content-type", "application/json")],
            credential: { refused in
                try await accessTokens.token(replacing: refused) {
                    try await OAuthToken.fetch(
                        transport: transport, url: settings.tokenURL,
                        form: [
                            ("grant_type", "client_credentials"), ("client_id", settings.appId),
                            ("client_secret", settings.appSecret),
                        ], service: "Huawei OAuth")
                }
            }, authorization: { "Bearer \($0)" }, interpret: { Self.delivery(of: $0, token: token) })
    }

    /// What a Push Kit answer means: the `code` in the body, not the HTTP status, is the signal.
    static func delivery(of response: OutboundResponse, token: String) -> CredentialOutcome {
        struct Answer: Decodable {
            var code: String?
            var msg: String?
        }
        let answer = try? JSONDecoder().decode(Answer.self, from: response.body)
        let said = "HMS: \(answer?.code ?? "no code") \(answer?.msg ?? "") (HTTP \(response.status))"
        switch answer?.code {
        case "80000000":
            return .delivery(.delivered)
        case "80100000":
            // Partial success: `msg` is JSON listing the tokens that are dead.
            struct Partial: Decodable {
                var illegalTokens: [String]?
                enum CodingKeys: String, CodingKey { case illegalTokens = "illegal_tokens" }
            }
            let partial = answer?.msg.flatMap { try? JSONDecoder().decode(Partial.self, from: Data($0.utf8)) }
            return (partial?.illegalTokens ?? []).contains(token)
                ? .delivery(.tokenInvalid(reason: said, since: nil)) : .delivery(.delivered)
        case "80300007":
            // All tokens of the request are invalid: we send one.
            return .delivery(.tokenInvalid(reason: said, since: nil))
        case "80200001", "80200003":
            return .renewCredential
        default:
            if response.status == 401 { return .renewCredential }
            return response.status == 429 || response.status >= 500
                ? .delivery(.retry(said, after: response.retryAfter)) : .delivery(.failed(said))
        }
    }
}
