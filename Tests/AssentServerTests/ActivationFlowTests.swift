import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

/// Full device flows over real HTTP on loopback, against SQLite and PostgreSQL.
@Suite("Activation lifecycle over HTTP")
struct ActivationFlowTests {
    @Test(
        "An activation whose code expired unused is removed (reason ACTIVATION_CODE_EXPIRED, audited); its code is gone",
        arguments: Backend.all)
    func expiredCode(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let unused = try await server.createActivation(client)
            let used = try await server.createActivation(client, userId: "bob")
            var device = TestDevice(client: client, configuration: try server.configuration)
            try await device.activate(code: used.activationCode)
            let service = Services(server.environment).activations
            #expect(try await service.expireUnusedCodes() == 0)
            server.clock.advance(by: 301)
            #expect(try await service.expireUnusedCodes() == 1)
            #expect(try await service.expireUnusedCodes() == 0)
            let info = try await server.operatorCall(
                client, "GET", "/api/v1/activations/\(unused.activationId)", as: ActivationInfo.self)
            #expect(info.status == "REMOVED" && info.blockedReason == "ACTIVATION_CODE_EXPIRED")
            let activeStill = try await server.operatorCall(
                client, "GET", "/api/v1/activations/\(used.activationId)", as: ActivationInfo.self)
            #expect(activeStill.status == "ACTIVE")
            let audit = try await server.operatorCall(
                client, "GET", "/api/v1/audit?activationId=\(unused.activationId)", as: AuditList.self)
            #expect(audit.events.contains { $0.type == "activation.expired" && $0.actor == "system" })
            // The code cannot be used any more.
            var late = TestDevice(client: client, configuration: try server.configuration)
            await #expect(throws: (any Error).self) { try await late.activate(code: unused.activationCode) }
        }
    }

    @Test(
        "A device activates (auto commit), signs, reads its status, gets a token and the vault key, and removes itself",
        arguments: Backend.all)
    func fullFlow(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let created = try await server.createActivation(client)
            var device = TestDevice(client: client, configuration: try server.configuration)
            try await device.activate(code: created.activationCode)
            #expect(device.activationId == created.activationId)

            let info = try await server.operatorCall(
                client, "GET", "/api/v1/activations/\(device.activationId)", as: ActivationInfo.self)
            #expect(info.status == "ACTIVE")
            #expect(info.fingerprint == device.fingerprint)
            #expect(info.activationName == "Test phone" && info.platform == "linux")

            #expect(try await device.validateSignature().status == 200)
            let blob = try await device.status()
            #expect(blob.state == .active)
            #expect(blob.counterByte == 1)
            #expect(try blob.counterDistance(from: device.counter!, transportKey: device.keys!.transport) == 0)

            let token = try await device.createToken()
            #expect(Data(base64Encoded: token.tokenSecret)?.count == 16)
            #expect(try await device.unlockVault() == device.keys!.vault)

            let removeHeader = try device.authorization(uriId: "/pa/activation/remove", body: Data())
            let removed = try await client.send(
                "POST", "/pa/v3/activation/remove", headers: [AuthorizationHeader.name: removeHeader])
            #expect(removed.status == 200)
            #expect(try await device.status().state == .removed)
            #expect(try await device.validateSignature().status == 401)
        }
    }

    @Test("Manual commit: the device waits in PENDING_COMMIT until the operator commits", arguments: Backend.all)
    func manualCommit(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let created = try await server.createActivation(client, commitMode: "manual")
            var device = TestDevice(client: client, configuration: try server.configuration)
            try await device.activate(code: created.activationCode)
            #expect(try await device.status().state == .pendingCommit)
            #expect(try await device.validateSignature().status == 401)
            // The rejected signature did not move the server's counter; the next one is inside the look-ahead.
            let committed = try await server.operatorCall(
                client, "POST", "/api/v1/activations/\(device.activationId)/commit", as: ActivationInfo.self)
            #expect(committed.status == "ACTIVE")
            #expect(try await device.validateSignature().status == 200)
            let again = try await client.send(
                "POST", "/api/v1/activations/\(device.activationId)/commit",
                headers: ["Authorization": "Bearer \(server.apiKey)"])
            #expect(again.status == 409)
            #expect(again.errorCode == "ACTIVATION_INVALID_STATE")
        }
    }

    @Test("An activation code works once and not after it expires", arguments: Backend.all)
    func codeSingleUseAndExpiry(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let created = try await server.createActivation(client)
            var first = TestDevice(client: client, configuration: try server.configuration)
            try await first.activate(code: created.activationCode)
            let second = TestDevice(client: client, configuration: try server.configuration)
            let reuse = try await second.sendActivation(code: created.activationCode).0
            #expect(reuse.status == 400)
            #expect(reuse.errorCode == "ACTIVATION_CODE_INVALID")

            let late = try await server.createActivation(client, userId: "bob")
            server.clock.advance(by: 301)
            let expired = try await second.sendActivation(code: late.activationCode).0
            #expect(expired.errorCode == "ACTIVATION_CODE_INVALID" || expired.status == 400)
        }
    }
}
