import Foundation
import Synchronization

/// The in-process side of the one event stream: live streams subscribe per user; a write that added device
/// events for a user (this process's, or another's announced by PostgreSQL `NOTIFY`) wakes that user's
/// subscribers, which then read the new events from the database.
public final class EventHub: Sendable {
    private let subscribers = Mutex<[String: [ObjectIdentifier: Wakeup]]>([:])

    public init() {}

    /// A subscription to `userId`'s events; cancel it when the stream ends.
    func subscribe(userId: String) -> Subscription {
        let wakeup = Wakeup()
        subscribers.withLock { $0[userId, default: [:]][ObjectIdentifier(wakeup)] = wakeup }
        return Subscription(hub: self, userId: userId, wakeup: wakeup)
    }

    /// Wakes every subscriber of `userId`.
    public func publish(userId: String) {
        let wakeups = subscribers.withLock { $0[userId].map { Array($0.values) } ?? [] }
        for wakeup in wakeups { wakeup.signal() }
    }

    /// Wakes every subscriber (after a lost notification connection, when anything may have been missed).
    func publishAll() {
        let wakeups = subscribers.withLock { $0.values.flatMap(\.values) }
        for wakeup in wakeups { wakeup.signal() }
    }

    /// How many streams are subscribed.
    public var subscriberCount: Int { subscribers.withLock { $0.values.reduce(0) { $0 + $1.count } } }

    fileprivate func remove(_ subscription: Subscription) {
        subscribers.withLock { all in
            all[subscription.userId]?[ObjectIdentifier(subscription.wakeup)] = nil
            if all[subscription.userId]?.isEmpty == true { all[subscription.userId] = nil }
        }
    }

    /// One stream's subscription.
    struct Subscription: Sendable {
        let hub: EventHub
        let userId: String
        let wakeup: Wakeup

        /// Returns when an event may have arrived, or after `timeout`.
        func next(upTo timeout: Duration) async { await wakeup.wait(upTo: timeout) }

        func cancel() { hub.remove(self) }
    }
}
