import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

@Suite("Signatures: look-ahead, blocking, replay and races")
struct ServerSignatureTests {
    /// Sends `count` copies of one signed request at once, spread over `clients`, and returns the statuses.
    static func sendConcurrently(count: Int, header: String, body: Data, clients: [HTTPClient]) async throws -> [Int] {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<count {
                let client = clients[index % clients.count]
                group.addTask {
                    try await client.send(
                        "POST", "/pa/v3/signature/validate", headers: [AuthorizationHeader.name: header], body: body
                    ).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
    }

    @Test("Signatures at the edge of the look-ahead: 19 steps ahead passes, 20 fails", arguments: Backend.all)
    func lookAheadEdge(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            device.counter = device.counter!.advanced(by: 19)
            #expect(try await device.validateSignature().status == 200)
            #expect(try await device.status().counterByte == 20)
            device.counter = device.counter!.advanced(by: 20)
            #expect(try await device.validateSignature().status == 401)
            let blob = try await device.status()
            #expect(blob.failedAttempts == 1)
        }
    }

    @Test("Five wrong PINs block; the operator unblocks; a good PIN then resets the count", arguments: Backend.all)
    func blockingAndUnblocking(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            for attempt in 1...5 {
                let response = try await device.validateSignature(wrongPIN: true)
                #expect(response.status == 401)
                #expect(response.errorCode == "POWERAUTH_AUTH_FAIL")
                let blob = try await device.status()
                #expect(Int(blob.failedAttempts) == attempt)
                #expect(blob.state == (attempt == 5 ? .blocked : .active))
            }
            #expect(try await device.validateSignature().status == 401)
            let info = try await server.operatorCall(
                client, "GET", "/api/v1/activations/\(device.activationId)", as: ActivationInfo.self)
            #expect(info.status == "BLOCKED" && info.blockedReason == "MAX_FAILED_ATTEMPTS")

            _ = try await server.operatorCall(
                client, "POST", "/api/v1/activations/\(device.activationId)/unblock", as: ActivationInfo.self)
            #expect(try await device.status().failedAttempts == 0)
            #expect(try await device.validateSignature(wrongPIN: true).status == 401)
            // Rejected signatures left the server's counter behind the device's, inside the look-ahead.
            #expect(try await device.validateSignature().status == 200)
            #expect(try await device.status().failedAttempts == 0)

            _ = try await server.operatorCall(
                client, "POST", "/api/v1/activations/\(device.activationId)/block",
                body: try OperatorJSON.encoder().encode(BlockActivationRequest(reason: "LOST")), as: ActivationInfo.self
            )
            #expect(try await device.status().state == .blocked)
            let audit = try await server.operatorCall(
                client, "GET", "/api/v1/audit?activationId=\(device.activationId)", as: AuditList.self)
            let types = Set(audit.events.map(\.type))
            #expect(
                types.isSuperset(of: [
                    "activation.created", "signature.failed", "activation.blocked", "activation.unblocked",
                ]))
        }
    }

    @Test("A replayed signed request is rejected", arguments: Backend.all)
    func replay(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let body = Data(#"{"pay":1}"#.utf8)
            let header = try device.authorization(uriId: "/pa/signature/validate", body: body)
            let first = try await client.send(
                "POST", "/pa/v3/signature/validate", headers: [AuthorizationHeader.name: header], body: body)
            let second = try await client.send(
                "POST", "/pa/v3/signature/validate", headers: [AuthorizationHeader.name: header], body: body)
            #expect(first.status == 200)
            #expect(second.status == 401)
        }
    }

    @Test(
        "Copies of a used signature are refused without counting as failures; wrong PINs at a used counter still count",
        arguments: Backend.all)
    func replayIsNotAFailure(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let start = device.counter!
            let body = Data(#"{"pay":4}"#.utf8)
            let header = try device.authorization(uriId: "/pa/signature/validate", body: body)
            let send = {
                try await client.send(
                    "POST", "/pa/v3/signature/validate", headers: [AuthorizationHeader.name: header], body: body)
            }
            #expect(try await send().status == 200)
            // Twice the blocking limit of copies: each is refused, none is a failed attempt.
            for _ in 0..<10 {
                let replay = try await send()
                #expect(replay.status == 401)
                #expect(replay.errorCode == "POWERAUTH_AUTH_FAIL")
            }
            var blob = try await device.status()
            #expect(blob.failedAttempts == 0 && blob.state == .active)

            // A device three steps ahead: the skipped values are used up too.
            device.counter = start.advanced(by: 4)
            #expect(try await device.validateSignature().status == 200)
            device.counter = start.advanced(by: 2)
            #expect(try await device.validateSignature().status == 401)
            blob = try await device.status()
            #expect(blob.failedAttempts == 0 && blob.counterByte == 5)

            // A wrong PIN at a used counter value is a guess, not a replay.
            device.counter = start.advanced(by: 1)
            #expect(try await device.validateSignature(wrongPIN: true).status == 401)
            #expect(try await device.status().failedAttempts == 1)

            let audit = try await server.operatorCall(
                client, "GET", "/api/v1/audit?activationId=\(device.activationId)", as: AuditList.self)
            #expect(audit.events.filter { $0.type == "signature.replayed" }.count == 11)
            #expect(audit.events.filter { $0.type == "signature.failed" }.count == 1)
        }
    }

    @Test(
        "Copies of a used approval signature count against neither the activation nor the operation",
        arguments: Backend.all)
    func replayedApprovalIsNotAFailure(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let operation = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            // A valid signature over other data: the operation counts it as a failed approval, once.
            let body = try MobileTokenJSON.encoder().encode(
                RequestEnvelope(OperationAuthorizeRequest(id: operation.id, data: "A1*A1CZK")))
            let header = try device.authorization(uriId: "/operation/authorize", body: body)
            for attempt in 0..<4 {
                let answer = try await client.send(
                    "POST", "/api/auth/token/app/operation/authorize", headers: [AuthorizationHeader.name: header],
                    body: body)
                // The first is other data, correctly signed; its copies are replays.
                #expect(answer.status == (attempt == 0 ? 400 : 401), "\(attempt)")
                #expect(answer.errorCode == (attempt == 0 ? "OPERATION_DATA_MISMATCH" : "POWERAUTH_AUTH_FAIL"))
            }
            #expect(try await server.operation(client, operation.id).failedAttempts == 1)
            #expect(try await device.status().failedAttempts == 0)
        }
    }

    @Test("50 concurrent requests carrying the same signature: exactly one is accepted", arguments: Backend.all)
    func concurrentReplay(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let body = Data(#"{"pay":2}"#.utf8)
            let header = try device.authorization(uriId: "/pa/signature/validate", body: body)
            let statuses = try await Self.sendConcurrently(count: 50, header: header, body: body, clients: [client])
            #expect(statuses.filter { $0 == 200 }.count == 1)
            #expect(statuses.filter { $0 == 401 }.count == 49)
            // The 49 copies are replays, not wrong PINs: the activation is neither blocked nor one failure closer.
            let blob = try await device.status()
            #expect(blob.counterByte == 1 && blob.failedAttempts == 0 && blob.state == .active)
        }
    }

    @Test("Two servers sharing one PostgreSQL database accept one copy of a signature between them")
    func concurrentReplayAcrossServers() async throws {
        guard Backend.all.contains(.postgres) else { return }
        let first = try await TestServer.make(.postgres)
        try await first.liveWithSibling { firstClient, secondClient in
            var device = try await first.activatedDevice(firstClient)
            let body = Data(#"{"pay":3}"#.utf8)
            for round in 0..<5 {
                let header = try device.authorization(uriId: "/pa/signature/validate", body: body)
                let statuses = try await Self.sendConcurrently(
                    count: 20, header: header, body: body, clients: [firstClient, secondClient])
                #expect(statuses.filter { $0 == 200 }.count == 1, "round \(round)")
            }
            #expect(try await device.status().failedAttempts == 0)
        }
    }
}
