import AssentCrypto
import AssentModel
import AssentTesting
import Foundation
import SQLKit
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// A request's writes committed together: authorize's counter and operation status in one PostgreSQL transaction,
/// or, in the usual case, in one conditional statement after one read.
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

    @Test(
        "An approval's read: every column of both tables, both rows in one statement, either absent",
        arguments: Backend.all)
    func approvalRead(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let columns = { (table: String) -> [String] in
            let query: SQLQueryString =
                backend == .sqlite
                ? "SELECT name AS c FROM pragma_table_info(\(bind: table))"
                : "SELECT column_name AS c FROM information_schema.columns WHERE table_name = \(bind: table)"
            return try await server.store.database.raw(query).all().map { try $0.decode(column: "c", as: String.self) }
                .sorted()
        }
        #expect(try await columns("activations") == SQLStore.activationColumns.sorted())
        #expect(try await columns("operations") == SQLStore.operationColumns.sorted())

        try await server.live { client in
            let device = try await server.activatedDevice(client)
            let operation = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            let (activation, read) = try await server.store.activationAndOperation(
                activationId: device.activationId, operationId: operation.id)
            #expect(activation != nil && read != nil)
            #expect(try await activation == server.store.activation(id: device.activationId))
            #expect(try await read == server.store.operation(id: operation.id))
            let (none, alone) = try await server.store.activationAndOperation(
                activationId: "nobody", operationId: operation.id)
            #expect(none == nil && alone?.id == operation.id)
            let (only, missing) = try await server.store.activationAndOperation(
                activationId: device.activationId, operationId: "nothing")
            #expect(only?.id == device.activationId && missing == nil)
        }
    }

    @Test(
        "An approval's write: the activation if unchanged, then the operation if unchanged, never the operation alone",
        arguments: Backend.all)
    func approvalWrite(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let store = server.store
        try await server.live { client in
            let device = try await server.activatedDevice(client)
            let created = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            let (read, readOperation) = try await store.activationAndOperation(
                activationId: device.activationId, operationId: created.id)
            var activation = try #require(read)
            var operation = try #require(readOperation)
            activation.counter += 1
            operation.status = .approved
            operation.activationId = device.activationId
            operation.updatedAt = operation.createdAt + 1

            // The activation changed since it was read: nothing is written, the operation stays pending.
            #expect(
                try await store.updateActivation(
                    activation, expectedVersion: activation.version - 1, then: operation,
                    expectedVersion: operation.version) == (false, false))
            #expect(try await store.operation(id: created.id)?.status == .pending)
            #expect(try await store.activation(id: device.activationId)?.version == activation.version)

            // The operation changed since: the activation is written, the operation is not.
            #expect(
                try await store.updateActivation(
                    activation, expectedVersion: activation.version, then: operation,
                    expectedVersion: operation.version + 1) == (true, false))
            let written = try #require(try await store.activation(id: device.activationId))
            #expect(written.version == activation.version + 1 && written.counter == activation.counter)
            #expect(try await store.operation(id: created.id)?.status == .pending)
            #expect(
                try await store.outboxItems(subject: created.id).allSatisfy { $0.event != "operation.status_changed" })

            // Both unchanged: both written, and the status change's outbox and audit rows with them.
            activation.counter += 1
            #expect(
                try await store.updateActivation(
                    activation, expectedVersion: written.version, then: operation,
                    expectedVersion: operation.version) == (true, true))
            let approved = try #require(try await store.operation(id: created.id))
            #expect(approved.status == .approved && approved.version == operation.version + 1)
            #expect(try await store.activation(id: device.activationId)?.counter == activation.counter)
            let events = try await store.outboxItems(subject: created.id).map(\.event)
            #expect(events.contains("operation.status_changed"), "\(events)")
            #expect(
                try await store.audit(activationId: device.activationId, userId: nil, limit: 100)
                    .contains { $0.type == "operation.approved" })
        }
    }

    @Test(
        "The usual approval is one read and one write; a wrong PIN, a replay, a proximity code, a finished operation take the commit",
        arguments: Backend.all)
    func directApproval(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let operations = Services(server.environment).operations
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let activationId = device.activationId
            func signed(_ id: String, _ data: String, wrongPIN: Bool = false) throws -> (
                OperationAuthorizeRequest, String, Data
            ) {
                let request = OperationAuthorizeRequest(id: id, data: data)
                let body = try MobileTokenJSON.encoder().encode(RequestEnvelope(request))
                let header = try device.authorization(
                    uriId: "/operation/authorize", body: body, type: .possessionKnowledge, wrongKnowledgeKey: wrongPIN)
                return (request, header, body)
            }
            func direct(_ signed: (OperationAuthorizeRequest, String, Data)) async throws -> Bool {
                try await operations.approveDirectly(signed.0, authorization: signed.1, body: signed.2)
            }
            func state() async throws -> ActivationRecord {
                try #require(try await server.store.activation(id: activationId))
            }

            let first = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            let before = try await state()
            let approval = try signed(first.id, first.data)
            #expect(try await direct(approval))
            #expect(try await server.operation(client, first.id).status == .approved)
            let after = try await state()
            #expect(after.counter == before.counter + 1 && after.version == before.version + 1)

            // The same signature again: a replay, answered by the commit; nothing written here.
            #expect(try await !direct(approval))
            #expect(try await state().version == after.version)
            // The operation is finished: a valid signature, but not the usual case.
            #expect(try await !direct(try signed(first.id, first.data)))
            #expect(try await state().version == after.version)
            // A wrong PIN.
            let second = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            #expect(try await !direct(try signed(second.id, second.data, wrongPIN: true)))
            let unchanged = try await state()
            #expect(unchanged.version == after.version && unchanged.failedAttempts == 0)
            // A proximity code: its rate limit is the commit's to count.
            let proximity = OperationAuthorizeRequest(
                id: second.id, data: second.data,
                proximityCheck: ProximityCheck(
                    otp: "12345678", type: .qrCode, timestampReceived: Date(), timestampSent: Date()))
            let proximityBody = try MobileTokenJSON.encoder().encode(RequestEnvelope(proximity))
            let proximityHeader = try device.authorization(uriId: "/operation/authorize", body: proximityBody)
            #expect(
                try await !operations.approveDirectly(
                    proximity, authorization: proximityHeader, body: proximityBody))
            #expect(try await state().version == after.version)

            // Through the endpoint the same refusals are answered as before, with their writes and audit rows.
            let refused = try await device.authorizeOperation(id: second.id, data: second.data, wrongPIN: true)
            #expect(refused.status == 401 && refused.errorCode == "POWERAUTH_AUTH_FAIL")
            #expect(try await state().failedAttempts == 1)
            #expect(try await device.authorizeOperation(id: second.id, data: second.data).status == 200)
            #expect(try await state().failedAttempts == 0)
        }
    }

    @Test(
        "PostgreSQL: the operation changes between the approval's read and its write: the counter is used up, the answer is the new status"
    )
    func operationChangedMeanwhile() async throws {
        guard Backend.all.contains(.postgres) else { return }
        let server = try await TestServer.make(.postgres)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let operation = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            let before = try #require(try await server.store.activation(id: device.activationId))
            let body = try MobileTokenJSON.encoder().encode(
                RequestEnvelope(OperationAuthorizeRequest(id: operation.id, data: operation.data)))
            let header = try device.authorization(uriId: "/operation/authorize", body: body)
            // Another transaction holds the operation's row: the approval reads it (a read does not wait), then its
            // write waits; meanwhile the operator's cancel is committed.
            let answer = try await server.store.inOneCommit { transaction in
                let held = try #require(transaction as? SQLStore)
                _ = try await held.database.raw("SELECT id FROM operations WHERE id = \(bind: operation.id) FOR UPDATE")
                    .all()
                let approval = Task {
                    try await client.send(
                        "POST", "/api/auth/token/app/operation/authorize",
                        headers: [AuthorizationHeader.name: header], body: body)
                }
                var waiting = false
                for _ in 0..<600 where !waiting {
                    try await Task.sleep(for: .milliseconds(10))
                    waiting =
                        try await server.store.database.raw(
                            "SELECT 1 AS w FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'WITH a AS%'"
                        ).first() != nil
                }
                #expect(waiting, "the approval's write never waited for the operation's row")
                var canceled = try #require(try await held.operation(id: operation.id))
                let version = canceled.version
                _ = canceled.cancel(reason: nil, by: "operator", now: canceled.createdAt + 1)
                canceled.updatedAt = canceled.createdAt + 1
                #expect(try await held.updateOperation(canceled, expectedVersion: version))
                return approval
            }.value
            #expect(answer.status == 400 && answer.errorCode == "OPERATION_ALREADY_CANCELED", "\(answer.text)")
            #expect(try await server.operation(client, operation.id).status == .canceled)
            // The signature was valid and its counter is used up, as when the operation had been read canceled.
            let after = try #require(try await server.store.activation(id: device.activationId))
            #expect(after.counter == before.counter + 1)
        }
    }
}
