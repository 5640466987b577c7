import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

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
}
