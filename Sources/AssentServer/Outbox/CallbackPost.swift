import AsyncHTTPClient
import Foundation
import NIOCore

/// A POST to a relying party's callback URL (CIBA notifications, back-channel logouts) that never follows a
/// redirect, and what its answer means for the outbox.
struct CallbackPost: Sendable {
    let client: HTTPClient
    var timeout: Duration = .seconds(10)

    init() {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout.connect = .seconds(10)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Posts `body`; the answer's status, or why there was none.
    func send(_ body: Data, to url: String, contentType: String, userAgent: String, authorization: String? = nil)
        async -> Result<UInt, DeliveryFailure>
    {
        var post = HTTPClientRequest(url: url)
        post.method = .POST
        post.headers.add(name: "Content-Type", value: contentType)
        if let authorization { post.headers.add(name: "Authorization", value: authorization) }
        post.headers.add(name: "User-Agent", value: userAgent)
        post.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client.execute(post, timeout: .seconds(timeout.components.seconds))
            _ = try? await response.body.collect(upTo: 64 * 1024)
            return .success(response.status.code)
        } catch {
            return .failure(DeliveryFailure(reason: "\(type(of: error))"))
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

    func shutdown() async {
        try? await client.shutdown()
    }
}

/// Why a callback got no answer.
struct DeliveryFailure: Error {
    var reason: String
}
