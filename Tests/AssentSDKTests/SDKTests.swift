import AssentCrypto
import AssentModel
import AssentSDK
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

@Suite("AssentSDK against a live server")
struct SDKTests {
    @Test(
        "An activation started but not finished on the device is removed on the server by abandonActivation",
        arguments: Backend.all)
    func abandon(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("assent-sdk-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.live { http in
            let created = try await server.createActivation(http, userId: "alice")
            let client = try SDKClients.client(server, base: http.base, directory: directory)
            await #expect(throws: AssentError.self) { try await client.abandonActivation() }
            let started = try await client.startActivation(code: created.activationCode)
            // Auto-commit: the server's side is ACTIVE while the device has saved nothing.
            func state() async throws -> String {
                try await server.operatorCall(
                    http, "GET", "/api/v1/activations/\(started.activationId)", as: ActivationInfo.self
                ).status
            }
            #expect(try await state() == "ACTIVE")
            try await client.abandonActivation()
            #expect(try await state() == "REMOVED")
            #expect(await !client.isActivatedLocally)
            await #expect(throws: AssentError.self) { try await client.finishActivation(pin: "1234") }
        }
    }

    @Test(
        "Activate by QR, approve, reject, claim, history, offline approval, wrong PIN to blocked, removal",
        arguments: Backend.all)
    func endToEnd(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("assent-sdk-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.live { http in
            let created = try await server.createActivation(http, userId: "alice")
            var client = try SDKClients.client(server, base: http.base, directory: directory)
            #expect(await !client.isActivatedLocally)
            // A QR whose signature is not the master key's is refused before anything is sent.
            let forged = try ActivationQRCode(
                code: try ActivationCode(created.activationCode), masterPrivateKey: ECPrivateKey())
            await #expect(throws: AssentError.self) { try await client.startActivation(code: forged.text) }
            let started = try await client.startActivation(code: created.activationQRCode)
            #expect(started.methods == [.device, .pin])  // no biometry provider
            await #expect(throws: AssentError.self) { try await client.finishActivation(pin: "12") }
            try await client.finishActivation(pin: "1234")
            let info = try await server.operatorCall(
                http, "GET", "/api/v1/activations/\(started.activationId)", as: ActivationInfo.self)
            #expect(info.fingerprint == started.fingerprint && info.status == "ACTIVE")
            let keystoreMode =
                try FileManager.default.attributesOfItem(
                    atPath: directory.appendingPathComponent("state.key").path)[.posixPermissions] as? NSNumber
            #expect(keystoreMode?.intValue == 0o600)

            // The state survives a new client (a restart).
            client = try SDKClients.client(server, base: http.base, directory: directory)
            #expect(await client.registrationId == started.activationId)
            let operations = OperationsService(client: client, acceptLanguage: "cs")

            let payment = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            let pending = try await operations.pending()
            #expect(pending.value.map(\.id) == [payment.id])
            #expect(pending.value.first?.formData.title == "Potvrďte platbu")
            #expect(abs(try #require(pending.serverDate).timeIntervalSinceNow) < 5)
            try await operations.authorize(try #require(pending.value.first), factor: .pin("1234"))
            #expect(try await server.operation(http, payment.id).status == .approved)

            let second = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            try await operations.reject(id: second.id, reason: RejectReason.unexpectedOperation)
            #expect(try await server.operation(http, second.id).statusReason == "UNEXPECTED_OPERATION")

            let open = try await server.createOperation(http, try OperationFixtures.payment(userId: nil))
            await operations.setAcceptLanguage(nil)
            let claimed = try await operations.claim(id: open.id)
            #expect(claimed.value.formData.title == "Confirm Payment")
            #expect(try await server.operation(http, open.id).userId == "alice")
            try await operations.authorize(claimed.value, factor: .pin("1234"))
            let history = try await operations.history(pin: "1234")
            #expect(history.value.map(\.status) == [.approved, .rejected, .approved])

            // Offline: the QR verifies against this server's key and the typed code approves.
            let offline = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            let qrText = try await server.operatorCall(
                http, "POST", "/api/v1/operations/\(offline.id)/offline-qr",
                body: try OperatorJSON.encoder().encode(
                    OfflineQRRequest(keyType: .personal, activationId: started.activationId)),
                as: OfflineQRResponse.self
            ).qr
            let qr = try await operations.parseOfflineOperation(qrText)
            let code = try await operations.offlineApprovalCode(for: qr, pin: "1234")
            let verified = try await server.operatorCall(
                http, "POST", "/api/v1/operations/\(offline.id)/offline-verify",
                body: try OperatorJSON.encoder().encode(
                    OfflineVerifyRequest(activationId: started.activationId, code: code)),
                as: OfflineVerifyResponse.self)
            #expect(verified.valid && verified.operation.status == .approved)
            let tampered = qrText.replacingOccurrences(of: "Confirm Payment", with: "Confirm Paymemt")
            await #expect(throws: AssentError.self) { try await operations.parseOfflineOperation(tampered) }

            // Proximity check: the TOTP read from the deeplink goes along with the approval.
            let near = try await server.createOperation(
                http, try OperationFixtures.payment(userId: "alice", proximityCheck: true))
            let pac = try await server.operatorCall(
                http, "GET", "/api/v1/operations/\(near.id)/proximity", as: ProximityCodeResponse.self)
            let scanned = try #require(ProximityCode(parsing: pac.deeplink))
            try await operations.authorize(
                try await operations.detail(id: scanned.operationId).value, factor: .pin("1234"),
                proximityCheck: ProximityCheck(
                    otp: scanned.totp, type: .deeplink, timestampReceived: Date(), timestampSent: Date()))
            #expect(try await server.operation(http, near.id).status == .approved)

            // Wrong PINs count down, then the activation blocks; the operator unblocks it.
            var remaining: [Int?] = []
            for _ in 0..<5 {
                let operation = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
                do {
                    try await operations.authorize(
                        try await operations.detail(id: operation.id).value, factor: .pin("9999"))
                } catch let error as AssentError {
                    remaining.append(error.code == .blocked ? -1 : error.remainingAttempts)
                }
            }
            #expect(remaining == [4, 3, 2, 1, -1])
            #expect(try await client.status().state == .blocked)
            _ = try await server.operatorCall(
                http, "POST", "/api/v1/activations/\(started.activationId)/unblock", as: ActivationInfo.self)
            #expect(try await client.status().state == .active)

            try await client.removeActivation(pin: "1234")
            #expect(await !client.isActivatedLocally)
            #expect(
                try await server.operatorCall(
                    http, "GET", "/api/v1/activations/\(started.activationId)", as: ActivationInfo.self
                ).status == "REMOVED")
        }
    }
}
