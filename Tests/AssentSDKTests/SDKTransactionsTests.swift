import AssentModel
import AssentSDK
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

@Suite("SDK transactions (seed 003)")
struct SDKTransactionsTests {
    @Test(
        "CIBA through the transaction API: ids, text, policies from acr_values, report as fraud, mobile context, inexplicit container",
        arguments: Backend.all)
    func transactions(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let root = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: root) }
        try await server.live { http in
            var containers: [TransactionContainer] = []
            for user in ["alice", "bob"] {
                let client = try await SDKClients.activatedClient(
                    server, http, directory: root.appendingPathComponent(user), userId: user)
                containers.append(TransactionContainer(userId: user, operations: OperationsService(client: client)))
            }
            let service = TransactionsService(containers: containers)
            let rp = try await TestRelyingParty.register(server, http)

            // Reported as fraud: the relying party hears so.
            let reported = try await rp.authorize(["scope": "openid", "login_hint": "alice", "binding_message": "R1"])
            let ids = try await service.retrieveTransactionIds()
            #expect(ids.count == 1)
            let info = try await service.retrieveActionInfo(ids[0])
            #expect(info.container.userId == "alice" && info.transactionId == ids[0])
            let transaction = try await service.getAction(info)
            #expect(transaction.text.contains("R1"))
            #expect(transaction.allowedStatuses == [.accept, .deny, .report])
            #expect(transaction.protectionPolicy == .bioPassword)
            #expect(transaction.expiryDate.map { $0 > Date() } == true)
            try await service.setStatus(.report, of: transaction)
            let denied = try await rp.token(reported.authReqId)
            #expect(TestRelyingParty.error(denied) == "access_denied")
            #expect(denied.text.contains("fraud"))

            // acr_values asks for the PIN: the policy is password, the mobile context reaches the ID token.
            let pinOnly = try await rp.authorize([
                "scope": "openid", "login_hint": "bob", "acr_values": "urn:example:unknown urn:assent:acr:pin",
            ])
            let bobIds = try await service.retrieveTransactionIds()
            let second = try await service.getAction(try await service.retrieveActionInfo(try #require(bobIds.first)))
            #expect(second.container.userId == "bob" && second.protectionPolicy == .password)
            await #expect(throws: AssentError.self) { try await service.setStatus(.accept, of: second) }
            try await service.setStatus(
                .accept, of: second, factor: .pin("1234"), mobileContext: Data("shop=42".utf8))
            let tokens = try JSONDecoder().decode(
                OAuthTokenResponse.self, from: try await rp.token(pinOnly.authReqId).body)
            let claims = try await rp.verify(
                tokens.idToken, accessToken: tokens.accessToken, authReqId: pinOnly.authReqId,
                issuer: server.environment.openID.issuer)
            #expect(claims.acr == "urn:assent:acr:pin")
            #expect(claims.transaction.mobileContext == Data("shop=42".utf8).base64EncodedString())
            #expect(claims.sub.value == "bob")

            // A transaction without a user, scanned from its server-signed QR code: which activation takes it must
            // be said.
            let userless = try await server.createOperation(http, try OperationFixtures.payment(userId: nil))
            let printed = try await server.operatorCall(
                http, "POST", "/api/v1/operations/\(userless.id)/offline-qr",
                body: try JSONEncoder().encode(OfflineQRRequest(keyType: .master, activationId: nil)),
                as: OfflineQRResponse.self)
            let scanned = try await containers[0].operations.parseOfflineOperation(printed.qr)
            #expect(scanned.operationId == userless.id)
            do {
                _ = try await service.retrieveActionInfo(scanned.operationId)
                Issue.record("a user-less transaction with two activations must name the user")
            } catch let error as AssentError {
                #expect(error.code == .inexplicitContainer)
                #expect(error.candidateUserIds == ["alice", "bob"])
            }
            let claimed = try await service.getAction(try await service.retrieveActionInfo(userless.id, userId: "bob"))
            try await service.setStatus(.accept, of: claimed, factor: .pin("1234"))
            let finished = try await server.operation(http, userless.id)
            #expect(finished.status == .approved && finished.userId == "bob")
        }
    }

    @Test(
        "PIN expiry: an old PIN cannot approve until it is changed; the change is reported signed",
        arguments: Backend.all)
    func pinExpiry(_ backend: Backend) async throws {
        var policy = SecurityPolicy()
        policy.maximumPINAge = 60
        let server = try await TestServer.make(backend, policy: policy)
        defer { Task { await server.shutdown() } }
        let directory = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.live { http in
            let client = try await SDKClients.activatedClient(server, http, directory: directory)
            let service = TransactionsService(
                containers: [TransactionContainer(userId: "alice", operations: OperationsService(client: client))])
            // The server's clock moves past the PIN's age (a real wait of a few seconds left too little time after
            // the change on a busy machine: the new PIN had expired too).
            server.clock.advance(by: 61)
            _ = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            let id = try #require(try await service.retrieveTransactionIds().first)
            let transaction = try await service.getAction(try await service.retrieveActionInfo(id))
            do {
                try await service.setStatus(.accept, of: transaction, factor: .pin("1234"))
                Issue.record("an expired PIN approved")
            } catch let error as AssentError {
                #expect(error.code == .pinExpired && error.httpStatus == 400, "\(error)")
            }
            // Only a signature with the knowledge factor can report a change.
            var device = try await server.activatedDevice(http, userId: "zed")
            let refused = try await device.signedPost(
                "/api/device/pin/changed", uriId: "/pin/changed", body: Data("{}".utf8), type: .possession)
            #expect(refused.status == 401)
            try await client.changePIN(from: "1234", to: "5678")
            try await service.setStatus(.accept, of: transaction, factor: .pin("5678"))
            #expect(try await server.operation(http, id).status == .approved)
        }
    }
}
