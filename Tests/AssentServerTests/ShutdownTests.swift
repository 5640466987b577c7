import AssentModel
import AssentTesting
import Foundation
import Synchronization
import Testing

@testable import AssentServerTesting

@Suite("Stopping the server while pages and devices hold live streams")
struct ShutdownTests {
    @Test(
        "A graceful stop ends every open event stream cleanly and at once; the server is down within seconds",
        arguments: Backend.all)
    func stopsWithOpenStreams(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let streams = Mutex<[EventStreamReader]>([])
        let stopRequested = Mutex<ContinuousClock.Instant?>(nil)
        let stop = GracefulStop()
        try await server.live(stopDeadline: .seconds(60), stopReport: stop) { client in
            // A device's stream, the waiting page of an operation with a user (woken by its events) and of one
            // without (which looks every few seconds).
            var device = try await server.activatedDevice(client)
            let token = try await device.createToken()
            var opened = [try await EventStreamTests.open(device, token: token)]
            for userId in ["alice", nil] as [String?] {
                let operation = try await server.createOperation(
                    client, try OperationFixtures.payment(userId: userId))
                let link = try await server.operatorCall(
                    client, "POST", "/api/v1/operations/\(operation.id)/approval-link",
                    body: try OperatorJSON.encoder().encode(ApprovalLinkRequest(returnUrl: "https://bank.example/")),
                    as: ApprovalLinkResponse.self)
                let url = try #require(URLComponents(string: link.url))
                opened.append(
                    try await EventStreamReader(base: client.base, path: "\(url.path)/events?\(url.query ?? "")"))
            }
            for stream in opened {
                #expect(stream.status == 200)
                try await stream.wait("the stream to start") { _ in !stream.text.isEmpty }
            }
            #expect(opened.allSatisfy { !$0.hasEnded })
            streams.withLock { $0 = opened }
            stopRequested.withLock { $0 = .now }
        }
        // `live` stops the server gracefully, and would cancel it after 60 s — which cuts the streams instead of
        // ending them. A quiet machine stops in well under a second, a loaded one (the whole suite on two cores) in
        // several; how long is a figure for the benchmarks, not this test: what is asserted is that the stop was
        // graceful and ended every stream cleanly.
        let stopped = ContinuousClock.now - (try #require(stopRequested.withLock { $0 }))
        #expect(!stop.wasCancelled, "the server did not stop gracefully within 60 s (\(stopped))")
        for stream in streams.withLock({ $0 }) {
            try await stream.waitForEnd(seconds: 5)
            #expect(stream.hasEndedCleanly, "a stream was cut instead of ended: \(stream.text.prefix(80))")
        }
    }
}
