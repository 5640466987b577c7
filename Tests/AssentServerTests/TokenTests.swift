import AssentCrypto
import AssentModel
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

@Suite("MAC tokens")
struct TokenTests {
    @Test(
        "A token header authenticates once; a replayed nonce, a stale timestamp or a wrong secret fail",
        arguments: Backend.all)
    func tokenAuthentication(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let token = try await device.createToken()
            let secret = try #require(Data(base64Encoded: token.tokenSecret))
            let authenticator = Services(server.environment).tokens
            let now = UInt64(server.clock.now.timeIntervalSince1970 * 1000)

            let header = TokenHeader.make(tokenId: token.tokenId, tokenSecret: secret, timestamp: now).value
            let (record, principal) = try await authenticator.authenticate(header)
            #expect(record.id == token.tokenId && record.signatureType == .possession)
            #expect(principal.activationId == device.activationId && principal.userId == "alice")

            await #expect(throws: AssentServerError.self) { try await authenticator.authenticate(header) }
            let stale = TokenHeader.make(tokenId: token.tokenId, tokenSecret: secret, timestamp: now - 600_000).value
            await #expect(throws: AssentServerError.self) { try await authenticator.authenticate(stale) }
            let forged = TokenHeader.make(
                tokenId: token.tokenId, tokenSecret: Bytes.random(count: 16), timestamp: now
            ).value
            await #expect(throws: AssentServerError.self) { try await authenticator.authenticate(forged) }
            await #expect(throws: AssentServerError.self) { try await authenticator.authenticate(nil) }

            // Removing the token through the signed endpoint ends it.
            let body = try JSONEncoder().encode(RequestEnvelope(TokenIdObject(tokenId: token.tokenId)))
            let removeHeader = try device.authorization(uriId: "/pa/token/remove", body: body, type: .possession)
            let removed = try await client.send(
                "POST", "/pa/v3/token/remove", headers: [AuthorizationHeader.name: removeHeader], body: body)
            #expect(removed.status == 200)
            let fresh = TokenHeader.make(tokenId: token.tokenId, tokenSecret: secret, timestamp: now).value
            await #expect(throws: AssentServerError.self) { try await authenticator.authenticate(fresh) }
        }
    }

    @Test(
        "A token verified once is checked from memory, yet a blocked activation or a removed token refuses its next use",
        arguments: Backend.all)
    func knownTokens(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let token = try await device.createToken()
            let secret = try #require(Data(base64Encoded: token.tokenSecret))
            // Two processes' authenticators on one database.
            let services = Services(server.environment)
            let (first, second) = (services.tokens, Services(server.environment).tokens)
            var at = UInt64(server.clock.now.timeIntervalSince1970 * 1000)
            func header() -> String {
                at += 1
                return TokenHeader.make(tokenId: token.tokenId, tokenSecret: secret, timestamp: at).value
            }
            func refusal(_ authenticator: TokenAuthenticator) async -> String? {
                await Self.refusal(authenticator, header())
            }
            #expect(await refusal(first) == nil)

            // Blocked through the other process: the first one's next use is refused, and again once unblocked.
            _ = try await services.activations.block(id: device.activationId, reason: "test", actor: "test")
            #expect(await refusal(first) == "The token's activation is not active.")
            #expect(await refusal(second) == "The token's activation is not active.")
            _ = try await services.activations.unblock(id: device.activationId, actor: "test")
            #expect(await refusal(first) == nil)
            #expect(await refusal(second) == nil)

            // The stored secret damaged: a process that verified the token goes on from memory, one that did not
            // refuses (it would have to read it).
            try await server.store.database.raw(
                "UPDATE tokens SET secret = \(bind: Data(repeating: 7, count: 60)) WHERE id = \(bind: token.tokenId)"
            ).run()
            #expect(await refusal(first) == nil)
            #expect(await refusal(Services(server.environment).tokens) != nil)

            // Removed: refused everywhere, the same nonce twice is a replay, a wrong secret never passes.
            let same = header()
            _ = try await first.authenticate(same)
            #expect(await refusal(first) == nil)
            await #expect(throws: AssentServerError.self) { try await first.authenticate(same) }
            let forged = TokenHeader.make(tokenId: token.tokenId, tokenSecret: Bytes.random(count: 16), timestamp: at)
            await #expect(throws: AssentServerError.self) { try await first.authenticate(forged.value) }
            try await server.store.database.raw("DELETE FROM tokens WHERE id = \(bind: token.tokenId)").run()
            #expect(await refusal(first) == "The token is unknown or its digest is wrong.")
            #expect(await refusal(second) == "The token is unknown or its digest is wrong.")
        }
    }

    @Test(
        "A token's use with its user's pending operations (one statement on PostgreSQL): none, some, replay, blocked",
        arguments: Backend.all)
    func useWithPendingOperations(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let token = try await device.createToken()
            let store = server.store
            let use = { (nonce: String) in
                try await store.claimTokenUse(
                    tokenId: token.tokenId, nonce: nonce, expiresAt: Date().millis + 60_000, pendingOf: "alice")
            }
            let (none, empty) = try await use("n1")
            #expect(none == .claimed && empty.isEmpty)
            let first = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            let second = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            _ = try await server.createOperation(client, try OperationFixtures.payment(userId: "bob"))
            let (claimed, pending) = try await use("n2")
            #expect(claimed == .claimed && Set(pending.map(\.id)) == [first.id, second.id])
            #expect(pending.allSatisfy { $0.userId == "alice" && $0.status == .pending })
            let (replayed, unread) = try await use("n2")
            #expect(replayed == .replayed && unread.isEmpty)
            _ = try await Services(server.environment).activations.block(
                id: device.activationId, reason: "test", actor: "test")
            let (refused, hidden) = try await use("n3")
            #expect(refused == .refused && hidden.isEmpty)
        }
    }

    @Test("The tokens kept in memory are bounded: past the capacity a new one takes the place of another")
    func knownTokensBound() {
        let known = KnownTokens(capacity: 3)
        let principal = DevicePrincipal(activationId: "a", applicationId: "app", userId: "u")
        for n in 1...5 {
            let token = TokenRecord(
                id: "t\(n)", activationId: "a", secret: Data([UInt8(n)]), signatureType: .possession, createdAt: 0)
            known["t\(n)"] = (token, principal)
            #expect(known.count == min(n, 3) && known["t\(n)"]?.0 == token)
        }
        known["t5"] = nil
        #expect(known.count == 2 && known["t5"] == nil)
    }

    /// Why `authenticator` refuses `header`, or `nil` when it accepts it.
    static func refusal(_ authenticator: TokenAuthenticator, _ header: String) async -> String? {
        do {
            _ = try await authenticator.authenticate(header)
            return nil
        } catch let error as AssentServerError {
            return error.message
        } catch {
            return "\(error)"
        }
    }
}
