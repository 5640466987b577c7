import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How the SDK talks HTTP. The default is ``URLSessionTransport``; tests or apps with their own networking supply
/// another.
public protocol Transport: Sendable {
    /// Sends a request and returns the status and body of the answer.
    func send(_ request: URLRequest) async throws -> (status: Int, body: Data)
    /// Sends a request and returns the status once it arrives, and the body as it arrives (a live event stream).
    /// Ending the iteration of the body cancels the request.
    func stream(_ request: URLRequest) async throws -> (status: Int, body: AsyncThrowingStream<Data, any Error>)
}

extension Transport {
    /// Transports without streaming: live updates fall back to polling.
    public func stream(_ request: URLRequest) async throws -> (status: Int, body: AsyncThrowingStream<Data, any Error>)
    {
        throw AssentError(.network, "This transport cannot stream responses.")
    }
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

extension URLSessionTransport {
    /// Streams the answer through a session of its own whose delegate hands over each piece as it arrives; the
    /// request's idle timeout is 60 s (the server's heartbeats come every 15 s).
    public func stream(_ request: URLRequest) async throws -> (status: Int, body: AsyncThrowingStream<Data, any Error>)
    {
        let (body, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
        let delegate = StreamingDelegate(continuation: continuation)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 60
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        let task = session.dataTask(with: request)
        continuation.onTermination = { _ in
            task.cancel()
            session.invalidateAndCancel()
        }
        task.resume()
        let status = try await withTaskCancellationHandler {
            try await delegate.status()
        } onCancel: {
            continuation.finish(throwing: CancellationError())
            task.cancel()
        }
        return (status, body)
    }
}

/// Receives one streamed answer: the status once, then each piece of the body.
///
/// `@unchecked Sendable`: URLSession calls it on its delegate queue while the caller awaits the status; every
/// mutable field is read and written under `lock`.
private final class StreamingDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private let continuation: AsyncThrowingStream<Data, any Error>.Continuation
    private var statusCode: Int?
    private var failure: (any Error)?
    private var waiter: CheckedContinuation<Int, any Error>?

    init(continuation: AsyncThrowingStream<Data, any Error>.Continuation) {
        self.continuation = continuation
    }

    func status() async throws -> Int {
        try await withCheckedThrowingContinuation { waiter in
            lock.lock()
            if let statusCode {
                lock.unlock()
                waiter.resume(returning: statusCode)
            } else if let failure {
                lock.unlock()
                waiter.resume(throwing: failure)
            } else {
                self.waiter = waiter
                lock.unlock()
            }
        }
    }

    private func settle(status: Int?, error: (any Error)?) {
        lock.lock()
        guard statusCode == nil, failure == nil else {
            lock.unlock()
            return
        }
        statusCode = status
        failure = status == nil ? (error ?? URLError(.badServerResponse)) : nil
        let waiter = waiter
        self.waiter = nil
        lock.unlock()
        if let status {
            waiter?.resume(returning: status)
        } else {
            waiter?.resume(throwing: failure ?? URLError(.badServerResponse))
        }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        settle(status: (response as? HTTPURLResponse)?.statusCode ?? 0, error: nil)
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        continuation.yield(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        settle(status: nil, error: error)
        continuation.finish(throwing: error)
        session.finishTasksAndInvalidate()
    }
}
