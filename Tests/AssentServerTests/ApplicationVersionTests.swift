import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

@Suite("Application versions: a key and secret per app build, supported or not")
struct ApplicationVersionTests {
    @Test(
        "A device of a second version activates and signs beside the first; unsupported it is refused with a clear error, supported again it works",
        arguments: Backend.all)
    func versions(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let applications = try await server.operatorCall(
                client, "GET", "/api/v1/applications", as: ApplicationList.self)
            #expect(applications.applications.map(\.applicationId) == [server.application.id])
            let base = "/api/v1/applications/\(server.application.id)"
            // The application's own key and secret are its version 1.
            let initial = try await server.operatorCall(
                client, "GET", "\(base)/versions", as: ApplicationVersionList.self)
            #expect(initial.versions.map(\.name) == ["1"])
            #expect(initial.versions.first?.applicationKey == server.application.applicationKey)
            #expect(initial.versions.first?.sdkConfiguration == (try server.configuration.text))

            let created = try await server.operatorCall(
                client, "POST", "\(base)/versions",
                body: try OperatorJSON.encoder().encode(CreateApplicationVersionRequest(name: "2026.11")),
                as: ApplicationVersionInfo.self)
            #expect(created.supported && created.applicationKey != server.application.applicationKey)

            // A device of each version: activation, a token, an approval.
            var first = try await server.activatedDevice(client)
            let activation = try await server.createActivation(client, userId: "bob")
            var second = TestDevice(
                client: client, configuration: try SDKConfiguration(parsing: created.sdkConfiguration))
            try await second.activate(code: activation.activationCode)
            _ = try await second.createToken()
            let bobs = try await server.createOperation(client, try OperationFixtures.payment(userId: "bob"))
            #expect(try await second.authorizeOperation(id: bobs.id, data: bobs.data).status == 200)

            // Unsupported: every call naming the version's key is refused, the other version's devices go on.
            let unsupported = try await server.operatorCall(
                client, "POST", "\(base)/versions/\(created.versionId)/unsupport", as: ApplicationVersionInfo.self)
            #expect(!unsupported.supported)
            let refusedOperation = try await server.createOperation(
                client, try OperationFixtures.payment(userId: "bob"))
            let refused = try await second.authorizeOperation(id: refusedOperation.id, data: refusedOperation.data)
            // The Mobile Token API keeps its closed list of codes; the sentence says what to do.
            #expect(refused.status == 401 && refused.text.contains("POWERAUTH_AUTH_FAIL"), "\(refused.text)")
            #expect(refused.text.contains("update the app"), "\(refused.text)")
            // PowerAuth's own endpoints name it.
            do {
                _ = try await second.createToken()
                Issue.record("a token was made for a device of an unsupported version")
            } catch {
                #expect("\(error)".contains("APPLICATION_VERSION_UNSUPPORTED"), "\(error)")
            }
            let configuration = try await client.send(
                "GET",
                "/api/device/configuration?applicationKey=\(created.applicationKey.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"
            )
            #expect(configuration.status == 401 && configuration.text.contains("APPLICATION_VERSION_UNSUPPORTED"))
            let alices = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            #expect(try await first.authorizeOperation(id: alices.id, data: alices.data).status == 200)
            // Nothing was counted against the refused device.
            let bob = try await server.operatorCall(
                client, "GET", "/api/v1/activations/\(second.activationId)", as: ActivationInfo.self)
            #expect(bob.failedAttempts == 0 && bob.status == "ACTIVE")

            // Supported again (the version named by its name this time): the same device approves.
            let again = try await server.operatorCall(
                client, "POST", "\(base)/versions/2026.11/support", as: ApplicationVersionInfo.self)
            #expect(again.versionId == created.versionId && again.supported)
            #expect(
                try await second.authorizeOperation(id: refusedOperation.id, data: refusedOperation.data).status == 200)

            // Refusals with a code and a sentence.
            func post(_ path: String, _ body: String) async throws -> HTTPClient.Response {
                try await client.send(
                    "POST", path, headers: ["Authorization": "Bearer \(server.apiKey)"], body: Data(body.utf8))
            }
            let duplicate = try await post("\(base)/versions", #"{"name":"2026.11"}"#)
            #expect(duplicate.status == 409 && duplicate.text.contains("ERR_CONFLICT"))
            let badName = try await post("\(base)/versions", #"{"name":"two words"}"#)
            #expect(badName.status == 400 && badName.text.contains("letters, digits"))
            #expect(try await post("/api/v1/applications/nope/versions", #"{"name":"x"}"#).status == 404)
            #expect(try await post("\(base)/versions/nope/unsupport", "").status == 404)
            let audit = try await server.store.auditEvents(AuditFilter(typePrefix: "application.version"), limit: 10)
            #expect(
                Set(audit.map(\.type))
                    == [
                        "application.version_created", "application.version_unsupported",
                        "application.version_supported",
                    ])
        }
    }
}
