import Foundation
import Logging
import ServiceLifecycle

/// Carries device events between server processes sharing PostgreSQL: listens on the channel the event triggers
/// notify and wakes this process's streams of the announced user. After the listening connection breaks it
/// wakes every stream (they read what they may have missed from the event log) and listens again.
struct EventFanOut: Service {
    /// The part of the store this sees.
    let store: any DeviceEventStore
    let events: EventHub
    let logger: Logger

    func run() async throws {
        let events = events
        await cancelWhenGracefulShutdown {
            var delay = Duration.milliseconds(500)
            while !Task.isCancelled {
                do {
                    try await store.listenForDeviceEvents { userId in
                        events.publish(userId: userId)
                    }
                    delay = .milliseconds(500)
                } catch {
                    if Task.isCancelled { break }
                    logger.warning(
                        "event notifications lost; listening again",
                        metadata: ["error": "\(String(reflecting: error))"])
                }
                events.publishAll()
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(30))
            }
        }
    }
}
