import AssentCrypto
import AssentModel
import AssentSDK
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

@Suite("AssentSDK factors: configuration, manual commit, PIN change, biometry, device-only")
struct SDKFactorTests {
    @Test(
        "Server configuration, manual commit, change PIN, add / use / remove biometry, offline biometry",
        arguments: Backend.all)
    func factors(backend: Backend) async throws {
        var policy = SecurityPolicy()
        policy.pinMinimumLength = 6
        let server = try await TestServer.make(backend, policy: policy)
        defer { Task { await server.shutdown() } }
        let directory = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let biometry = SimulatedBiometryProvider()
        try await server.live { http in
            let client = try SDKClients.client(server, base: http.base, directory: directory, biometry: biometry)
            let configuration = try await client.loadConfiguration()
            #expect(configuration.pin == .init(type: "NUMERIC", minLength: 6, maxLength: 16))
            #expect(configuration.methods == [.device, .pin, .biometry])
            #expect(configuration.activationCode.length == 23 && configuration.maxFailedAttempts == 5)
            #expect(throws: AssentError.self) { try PINPolicy(configuration.pin).validate("12345") }
            #expect(try await http.send("GET", "/api/device/configuration").status == 400)
            #expect(try await http.send("GET", "/api/device/configuration?applicationKey=unknown").status == 401)

            // Manual commit: the device finishes, the activation waits for the operator.
            let created = try await server.createActivation(http, userId: "alice", commitMode: "manual")
            let started = try await client.startActivation(code: created.activationCode)
            #expect(started.methods == [.device, .pin, .biometry])
            let short = await #expect(throws: AssentError.self) { try await client.finishActivation(pin: "1234") }
            #expect(short?.code == .invalidInput)
            try await client.finishActivation(pin: "123456")
            #expect(await client.activatedMethods == [.device, .pin])
            #expect(try await client.status().state == .pendingCommit)
            _ = try await server.operatorCall(
                http, "POST", "/api/v1/activations/\(started.activationId)/commit", as: ActivationInfo.self)
            #expect(try await client.status().state == .active)
            let operations = OperationsService(client: client)
            /// A new payment for alice, as the device sees it.
            func newPayment() async throws -> MobileOperation {
                try await operations.detail(
                    id: try await server.createOperation(http, try OperationFixtures.payment(userId: "alice")).id
                ).value
            }

            // Change the PIN: a wrong old PIN counts as a failure; afterwards only the new PIN signs.
            let wrongOld = await #expect(throws: AssentError.self) {
                try await client.changePIN(from: "999999", to: "654321")
            }
            #expect(wrongOld?.code == .wrongPIN && wrongOld?.remainingAttempts == 4)
            try await client.changePIN(from: "123456", to: "654321")
            let operation = try await newPayment()
            let oldPIN = await #expect(throws: AssentError.self) {
                try await operations.authorize(operation, factor: .pin("123456"))
            }
            #expect(oldPIN?.code == .wrongPIN)
            try await operations.authorize(operation, factor: .pin("654321"))
            #expect(try await server.operation(http, operation.id).status == .approved)
            #expect(try await client.status().failedAttempts == 0)

            // Biometry is not there until added through the vault (with the PIN).
            let second = try await newPayment()
            let notYet = await #expect(throws: AssentError.self) {
                try await operations.authorize(second, factor: .biometry(prompt: "Approve"))
            }
            #expect(notYet?.code == .factorUnavailable)
            let wrongVault = await #expect(throws: AssentError.self) { try await client.addBiometry(pin: "000000") }
            #expect(wrongVault?.code == .wrongPIN)
            #expect(biometry.accounts.isEmpty)
            try await client.addBiometry(pin: "654321")
            #expect(await client.activatedMethods == [.device, .pin, .biometry])
            #expect(biometry.accounts.count == 1)

            // A cancelled or failed biometric check sends nothing; a good one approves.
            biometry.nextOutcome = .cancel
            let cancelled = await #expect(throws: AssentError.self) {
                try await operations.authorize(second, factor: .biometry(prompt: "Approve the payment"))
            }
            #expect(cancelled?.code == .cancelled)
            biometry.nextOutcome = .failure
            let failed = await #expect(throws: AssentError.self) {
                try await operations.authorize(second, factor: .biometry(prompt: "Approve the payment"))
            }
            #expect(failed?.code == .biometryFailed)
            #expect(try await server.operation(http, second.id).failedAttempts == 0)
            biometry.nextOutcome = .success
            try await operations.authorize(second, factor: .biometry(prompt: "Approve the payment"))
            #expect(try await server.operation(http, second.id).status == .approved)
            #expect(biometry.prompts.last == "Approve the payment")

            // Offline with biometry, since the QR allows it (flag B); the server verifies the code.
            let offline = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            let qrText = try await server.operatorCall(
                http, "POST", "/api/v1/operations/\(offline.id)/offline-qr",
                body: try OperatorJSON.encoder().encode(OfflineQRRequest(keyType: .master, activationId: nil)),
                as: OfflineQRResponse.self
            ).qr
            let qr = try await operations.parseOfflineOperation(qrText)
            #expect(qr.flags.contains(.biometryAllowed))
            let code = try await operations.offlineApprovalCode(for: qr, factor: .biometry(prompt: "Offline"))
            let verified = try await server.operatorCall(
                http, "POST", "/api/v1/operations/\(offline.id)/offline-verify",
                body: try OperatorJSON.encoder().encode(
                    OfflineVerifyRequest(activationId: started.activationId, code: code)),
                as: OfflineVerifyResponse.self)
            #expect(verified.valid && verified.operation.status == .approved)

            // Biometry removed: the key is gone from the provider, biometry no longer approves, the PIN does.
            try await client.removeBiometry()
            #expect(biometry.accounts.isEmpty)
            #expect(await client.activatedMethods == [.device, .pin])
            let third = try await newPayment()
            let removed = await #expect(throws: AssentError.self) {
                try await operations.authorize(third, factor: .biometry(prompt: "Approve"))
            }
            #expect(removed?.code == .factorUnavailable)
            try await operations.authorize(third, factor: .pin("654321"))

            // Finishing with PIN and biometry stores the biometry key at once (a second device of the same user).
            let otherDirectory = SDKClients.directory()
            defer { try? FileManager.default.removeItem(at: otherDirectory) }
            let other = try SDKClients.client(server, base: http.base, directory: otherDirectory, biometry: biometry)
            _ = try await other.startActivation(
                code: try await server.createActivation(http, userId: "alice").activationCode)
            try await other.finishActivation(with: .pinAndBiometry("111111"))
            #expect(await other.activatedMethods == [.device, .pin, .biometry])
            let fourth = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            try await OperationsService(client: other).authorize(
                LocalOperation(id: fourth.id, data: fourth.data), factor: .biometry(prompt: "Approve"))
            #expect(try await server.operation(http, fourth.id).status == .approved)
            try await other.removeActivation(pin: "111111")
            #expect(biometry.accounts.isEmpty)
        }
    }

    @Test("Device-only activation approves 1FA operations only; a server without biometry refuses it")
    func deviceOnlyAndBiometryDisabled() async throws {
        var policy = SecurityPolicy()
        policy.biometryEnabled = false
        let server = try await TestServer.make(.sqlite, policy: policy)
        defer { Task { await server.shutdown() } }
        let directory = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let biometry = SimulatedBiometryProvider()
        try await server.live { http in
            let client = try SDKClients.client(server, base: http.base, directory: directory, biometry: biometry)
            let started = try await client.startActivation(
                code: try await server.createActivation(http, userId: "bob").activationCode)
            #expect(started.methods == [.device, .pin])
            let refused = await #expect(throws: AssentError.self) {
                try await client.finishActivation(with: .pinAndBiometry("1234"))
            }
            #expect(refused?.code == .factorUnavailable)
            try await client.finishActivation(with: .device)
            #expect(await client.activatedMethods == [.device])

            let operations = OperationsService(client: client)
            var confirm = try OperationFixtures.payment(userId: "bob")
            confirm.allowedSignatureType = .oneFactor
            let oneFactor = try await server.createOperation(http, confirm)
            try await operations.authorize(
                try await operations.detail(id: oneFactor.id).value, factor: .possession)
            #expect(try await server.operation(http, oneFactor.id).status == .approved)

            let twoFactor = try await server.createOperation(http, try OperationFixtures.payment(userId: "bob"))
            let noPIN = await #expect(throws: AssentError.self) {
                try await operations.authorize(
                    try await operations.detail(id: twoFactor.id).value, factor: .pin("1234"))
            }
            #expect(noPIN?.code == .factorUnavailable)
            let noSecond = await #expect(throws: AssentError.self) { try await client.addBiometry(pin: "1234") }
            #expect(noSecond?.code == .factorUnavailable)
            // A possession-only signature cannot approve a 2FA operation either.
            let oneIsNotTwo = await #expect(throws: AssentError.self) {
                try await operations.authorize(
                    try await operations.detail(id: twoFactor.id).value, factor: .possession)
            }
            #expect(oneIsNotTwo?.httpStatus == 401)

            // The server itself refuses a correct biometry signature, and the PIN still works.
            var device = try await server.activatedDevice(http, userId: "carol")
            let payment = try await server.createOperation(http, try OperationFixtures.payment(userId: "carol"))
            let biometric = try await device.authorizeOperation(
                id: payment.id, data: payment.data, type: .possessionBiometry)
            #expect(biometric.status == 401)
            #expect(try await server.operation(http, payment.id).status == .pending)
            let knowledge = try await device.authorizeOperation(id: payment.id, data: payment.data)
            #expect(knowledge.status == 200)
        }
    }
}
