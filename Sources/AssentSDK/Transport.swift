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

    /// Sends the request; cancelling the calling task cancels the HTTP request at once.
    public func send(_ request: URLRequest) async throws -> (status: Int, body: Data) {
        let running = RunningRequest()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        continuation.resume(throwing: error)
                    } else {
                        continuation.resume(
                            returning: ((response as? HTTPURLResponse)?.statusCode ?? 0, data ?? Data()))
                    }
                }
                running.start(task)
            }
        } onCancel: {
            running.cancel()
        }
    }
}

/// The data task of one request, cancellable from the task's cancellation handler (which may run before the
/// task exists).
private final class RunningRequest: @unchecked Sendable {
    private let lock = NSLock()
    private var task: URLSessionDataTask?
    private var cancelled = false

    func start(_ task: URLSessionDataTask) {
        lock.lock()
        self.task = task
        let cancelled = cancelled
        lock.unlock()
        task.resume()
        if cancelled { task.cancel() }
    }

    func cancel() {
        lock.lock()
        cancelled = true
        let task = task
        lock.unlock()
        task?.cancel()
    }
}
