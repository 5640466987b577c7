import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How the SDK talks HTTP. The default is ``URLSessionTransport``; tests or apps with their own networking supply
/// another.
public protocol Transport: Sendable {
    /// Sends a request and returns the status and body of the answer.
    func send(_ request: URLRequest) async throws -> (status: Int, body: Data)
}

/// ``Transport`` over `URLSession` (FoundationNetworking on Linux).
public struct URLSessionTransport: Transport {
    let session: URLSession

    /// A transport over `session` (default: an ephemeral session with a 30 s timeout).
    public init(session: URLSession? = nil) {
        if let session {
            self.session = session
        } else {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.timeoutIntervalForRequest = 30
            self.session = URLSession(configuration: configuration)
        }
    }

    public func send(_ request: URLRequest) async throws -> (status: Int, body: Data) {
        let (data, response) = try await session.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }
}
