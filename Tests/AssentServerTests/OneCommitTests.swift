import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

/// A request's writes committed together: authorize's counter and operation status in one PostgreSQL transaction.
@Suite("One commit per request")
struct OneCommitTests {
    struct Abandoned: Error {}

    @Test("PostgreSQL: a thrown error undoes every write of the commit; so does a failed statement that was caught")
    func rollback() async throws {
        guard Backend.all.contains(.postgres) else { return }
        let server = try await TestServer.make(.postgres)
        defer { Task { await server.shutdown() } }
        let store: any AssentStore = server.store
        await #expect(throws: Abandoned.self) {
            try await store.inOneCommit { store in
                try await store.putTemplate(applicationId: server.application.id, name: "first", body: "{}", at: 1)
                try await store.putTemplate(applicationId: server.application.id, name: "second", body: "{}", at: 1)
                // Inside the transaction its own writes are visible.
                #expect(try await store.template(applicationId: server.application.id, name: "first") != nil)
                throw Abandoned()
            }
        }
        #expect(try await store.template(applicationId: server.application.id, name: "first") == nil)
        #expect(try await store.template(applicationId: server.application.id, name: "second") == nil)

        // A failed statement aborts the transaction even when the error is caught: the commit must not claim success.
        await #expect(throws: AssentServerError.self) {
            try await store.inOneCommit { store in
                try await store.putTemplate(applicationId: server.application.id, name: "third", body: "{}", at: 1)
                // The application exists already: the insert fails on its primary key.
                try? await store.insertApplication(server.application)
            }
        }
        #expect(try await store.template(applicationId: server.application.id, name: "third") == nil)

        let kept = try await store.inOneCommit { store in
            try await store.putTemplate(applicationId: server.application.id, name: "fourth", body: "{}", at: 1)
            return "committed"
        }
        #expect(kept == "committed")
        #expect(try await store.template(applicationId: server.application.id, name: "fourth") != nil)
    }

    @Test(
        "A refused approval still commits what it wrote: the counter moved, the failed attempt counts",
        arguments: Backend.all)
    func refusalCommits(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let before = try #require(try await server.store.activation(id: device.activationId))
            let operation = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            let refused = try await device.authorizeOperation(id: operation.id, data: "A1*A999CZK")
            #expect(refused.status == 400 && refused.errorCode == "OPERATION_DATA_MISMATCH")
            let after = try #require(try await server.store.activation(id: device.activationId))
            // The signature was valid: its counter is used up even though the approval was refused.
            #expect(after.counter == before.counter + 1)
            #expect(after.failedAttempts == 0)
            #expect(try await server.operation(client, operation.id).failedAttempts == 1)
            #expect(try await device.authorizeOperation(id: operation.id, data: operation.data).status == 200)
            #expect(try await server.operation(client, operation.id).status == .approved)
        }
    }
}
