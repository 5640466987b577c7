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
        for attempt in 0..<2 {
            let accessToken: String
            do {
                accessToken = try await accessTokens.token {
                    try await OAuthToken.fetch(
                        transport: transport, url: settings.tokenURL,
                        form: [
                            ("grant_type", "client_credentials"), ("client_id", settings.appId),
                            ("client_secret", settings.appSecret),
                        ], service: "Huawei OAuth")
                }
            } catch {
                return .retry("No HMS access token: \(error)", after: nil)
            }
            let response: PushHTTPResponse
            do {
                response = try await transport.send(
                    .POST, url,
                    headers: [("authorization", "Bearer \(accessToken)"), ("content-type", "application/json")],
                    body: body)
            } catch {
                return .retry("HMS did not answer: \(type(of: error))", after: nil)
            }
            let delivery = Self.delivery(of: response, token: token)
            if delivery == .renewToken, attempt == 0 {
                await accessTokens.invalidate(accessToken)
                continue
            }
            if case .delivery(let result) = delivery { return result }
        }
        return .retry("HMS refused a new access token.", after: nil)
    }

    enum Outcome: Equatable {
        case delivery(PushDelivery)
        case renewToken
    }

    /// What a Push Kit answer means: the `code` in the body, not the HTTP status, is the signal.
    static func delivery(of response: PushHTTPResponse, token: String) -> Outcome {
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
            return .renewToken
        default:
            if response.status == 401 { return .renewToken }
            return response.status == 429 || response.status >= 500
                ? .delivery(.retry(said, after: response.retryAfter)) : .delivery(.failed(said))
        }
    }
}
