import Testing

@testable import AssentServer
@testable import AssentServerTesting

@Suite("Wakeup: the signal the outbox and the event streams wait on")
struct WakeupTests {
    @Test("A wait woken by a signal leaves nothing behind: the next wait lasts its whole timeout")
    func noSpuriousWakeups() async throws {
        let wakeup = Wakeup()
        wakeup.signal()
        await wakeup.wait(upTo: .seconds(60))  // a signal before the wait: returns at once
        let signaller = Task {
            try await Task.sleep(for: .milliseconds(50))
            wakeup.signal()
        }
        await wakeup.wait(upTo: .seconds(60))
        try await signaller.value
        // The first wait's timer was cancelled when the signal came; it must not count as a signal now.
        for _ in 0..<3 {
            let start = ContinuousClock.now
            await wakeup.wait(upTo: .milliseconds(300))
            #expect(ContinuousClock.now - start >= .milliseconds(290))
        }
    }
}
