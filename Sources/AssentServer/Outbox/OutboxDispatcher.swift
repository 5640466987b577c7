import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Tracing

/// How the outbox retries.
public struct OutboxPolicy: Sendable {
    /// Attempts before a message is abandoned (default 12, about 1.5 hours with the default back-off).
    public var maxAttempts: Int = 12
    /// The delay after the first failure, doubled after each further one (default 5 s).
    public var initialBackoff: Duration = .seconds(5)
    /// The longest delay between attempts (default 30 minutes).
    public var maximumBackoff: Duration = .seconds(1800)
    /// How often the outbox is read when nothing signals new messages (default 1 s).
    public var pollInterval: Duration = .seconds(1)
    /// How long a lease lasts: another process may take the message over after it (default 60 s).
    public var leaseDuration: Duration = .seconds(60)
    /// How many messages are delivered at once (default 32).
    public var concurrency: Int = 32

    public init() {}

    /// The delay before attempt `attempts + 1`.
    func backoff(afterAttempts attempts: Int) -> Duration {
        let factor = 1 << min(max(attempts - 1, 0), 20)
        return min(initialBackoff * factor, maximumBackoff)
    }
}

extension Duration {
    /// Whole milliseconds.
    var millis: Millis { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}

/// Delivers the durable outbox: reads due messages of the channels it has senders for, leases each (so several
/// server processes never send one message at the same time), hands it to the channel's sender, and records the
/// delivery or schedules a retry with exponential back-off. Messages live in the database until delivered or
/// abandoned, so a restart loses none. A write that adds messages wakes the dispatcher at once
/// (``ServerEnvironment/outboxWakeup``); otherwise it reads the outbox every ``OutboxPolicy/pollInterval``.
struct OutboxDispatcher: Service {
    /// The part of the store this sees.
    let store: any OutboxStore
    let clock: WallClock
    let logger: Logger
    /// Wakes this dispatcher after a write that added messages.
    let wakeup: Wakeup
    let senders: [OutboxChannel: any OutboxSender]
    let policy: OutboxPolicy
    /// Identifies this process's leases.
    let owner = UUID().uuidString.lowercased()

    init(
        store: any OutboxStore, clock: WallClock, logger: Logger, wakeup: Wakeup, senders: [any OutboxSender],
        policy: OutboxPolicy
    ) {
        self.store = store
        self.clock = clock
        self.logger = logger
        self.wakeup = wakeup
        self.senders = Dictionary(senders.map { ($0.channel, $0) }, uniquingKeysWith: { first, _ in first })
        self.policy = policy
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    while try await deliverDue() > 0, !Task.isCancelled {}
                } catch {
                    logger.warning(
                        "outbox read failed", metadata: ["error": "\(String(reflecting: error))"])
                }
                await wakeup.wait(upTo: policy.pollInterval)
            }
        }
        // Messages this process leased but did not finish are free for another process at once.
        do {
            let released = try await store.releaseOutboxLeases(owner: owner)
            if released > 0 {
                logger.info("outbox leases released", metadata: ["outbox.count": "\(released)"])
            }
        } catch {
            logger.warning(
                "outbox leases not released", metadata: ["error": "\(String(reflecting: error))"])
        }
        for sender in senders.values { await sender.shutdown() }
    }

    /// Delivers the messages due now (one batch); returns how many it attempted.
    @discardableResult
    func deliverDue() async throws -> Int {
        let now = clock.millis
        var channels: [OutboxChannel] = []
        for (channel, sender) in senders where await sender.isReady() { channels.append(channel) }
        guard !channels.isEmpty else { return 0 }
        let leased = try await store.claimOutboxItems(
            channels: channels, owner: owner, now: now, until: now + policy.leaseDuration.millis,
            limit: policy.concurrency * 4)
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            for item in leased {
                if running >= policy.concurrency {
                    await group.next()
                    running -= 1
                }
                group.addTask { await attempt(item) }
                running += 1
            }
        }
        return leased.count
    }

    private func attempt(_ item: OutboxItem) async {
        guard let sender = senders[item.channel] else { return }
        // Each attempt is a trace of its own when requests are traced (the delivery's HTTP call inside it).
        let outcome = await withSpan("outbox deliver \(item.channel)", ofKind: .client) { span in
            span.attributes["assent.outbox.channel"] = "\(item.channel)"
            span.attributes["assent.outbox.event"] = "\(item.event)"
            span.attributes["assent.outbox.attempt"] = item.attempts + 1
            let outcome = await sender.deliver(item)
            if case .delivered = outcome {} else { span.setStatus(SpanStatus(code: .error)) }
            return outcome
        }
        let attempts = item.attempts + 1
        let now = clock.millis
        let result: OutboxAttempt
        switch outcome {
        case .delivered:
            result = .delivered
        case .retry(let error, let after) where attempts < policy.maxAttempts:
            let delay = max(after ?? .zero, policy.backoff(afterAttempts: attempts))
            result = .retry(error: error, at: now + delay.millis)
        case .retry(let error, _), .failed(let error):
            result = .abandoned(error: error)
        }
        var metadata: Logger.Metadata = [
            "outbox.id": "\(item.id)", "outbox.channel": "\(item.channel)", "outbox.event": "\(item.event)",
            "attempts": "\(attempts)",
        ]
        switch result {
        case .delivered: break
        case .retry(let error, _):
            metadata["error"] = "\(error)"
            logger.info("outbox delivery failed, will retry", metadata: metadata)
        case .abandoned(let error):
            metadata["error"] = "\(error)"
            logger.warning("outbox message abandoned", metadata: metadata)
        }
        do {
            try await store.recordOutboxAttempt(
                id: item.id, owner: owner, attempts: attempts, result: result, now: now)
        } catch {
            logger.warning(
                "outbox record failed", metadata: ["outbox.id": "\(item.id)", "error": "\(String(reflecting: error))"])
        }
    }
}

/// How an attempt is recorded.
public enum OutboxAttempt: Sendable, Equatable {
    case delivered
    case retry(error: String, at: Millis)
    case abandoned(error: String)
}

/// Wakes the outbox dispatcher of this process when a write added messages, so a push leaves within milliseconds
/// instead of at the next poll. One waiter; a signal with nobody waiting is kept for the next wait.
public final class Wakeup: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    public init() {}

    /// Wakes the waiter, or the next one to wait.
    public func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = true
            return nil
        }
        waiter?.resume()
    }

    /// Returns on a signal, after `timeout`, or when the task is cancelled.
    func wait(upTo timeout: Duration) async {
        let timer = Task { [weak self] in
            // Cancelled when the wait ends early: then it must not signal, or the next wait would return at once.
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.signal()
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            signal()
        }
        state.withLock { $0.pending = false }
    }
}
