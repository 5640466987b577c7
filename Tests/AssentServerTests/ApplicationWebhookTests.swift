import AssentModel
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// Each application's own webhook: its operations' status changes go there signed with its own key; the server's
/// webhook keeps the applications without one.
@Suite("Webhooks per application")
struct ApplicationWebhookTests {
    @Test(
        "An application's status changes go to its own webhook with its own key; the others' to the server's; removed, back to the server's",
        arguments: Backend.all)
    func perApplication(_ backend: Backend) async throws {
        let serverReceiver = WebhookReceiver()
        let businessReceiver = WebhookReceiver()
        try await serverReceiver.run { serverURL in
            try await businessReceiver.run { businessURL in
                let serverSecret = Data("the server's own webhook key".utf8)
                let server = try await TestServer.make(
                    backend, webhook: WebhookSettings(url: serverURL, secret: serverSecret))
                defer { Task { await server.shutdown() } }
                try await server.live { client in
                    func send(_ method: String, _ path: String, _ body: String = "") async throws
                        -> HTTPClient.Response
                    {
                        try await server.operatorSend(client, method, path, body)
                    }
                    let business = try await server.createApplication(client)
                    let q = "?application=\(business.applicationId)"
                    let path = "/api/v1/applications/\(business.applicationId)/webhook"
                    #expect(try await send("GET", path).status == 404)
                    let ftp = try await send("PUT", path, #"{"url":"ftp://business.example/hook"}"#)
                    #expect(ftp.status == 400 && ftp.text.contains("http(s) URL"))
                    let short = try await send("PUT", path, #"{"url":"\#(businessURL)","secret":"short"}"#)
                    #expect(short.status == 400 && short.text.contains("16 to 256 characters"))

                    // Set without a key: the answer carries a new one, once.
                    let set = try await server.operatorCall(
                        client, "PUT", path,
                        body: try OperatorJSON.encoder().encode(
                            SetApplicationWebhookRequest(url: businessURL.absoluteString)),
                        as: ApplicationWebhookInfo.self)
                    let businessSecret = Data(try #require(set.secret).utf8)
                    #expect(businessSecret.count >= 40)
                    let shown = try await server.operatorCall(client, "GET", path, as: ApplicationWebhookInfo.self)
                    #expect(shown.url == businessURL.absoluteString && shown.secret == nil)

                    /// Creates and cancels an operation in the application `query` names.
                    func cancelOne(_ query: String) async throws -> String {
                        let operation = try await server.operatorCall(
                            client, "POST", "/api/v1/operations\(query)",
                            body: try OperatorJSON.encoder().encode(try OperationFixtures.payment(userId: "alice")),
                            as: OperationInfo.self)
                        #expect(
                            try await send("POST", "/api/v1/operations/\(operation.id)/cancel\(query)").status == 200)
                        return operation.id
                    }
                    func payload(_ delivery: WebhookReceiver.Delivery) throws -> WebhookPayload {
                        try OperatorJSON.decoder().decode(WebhookPayload.self, from: delivery.body)
                    }
                    let now = Int64(server.environment.now().timeIntervalSince1970)

                    // The second application's change: to its webhook, signed with its key (not the server's).
                    let businessOperation = try await cancelOne(q)
                    let toBusiness = try #require(try await businessReceiver.wait(for: 1).first)
                    #expect(try payload(toBusiness).operationId == businessOperation)
                    #expect(try payload(toBusiness).applicationId == business.applicationId)
                    let signature = try #require(toBusiness.signature)
                    #expect(
                        WebhookSignature.isValid(signature, body: toBusiness.body, secret: businessSecret, now: now))
                    #expect(
                        !WebhookSignature.isValid(signature, body: toBusiness.body, secret: serverSecret, now: now))

                    // The first application's: to the server's webhook.
                    let retailOperation = try await cancelOne("")
                    let toServer = try #require(try await serverReceiver.wait(for: 1).first)
                    #expect(try payload(toServer).operationId == retailOperation)
                    #expect(try payload(toServer).applicationId == server.application.id)
                    #expect(
                        WebhookSignature.isValid(
                            try #require(toServer.signature), body: toServer.body, secret: serverSecret, now: now))
                    #expect(businessReceiver.deliveries.withLock { $0.count } == 1)

                    // Removed: the second application's next change goes to the server's webhook.
                    #expect(try await send("DELETE", path).status == 204)
                    #expect(try await send("DELETE", path).status == 404)
                    let later = try await cancelOne(q)
                    let both = try await serverReceiver.wait(for: 2)
                    #expect(try payload(both[1]).operationId == later)
                    #expect(businessReceiver.deliveries.withLock { $0.count } == 1)
                    let audit = try await server.store.auditEvents(
                        AuditFilter(typePrefix: "application.webhook_"), limit: 10)
                    #expect(audit.map(\.type).sorted() == ["application.webhook_removed", "application.webhook_set"])
                    #expect(!audit.contains { $0.detail.contains(String(decoding: businessSecret, as: UTF8.self)) })
                }
            }
        }
    }

    @Test("A server without a webhook of its own delivers an application's", arguments: Backend.all)
    func applicationOnly(_ backend: Backend) async throws {
        let receiver = WebhookReceiver()
        try await receiver.run { url in
            let server = try await TestServer.make(backend)
            defer { Task { await server.shutdown() } }
            try await server.live { client in
                _ = try await server.operatorCall(
                    client, "PUT", "/api/v1/applications/\(server.application.id)/webhook",
                    body: try OperatorJSON.encoder().encode(
                        SetApplicationWebhookRequest(url: url.absoluteString, secret: "a key of twenty chars")),
                    as: ApplicationWebhookInfo.self)
                let operation = try await server.createOperation(client, try OperationFixtures.payment(userId: "bob"))
                _ = try await server.operatorSend(client, "POST", "/api/v1/operations/\(operation.id)/cancel")
                let delivery = try #require(try await receiver.wait(for: 1).first)
                let sent = try OperatorJSON.decoder().decode(WebhookPayload.self, from: delivery.body)
                #expect(sent.operationId == operation.id && sent.status == .canceled)
            }
        }
    }
}
