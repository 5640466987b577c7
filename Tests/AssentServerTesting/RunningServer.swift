import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

/// Runs a server application for the duration of `body`, passing the port it listens on, and stops it with a
/// graceful shutdown. Cancelling a SwiftNIO server task instead can trap when a connection was accepted but not
/// yet served ("Deinited NIOAsyncWriter without calling finish()", swift-nio#3481); a shutdown that does not end
/// within 10 s is cancelled after all.
func withRunningServer<App: ApplicationProtocol, T: Sendable>(
    _ app: App, ports: AsyncStream<Int>, _ body: (Int) async throws -> T
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
                try? await Task.sleep(for: .seconds(10))
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
