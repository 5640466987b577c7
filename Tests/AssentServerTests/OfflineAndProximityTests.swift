import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

@Suite("Offline QR approval, proximity check and webhooks")
struct OfflineAndProximityTests {
    @Test("Offline QR signed with the master and the personal key, approved by a typed code", arguments: Backend.all)
    func offlineApproval(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let personalKey = try #require(device.serverPublicKey)
            let masterKey = server.application.masterPublicKey

            for keyType in [OfflineQRRequest.Key.master, .personal] {
                let operation = try await server.createOperation(
                    client, try OperationFixtures.payment(userId: "alice"))
                let text = try await server.operatorCall(
                    client, "POST", "/api/v1/operations/\(operation.id)/offline-qr",
                    body: try OperatorJSON.encoder().encode(
                        OfflineQRRequest(keyType: keyType, activationId: device.activationId)),
                    as: OfflineQRResponse.self
                ).qr
                // The exact line format: id, title, message, data, flags, nonce, key type + signature.
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
                #expect(lines.count == 7)
                #expect(lines[0] == Substring(operation.id))
                #expect(lines[1] == "Confirm Payment")
                #expect(lines[2] == #"Hello,\nplease confirm following payment:"#)
                #expect(lines[3] == Substring(operation.data))
                #expect(lines[4] == "BXC")
                #expect(Data(base64Encoded: String(lines[5]))?.count == 16)
                #expect(lines[6].first == (keyType == .master ? "0" : "1"))

                let qr = try OfflineOperationQR(parsing: text)
                // The device checks the server's signature with the key the QR names, and only that one.
                try qr.verify(masterPublicKey: masterKey, personalPublicKey: personalKey)
                let otherKey = ECPrivateKey().publicKey
                if keyType == .master {
                    #expect(throws: (any Error).self) {
                        try qr.verify(masterPublicKey: otherKey, personalPublicKey: personalKey)
                    }
                } else {
                    #expect(throws: (any Error).self) {
                        try qr.verify(masterPublicKey: masterKey, personalPublicKey: otherKey)
                    }
                }

                // A wrong code counts a failure; the right one approves.
                let wrongCode = try await server.operatorCall(
                    client, "POST", "/api/v1/operations/\(operation.id)/offline-verify",
                    body: try OperatorJSON.encoder().encode(
                        OfflineVerifyRequest(activationId: device.activationId, code: "12345678-87654321")),
                    as: OfflineVerifyResponse.self)
                #expect(!wrongCode.valid && wrongCode.operation.failedAttempts == 1)
                #expect(wrongCode.operation.status == .pending)
                // The failed code is in the audit, naming the key that typed it in.
                let failed = try await server.store.audit(activationId: device.activationId, userId: nil, limit: 50)
                    .filter { $0.type == "signature.failed" }
                #expect(!failed.isEmpty && failed.allSatisfy { $0.actor == "key:bootstrap" })
                let code = try device.offlineApprovalCode(for: qr)
                #expect(code.wholeMatch(of: /\d{8}-\d{8}/) != nil)
                let verified = try await server.operatorCall(
                    client, "POST", "/api/v1/operations/\(operation.id)/offline-verify",
                    body: try OperatorJSON.encoder().encode(
                        OfflineVerifyRequest(activationId: device.activationId, code: code)),
                    as: OfflineVerifyResponse.self)
                #expect(verified.valid && verified.operation.status == .approved)
                #expect(verified.operation.activationId == device.activationId)
                // The same code cannot approve twice.
                let replay = try await client.send(
                    "POST", "/api/v1/operations/\(operation.id)/offline-verify",
                    headers: ["Authorization": "Bearer \(server.apiKey)"],
                    body: try OperatorJSON.encoder().encode(
                        OfflineVerifyRequest(activationId: device.activationId, code: code)))
                #expect(replay.status == 409 && replay.errorCode == "OPERATION_ALREADY_FINISHED")
            }

            // personal needs the activation; malformed codes are refused before any counting.
            let operation = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            let noActivation = try await client.send(
                "POST", "/api/v1/operations/\(operation.id)/offline-qr",
                headers: ["Authorization": "Bearer \(server.apiKey)"],
                body: try OperatorJSON.encoder().encode(OfflineQRRequest(keyType: .personal, activationId: nil)))
            #expect(noActivation.status == 400)
            let unknownKey = try await client.send(
                "POST", "/api/v1/operations/\(operation.id)/offline-qr",
                headers: ["Authorization": "Bearer \(server.apiKey)"], body: Data(#"{"keyType":"shared"}"#.utf8))
            #expect(unknownKey.status == 400 && unknownKey.errorMessage == "keyType is master or personal.")
            let malformed = try await client.send(
                "POST", "/api/v1/operations/\(operation.id)/offline-verify",
                headers: ["Authorization": "Bearer \(server.apiKey)"],
                body: try OperatorJSON.encoder().encode(
                    OfflineVerifyRequest(activationId: device.activationId, code: "1234")))
            #expect(malformed.status == 400)
        }
    }

    @Test("Approval with a proximity check needs the current TOTP and plausible timestamps", arguments: Backend.all)
    func proximityCheck(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let operation = try await server.createOperation(
                client, try OperationFixtures.payment(userId: "alice", proximityCheck: true))
            #expect(operation.proximityCheck)
            let code = try await server.operatorCall(
                client, "GET", "/api/v1/operations/\(operation.id)/proximity?scheme=mybank",
                as: ProximityCodeResponse.self)
            #expect(code.otp.wholeMatch(of: /\d{8}/) != nil)
            #expect(code.deeplink == "mybank://operation?oid=\(operation.id)&potp=\(code.otp)")
            // The app reads the code from the deeplink or the QR's JWT alike.
            for scanned in [code.deeplink, code.jwt, "mybank://operation?code=\(code.jwt)"] {
                let parsed = try #require(ProximityCode(parsing: scanned))
                #expect(parsed == ProximityCode(operationId: operation.id, totp: code.otp))
            }

            let now = server.clock.now
            func check(_ otp: String, received: Date = now.addingTimeInterval(-2), sent: Date = now) -> ProximityCheck {
                ProximityCheck(otp: otp, type: .qrCode, timestampReceived: received, timestampSent: sent)
            }
            // No proximity code at all is a request error: nothing counts, and the device is told what is missing
            // (not a failed signature, which an app reports as a wrong PIN).
            let missing = try await device.authorizeOperation(id: operation.id, data: operation.data)
            #expect(missing.status == 400 && missing.errorCode == "PROXIMITY_CHECK_MISSING", "\(missing.text)")
            #expect(try await server.operation(client, operation.id).failedAttempts == 0)
            // A wrong or stale code counts against the operation (so it cannot be guessed) and is audited.
            let wrongCode = String(code.otp.reversed()) == code.otp ? "00000000" : String(code.otp.reversed())
            let wrong = try await device.authorizeOperation(
                id: operation.id, data: operation.data, proximityCheck: check(wrongCode))
            #expect(wrong.status == 400 && wrong.errorCode == "PROXIMITY_CHECK_FAILED")
            #expect(wrong.errorMessage?.contains("4 attempts left") == true, "\(wrong.text)")
            let implausible = try await device.authorizeOperation(
                id: operation.id, data: operation.data,
                proximityCheck: check(code.otp, received: now, sent: now.addingTimeInterval(-60)))
            #expect(implausible.status == 400 && implausible.errorCode == "PROXIMITY_CHECK_FAILED")
            #expect(try await server.operation(client, operation.id).failedAttempts == 2)
            let audit = try await server.operatorCall(
                client, "GET", "/api/v1/audit?userId=alice", as: AuditList.self)
            let failures = audit.events.filter { $0.type == "operation.attempt_failed" }
            #expect(failures.count == 2 && failures.allSatisfy { $0.activationId == device.activationId })
            #expect(failures.contains { $0.detail.contains("proximity check code is wrong") })

            // The offline QR of such an operation carries the TOTP as its sixth line, bound into the signature body.
            let qr = try await server.operatorCall(
                client, "POST", "/api/v1/operations/\(operation.id)/offline-qr",
                body: try OperatorJSON.encoder().encode(OfflineQRRequest(keyType: .master, activationId: nil)),
                as: OfflineQRResponse.self
            ).qr
            let parsedQR = try OfflineOperationQR(parsing: qr)
            #expect(qr.split(separator: "\n", omittingEmptySubsequences: false).count == 8)
            #expect(parsedQR.totp?.count == 8)

            let approved = try await device.authorizeOperation(
                id: operation.id, data: operation.data, proximityCheck: check(code.otp))
            #expect(approved.status == 200, "\(approved.text)")
            #expect(try await server.operation(client, operation.id).status == .approved)
        }
    }

    @Test(
        "Every status change reaches the webhook, signed, retried after failures and across a restart",
        arguments: Backend.all)
    func webhooks(backend: Backend) async throws {
        let secret = Data("a webhook secret of enough length".utf8)
        let receiver = WebhookReceiver(failFirst: 2)
        try await receiver.run { url in
            var settings = WebhookSettings(url: url, secret: secret)
            settings.timeout = .seconds(5)
            // The first server process delivers nothing (as if it stopped before delivering): events wait in the
            // outbox table.
            let first = try await TestServer.make(backend)
            defer { Task { await first.shutdown() } }
            let (approvedId, rejectedId) = try await first.live { client in
                var device = try await first.activatedDevice(client)
                let approved = try await first.createOperation(client, try OperationFixtures.payment(userId: "alice"))
                let rejected = try await first.createOperation(client, try OperationFixtures.payment(userId: "alice"))
                #expect(try await device.authorizeOperation(id: approved.id, data: approved.data).status == 200)
                #expect(try await device.rejectOperation(id: rejected.id).status == 200)
                try await Task.sleep(for: .milliseconds(300))
                return (approved.id, rejected.id)
            }
            #expect(receiver.deliveries.withLock { $0.isEmpty })

            // A restarted process with a reachable receiver delivers them, retrying through two 500 answers.
            let second = try await first.sibling(webhook: settings)
            defer { Task { await second.shutdown() } }
            try await second.live { client in
                _ = try await receiver.wait(for: 4)
                let canceled = try await second.createOperation(client, try OperationFixtures.payment(userId: "bob"))
                _ = try await second.operatorCall(
                    client, "POST", "/api/v1/operations/\(canceled.id)/cancel", as: OperationInfo.self)
                let deliveries = try await receiver.wait(for: 5)
                var latest: [String: WebhookPayload] = [:]
                for delivery in deliveries {
                    let signature = try #require(delivery.signature)
                    #expect(
                        WebhookSignature.isValid(
                            signature, body: delivery.body, secret: secret, now: Int64(Date().timeIntervalSince1970)))
                    #expect(
                        !WebhookSignature.isValid(
                            signature, body: delivery.body + Data(" ".utf8), secret: secret,
                            now: Int64(Date().timeIntervalSince1970)))
                    let payload = try OperatorJSON.decoder().decode(WebhookPayload.self, from: delivery.body)
                    latest[payload.operationId] = payload
                }
                #expect(latest[approvedId]?.status == .approved)
                #expect(latest[rejectedId]?.status == .rejected)
                #expect(latest[rejectedId]?.statusReason == "INCORRECT_DATA")
                #expect(latest[canceled.id]?.status == .canceled && latest[canceled.id]?.userId == "bob")
                #expect(latest.count == 3)
            }
        }
    }
}
