import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// Runs a server application for the duration of `body`, passing the port it listens on, and stops it with a
/// graceful shutdown. Cancelling a SwiftNIO server task instead can trap when a connection was accepted but not
/// yet served ("Deinited NIOAsyncWriter without calling finish()", swift-nio#3481); a shutdown that does not end
/// within `stopDeadline` (10 s) is cancelled after all, which `report` records.
func withRunningServer<App: ApplicationProtocol, T: Sendable>(
    _ app: App, ports: AsyncStream<Int>, stopDeadline: Duration = .seconds(10), report: GracefulStop? = nil,
    _ body: (Int) async throws -> T
) async throws -> T {
    var logger = Logger(label: "assent.test.server")
    logger.logLevel = .critical
    let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
    let running = Task { try await group.run() }
    func stop() async {
        await group.triggerGracefulShutdown()
        await withTaskGroup(of: Void.self) { waiters in
            waiters.addTask { _ = await running.result }
            waiters.addTask {
                guard (try? await Task.sleep(for: stopDeadline)) != nil else { return }
                report?.recordCancelled()
                running.cancel()
            }
            await waiters.next()
            waiters.cancelAll()
        }
        _ = await running.result
    }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next() else {
        await stop()
        throw ServerDidNotStart()
    }
    do {
        let result = try await body(port)
        await stop()
        return result
    } catch {
        await stop()
        throw error
    }
}

struct ServerDidNotStart: Error, CustomStringConvertible {
    var description: String { "the test server did not start" }
}

/// Whether a test server's graceful stop had to be cancelled at its deadline (which cuts what it was ending).
final class GracefulStop: Sendable {
    private let cancelled = Mutex(false)

    func recordCancelled() { cancelled.withLock { $0 = true } }

    var wasCancelled: Bool { cancelled.withLock { $0 } }
}
