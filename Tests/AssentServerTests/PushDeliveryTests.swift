import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

@Suite("Push delivery through the outbox")
struct PushDeliveryTests {
    /// Registers `device` for APNs pushes with a MAC token.
    static func registerAPNs(_ device: inout TestDevice, token: String) async throws {
        let macToken = try await device.createToken()
        let body = try JSONEncoder().encode(
            RequestEnvelope(PushRegistrationRequest(platform: "apns", token: token, environment: "production")))
        let response = try await device.tokenPost("/api/push/device/register/token", token: macToken, body: body)
        guard response.status == 200 else { throw TestFailure("register: \(response.status) \(response.text)") }
    }

    /// The push outbox message about `operationId` once it is no longer pending.
    static func settledPush(_ server: TestServer, _ operationId: String) async throws -> OutboxItem {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let item = try await server.store.outboxItems(subject: operationId).first(where: {
                $0.channel == .push && $0.state != "pending"
            }) {
                return item
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("the push about \(operationId) was not settled")
    }

    @Test(
        "A new operation written by one process is pushed by another; a finished one silently; a dead token is removed, a credential fault retried",
        arguments: Backend.all)
    func delivery(backend: Backend) async throws {
        let mock = try PushServiceMock()
        try await mock.run { base in
            var settings = PushSettings(apns: try PushContractTests.apnsSettings(base, key: ECPrivateKey()))
            settings.additionalTrustRootsPEM = mock.certificates.caPEM
            let push = settings
            // The first process has no push credentials: its messages wait in the outbox.
            let first = try await TestServer.make(backend)
            defer { Task { await first.shutdown() } }
            let apnsToken = String(repeating: "c0de", count: 16)
            try await first.live { client in
                var device = try await first.activatedDevice(client)
                try await Self.registerAPNs(&device, token: apnsToken)
                let waiting = try await first.createOperation(client, try OperationFixtures.payment(userId: "alice"))
                let queued = try await first.store.outboxItems(subject: waiting.id)
                #expect(queued.map(\.channel) == [.push] && queued.first?.target == device.activationId)
                #expect(queued.first?.event == "operation.created" && queued.first?.state == "pending")
                try await Task.sleep(for: .milliseconds(200))
                #expect(mock.requests(.apns).isEmpty)

                // A second process with APNs credentials delivers it.
                let second = try await first.sibling(push: push)
                defer { Task { await second.shutdown() } }
                let registered = device
                try await second.live { _ in
                    var device = registered
                    let created = try #require(try await mock.wait(.apns, count: 1).first)
                    let stored = try #require(try await first.store.operation(id: waiting.id))
                    #expect(created.path == "/3/device/\(apnsToken)")
                    #expect(created.json["operationId"] as? String == waiting.id)
                    #expect(created.json["activationId"] as? String == device.activationId)
                    let alert = (created.json["aps"] as? [String: Any])?["alert"] as? [String: Any]
                    #expect(alert?["title"] as? String == stored.content.form(acceptLanguage: nil).title)
                    #expect(created.headers["apns-expiration"] == String(stored.expiresAt / 1000))
                    #expect(try await Self.settledPush(first, waiting.id).state == "delivered")

                    // Approval: a silent "finished" push, and the webhook channel is not involved (none set).
                    #expect(try await device.authorizeOperation(id: waiting.id, data: waiting.data).status == 200)
                    let finished = try #require(try await mock.wait(.apns, count: 2).last)
                    #expect(finished.json["messageType"] as? String == "mtoken.operationFinished")
                    #expect(finished.json["mtokenOperationResult"] as? String == "authentication.success")
                    #expect(finished.headers["apns-push-type"] == "background")

                    // Our credentials refused: retried, the registration stays.
                    mock.script(.apns, .init(status: 403, body: #"{"reason":"InvalidProviderToken"}"#))
                    let retried = try await first.createOperation(
                        client, try OperationFixtures.payment(userId: "alice"))
                    let attempts = try await mock.wait(.apns, count: 4).suffix(2)
                    #expect(attempts.allSatisfy { $0.json["operationId"] as? String == retried.id })
                    let retriedItem = try await Self.settledPush(first, retried.id)
                    #expect(retriedItem.state == "delivered" && retriedItem.attempts == 2)
                    let registration = try #require(
                        try await first.store.pushRegistration(activationId: device.activationId))

                    // 410 from before the token was registered: the registration stays.
                    mock.script(
                        .apns,
                        .init(
                            status: 410,
                            body: #"{"reason":"Unregistered","timestamp":\#(registration.registeredAt - 5000)}"#))
                    let stale = try await first.createOperation(client, try OperationFixtures.payment(userId: "alice"))
                    #expect(try await Self.settledPush(first, stale.id).state == "abandoned")
                    #expect(try await first.store.pushRegistration(activationId: device.activationId) != nil)

                    // BadDeviceToken: the registration goes, audited.
                    mock.script(.apns, .init(status: 400, body: #"{"reason":"BadDeviceToken"}"#))
                    let dead = try await first.createOperation(client, try OperationFixtures.payment(userId: "alice"))
                    let deadItem = try await Self.settledPush(first, dead.id)
                    #expect(deadItem.state == "abandoned" && deadItem.lastError?.contains("BadDeviceToken") == true)
                    #expect(try await first.store.pushRegistration(activationId: device.activationId) == nil)
                    let audit = try await first.store.audit(activationId: device.activationId, userId: nil, limit: 20)
                    #expect(audit.contains { $0.type == "push.unregistered" })

                    // Without a registration, a new operation writes no push message.
                    let unannounced = try await first.createOperation(
                        client, try OperationFixtures.payment(userId: "alice"))
                    #expect(try await first.store.outboxItems(subject: unannounced.id).isEmpty)
                    #expect(mock.requests(.apns).count == 6)
                }
            }
        }
    }
}
