import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

@Suite("The outbox")
struct OutboxTests {
    @Test(
        "Processes claiming at once never get the same message, and together get every due one", arguments: Backend.all)
    func concurrentClaims(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let other = try await server.sibling()
        defer { Task { await other.shutdown() } }
        let expected: Set<Int64> = try await server.live { client in
            var expected: Set<Int64> = []
            for _ in 0..<60 {
                let operation = try await server.createOperation(client, try OperationFixtures.payment(userId: "bob"))
                _ = try await server.operatorCall(
                    client, "POST", "/api/v1/operations/\(operation.id)/cancel", as: OperationInfo.self)
                let items = try await server.store.outboxItems(subject: operation.id)
                #expect(items.map(\.channel) == [.webhook])
                expected.formUnion(items.map(\.id))
            }
            return expected
        }
        let now = Date().millis + 1000
        let claimed = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for (index, store) in [server.store, other.store, server.store, other.store].enumerated() {
                group.addTask {
                    var mine: [Int64] = []
                    while true {
                        let batch = try await store.claimOutboxItems(
                            channels: [.webhook], owner: "process-\(index)", now: now, until: now + 60_000, limit: 7)
                        if batch.isEmpty { return mine }
                        mine += batch.map(\.id)
                    }
                }
            }
            return try await group.reduce(into: [[Int64]]()) { $0.append($1) }
        }
        let all = claimed.flatMap { $0 }
        #expect(all.count == Set(all).count, "a message was claimed twice")
        #expect(Set(all) == expected)
        // Leased messages are not due again until the lease ends; after it, they are.
        #expect(
            try await server.store.claimOutboxItems(
                channels: [.webhook], owner: "late", now: now + 1, until: now + 2, limit: 100
            ).isEmpty)
        #expect(
            try await server.store.claimOutboxItems(
                channels: [.webhook], owner: "late", now: now + 60_001, until: now + 60_002, limit: 100
            ).count == expected.count)
    }

    @Test(
        "A stopping process gives up its leases: another takes the messages at once, not after the lease",
        arguments: Backend.all)
    func releasedLeases(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let ids: [Int64] = try await server.live { client in
            var ids: [Int64] = []
            for _ in 0..<3 {
                let operation = try await server.createOperation(client, try OperationFixtures.payment(userId: "bob"))
                _ = try await server.operatorCall(
                    client, "POST", "/api/v1/operations/\(operation.id)/cancel", as: OperationInfo.self)
                ids += try await server.store.outboxItems(subject: operation.id).map(\.id)
            }
            return ids
        }
        let now = Date().millis + 1000
        let leased = try await server.store.claimOutboxItems(
            channels: [.webhook], owner: "stopping", now: now, until: now + 60_000, limit: 100)
        #expect(Set(leased.map(\.id)) == Set(ids))
        // One of them was delivered before the stop: giving up the leases leaves it delivered.
        try await server.store.recordOutboxAttempt(
            id: ids[0], owner: "stopping", attempts: 1, result: .delivered, now: now)
        #expect(try await server.store.releaseOutboxLeases(owner: "other") == 0)
        #expect(try await server.store.releaseOutboxLeases(owner: "stopping") == ids.count - 1)
        let taken = try await server.store.claimOutboxItems(
            channels: [.webhook], owner: "next", now: now + 1, until: now + 60_000, limit: 100)
        #expect(Set(taken.map(\.id)) == Set(ids.dropFirst()))
    }
}
