import Foundation

/// A POST to a relying party's callback URL (CIBA notifications, back-channel logouts) through the egress policy,
/// which never follows a redirect, and what its answer means for the outbox.
struct CallbackPost: Sendable {
    let egress: Egress

    /// Posts `body`; the answer's status, or why there was none.
    func send(_ body: Data, to url: String, contentType: String, userAgent: String, authorization: String? = nil)
        async -> Result<UInt, Egress.Failure>
    {
        var headers = [("Content-Type", contentType), ("User-Agent", userAgent)]
        if let authorization { headers.append(("Authorization", authorization)) }
        do {
            return .success(UInt(try await egress.send(.POST, url, headers: headers, body: body).status))
        } catch {
            return .failure(error)
        }
    }

    /// A 2xx delivers; a redirect is not followed; 408, 429 and 5xx are retried; any other answer is final.
    static func outcome(_ status: UInt, of target: String) -> DeliveryOutcome {
        switch status {
        case 200..<300: .delivered
        case 300..<400: .failed("\(target) answered a redirect (\(status)); not followed.")
        case 408, 429, 500...: .retry("HTTP \(status)")
        default: .failed("HTTP \(status)")
        }
    }

    /// What a failure to get an answer means: a refused URL is final, no answer is retried.
    static func outcome(_ failure: Egress.Failure) -> DeliveryOutcome {
        switch failure {
        case .refused(let reason): .failed(reason)
        case .noAnswer(let reason): .retry(reason)
        }
    }
}
