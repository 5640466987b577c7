import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

@Suite("Rate limits: 429 with Retry-After, per window, shared by processes")
struct RateLimitTests {
    /// A valid code (checksum included) that shares `code`'s first two groups.
    static func sibling(of code: String) throws -> String {
        var bytes = [UInt8](try Base32.decode(code.replacingOccurrences(of: "-", with: "")).prefix(10))
        // The first two groups are 50 bits: bytes 0–5 and the top two bits of byte 6.
        bytes[6] = (bytes[6] & 0xC0) | UInt8.random(in: 0...0x3F)
        for index in 7..<10 { bytes[index] = UInt8.random(in: 0...255) }
        let crc = CRC16.arc(bytes)
        let text = Base32.encode(bytes + [UInt8(crc >> 8), UInt8(crc & 0xFF)])
        let groups = stride(from: 0, to: 20, by: 5).map { start in
            String(text.dropFirst(start).prefix(5))
        }
        return try ActivationCode(groups.joined(separator: "-")).value
    }

    static func expectLimited(_ response: HTTPClient.Response, within window: Int, _ comment: Comment? = nil) {
        #expect(response.status == 429, comment)
        #expect(response.errorCode == "ERR_RATE_LIMITED", comment)
        let retryAfter = response.header("Retry-After").flatMap { Int($0) }
        #expect(retryAfter.map { (1...window).contains($0) } == true, comment)
    }

    @Test(
        "Wrong activation codes: limited per code prefix and per client address; the window's end lifts it",
        arguments: Backend.all)
    func activationCodes(backend: Backend) async throws {
        var limits = RateLimits()
        limits.activationPerCodePrefix = RateLimitRule(limit: 2, window: 60)
        limits.activationPerAddress = RateLimitRule(limit: 4, window: 60)
        let server = try await TestServer.make(backend, rateLimits: limits)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let device = TestDevice(client: client, configuration: try server.configuration)
            let target = try await server.createActivation(client).activationCode
            // Two guesses at the rest of a code whose first groups are known.
            for _ in 0..<2 {
                let guess = try await device.sendActivation(code: try Self.sibling(of: target)).0
                #expect(guess.status == 400 && guess.errorCode == "ACTIVATION_CODE_INVALID")
            }
            // Now even the right code waits: the prefix is used up.
            Self.expectLimited(try await device.sendActivation(code: target).0, within: 60)
            // Two more wrong codes with other prefixes reach the address's limit of four.
            for _ in 0..<2 {
                let guess = try await device.sendActivation(code: ActivationCode.generate().value).0
                #expect(guess.status == 400)
            }
            let other = try await server.createActivation(client, userId: "bob").activationCode
            Self.expectLimited(try await device.sendActivation(code: other).0, within: 60)

            server.clock.advance(by: 61)
            var activated = TestDevice(client: client, configuration: try server.configuration)
            try await activated.activate(code: other)
            var first = TestDevice(client: client, configuration: try server.configuration)
            try await first.activate(code: target)
        }
    }

    @Test("Wrong operator keys from one address: limited, then even the right key waits", arguments: Backend.all)
    func operatorKeys(backend: Backend) async throws {
        var limits = RateLimits()
        limits.operatorKeyFailuresPerAddress = RateLimitRule(limit: 3, window: 120)
        let server = try await TestServer.make(backend, rateLimits: limits)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            func call(_ key: String?) async throws -> HTTPClient.Response {
                try await client.send(
                    "GET", "/api/v1/audit", headers: key.map { ["Authorization": "Bearer \($0)"] } ?? [:])
            }
            for _ in 0..<3 { #expect(try await call("ak_wrong").status == 401) }
            // No key at all is not a guess: still 401, and not counted.
            #expect(try await call(nil).status == 401)
            Self.expectLimited(try await call("ak_wrong"), within: 120)
            Self.expectLimited(try await call(server.apiKey), within: 120)
            // The three counted are in the audit, never the key; no key, or over the limit, is not written.
            let refused = try await server.store.auditEvents(AuditFilter(typePrefix: "api_key.refused"), limit: 10)
            #expect(
                refused.map(\.detail)
                    == Array(
                        repeating:
                            "An operator API request with an unknown or revoked key was refused (GET /api/v1/audit, "
                            + "from 127.0.0.1).", count: 3))
            #expect(refused.allSatisfy { $0.actor == "anonymous" })
            server.clock.advance(by: 121)
            #expect(try await call(server.apiKey).status == 200)
        }
    }

    @Test("Two processes sharing PostgreSQL share the counters")
    func sharedAcrossProcesses() async throws {
        guard Backend.all.contains(.postgres) else { return }
        var limits = RateLimits()
        limits.operatorKeyFailuresPerAddress = RateLimitRule(limit: 4, window: 300)
        let first = try await TestServer.make(.postgres, rateLimits: limits)
        try await first.liveWithSibling { firstClient, secondClient in
            for client in [firstClient, secondClient, firstClient, secondClient] {
                let response = try await client.send(
                    "GET", "/api/v1/audit", headers: ["Authorization": "Bearer ak_wrong"])
                #expect(response.status == 401)
            }
            for client in [firstClient, secondClient] {
                let response = try await client.send(
                    "GET", "/api/v1/audit", headers: ["Authorization": "Bearer \(first.apiKey)"])
                Self.expectLimited(response, within: 300)
            }
        }
    }

    @Test(
        "Offline-code checks per operation and per activation; proximity approvals per operation",
        arguments: Backend.all)
    func offlineAndProximity(backend: Backend) async throws {
        var limits = RateLimits()
        limits.offlineVerificationsPerOperation = RateLimitRule(limit: 2, window: 60)
        limits.offlineVerificationsPerActivation = RateLimitRule(limit: 3, window: 60)
        limits.proximityChecksPerOperation = RateLimitRule(limit: 2, window: 60)
        var policy = SecurityPolicy()
        policy.operationMaxFailedAttempts = 20
        let server = try await TestServer.make(backend, policy: policy, rateLimits: limits)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            func verify(_ operation: OperationInfo) async throws -> HTTPClient.Response {
                try await client.send(
                    "POST", "/api/v1/operations/\(operation.id)/offline-verify",
                    headers: ["Authorization": "Bearer \(server.apiKey)"],
                    body: try OperatorJSON.encoder().encode(
                        OfflineVerifyRequest(activationId: device.activationId, code: "12345678-87654321")))
            }
            func offlineOperation() async throws -> OperationInfo {
                let operation = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
                _ = try await server.operatorCall(
                    client, "POST", "/api/v1/operations/\(operation.id)/offline-qr",
                    body: try OperatorJSON.encoder().encode(OfflineQRRequest(keyType: .master, activationId: nil)),
                    as: OfflineQRResponse.self)
                return operation
            }
            let first = try await offlineOperation()
            #expect(try await verify(first).status == 200)
            #expect(try await verify(first).status == 200)
            Self.expectLimited(try await verify(first), within: 60, "the operation's two checks are used")
            let second = try await offlineOperation()
            // The activation's third check this window (the refused one stopped at the operation's limit).
            #expect(try await verify(second).status == 200)
            Self.expectLimited(try await verify(second), within: 60, "the activation's three checks are used")

            let proximity = try await server.createOperation(
                client, try OperationFixtures.payment(userId: "alice", proximityCheck: true))
            let now = server.clock.now
            let wrong = ProximityCheck(
                otp: "00000000", type: .qrCode, timestampReceived: now.addingTimeInterval(-2), timestampSent: now)
            for _ in 0..<2 {
                let attempt = try await device.authorizeOperation(
                    id: proximity.id, data: proximity.data, proximityCheck: wrong)
                #expect(attempt.status == 400 && attempt.errorCode == "PROXIMITY_CHECK_FAILED")
            }
            let limited = try await device.authorizeOperation(
                id: proximity.id, data: proximity.data, proximityCheck: wrong)
            Self.expectLimited(limited, within: 60)
            #expect(try await server.operation(client, proximity.id).failedAttempts == 2)
        }
    }
}
