import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@Suite("Bad input gets a 4xx with a code, and the server keeps serving")
struct BadInputTests {
    @Test(
        "Malformed JSON, bad Base64, a wrong ECIES MAC, an unknown activation and a 2 MB body", arguments: Backend.all)
    func badInput(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let malformed = try await client.send("POST", "/pa/v3/activation/status", body: Data("{not json".utf8))
            #expect(malformed.status == 400)
            #expect(malformed.errorCode == "ERR_REQUEST")

            let badBase64 = try await client.send(
                "POST", "/pa/v3/activation/status",
                body: Data(#"{"requestObject":{"activationId":"x","challenge":"%%%"}}"#.utf8))
            #expect(badBase64.status == 400)
            #expect(badBase64.errorCode == "ERR_REQUEST")

            let unknown = try await client.send(
                "POST", "/pa/v3/activation/status",
                body: Data(
                    #"{"requestObject":{"activationId":"nope","challenge":"\#(Bytes.random(count: 16).base64EncodedString())"}}"#
                        .utf8))
            #expect(unknown.status == 400)
            #expect(unknown.errorCode == "ACTIVATION_NOT_FOUND")

            let created = try await server.createActivation(client)
            let device = TestDevice(client: client, configuration: try server.configuration)
            let tampered = try await device.sendActivation(code: created.activationCode, tamper: true).0
            #expect(tampered.status == 400)
            #expect(tampered.errorCode == "ERR_ENCRYPTION")

            var stranger = try await server.activatedDevice(client, userId: "mallory")
            stranger.activationId = UUID().uuidString.lowercased()
            let unknownSigner = try await stranger.validateSignature()
            #expect(unknownSigner.status == 401)
            #expect(unknownSigner.errorCode == "POWERAUTH_AUTH_FAIL")

            let noHeader = try await client.send("POST", "/pa/v3/signature/validate", body: Data("{}".utf8))
            #expect(noHeader.status == 401)
            #expect(noHeader.errorCode == "POWERAUTH_AUTH_FAIL")

            let huge = try await client.send(
                "POST", "/pa/v3/activation/status", body: Data(repeating: 0x20, count: 2 * 1024 * 1024))
            #expect(huge.status == 400 || huge.status == 413)
            #expect(huge.errorCode == "ERR_PAYLOAD_TOO_LARGE")

            let hugeOperator = try await client.send(
                "POST", "/api/v1/activations", headers: ["Authorization": "Bearer \(server.apiKey)"],
                body: Data(repeating: 0x20, count: 2 * 1024 * 1024))
            #expect(hugeOperator.status == 413)

            // The code survived the tampered attempt, and the server still serves.
            var good = TestDevice(client: client, configuration: try server.configuration)
            try await good.activate(code: created.activationCode)
            #expect(try await client.send("GET", "/health").status == 200)
        }
    }
}

@Suite("Operator API")
struct OperatorAPITests {
    @Test("Keys are required, scopes are enforced, revoked keys stop working", arguments: Backend.all)
    func authentication(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            #expect(try await client.send("GET", "/api/v1/application").status == 401)
            #expect(
                try await client.send("GET", "/api/v1/application", headers: ["Authorization": "Bearer ak_wrong"])
                    .status == 401)
            let created = try await server.operatorCall(
                client, "POST", "/api/v1/api-keys",
                body: try OperatorJSON.encoder().encode(
                    CreateAPIKeyRequest(name: "reader", scopes: ["activations:read"])),
                as: CreateAPIKeyResponse.self)
            let reader = ["Authorization": "Bearer \(created.apiKey)"]
            #expect(try await client.send("GET", "/api/v1/users/alice/activations", headers: reader).status == 200)
            let forbidden = try await client.send(
                "POST", "/api/v1/activations", headers: reader, body: Data(#"{"userId":"a"}"#.utf8))
            #expect(forbidden.status == 403)
            #expect(forbidden.errorCode == "FORBIDDEN")
            let list = try await server.operatorCall(client, "GET", "/api/v1/api-keys", as: APIKeyList.self)
            #expect(Set(list.apiKeys.map(\.name)) == ["bootstrap", "reader"])
            #expect(
                try await client.send(
                    "DELETE", "/api/v1/api-keys/\(created.id)", headers: ["Authorization": "Bearer \(server.apiKey)"]
                ).status == 204)
            #expect(try await client.send("GET", "/api/v1/users/alice/activations", headers: reader).status == 401)
        }
    }

    @Test("The application answer carries an SDK configuration that decodes to the same keys", arguments: Backend.all)
    func application(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let info = try await server.operatorCall(client, "GET", "/api/v1/application", as: ApplicationInfo.self)
            let configuration = try SDKConfiguration(parsing: info.sdkConfiguration)
            #expect(configuration.applicationKey == info.applicationKey)
            #expect(configuration.applicationSecret == info.applicationSecret)
            #expect(configuration.masterServerPublicKey.x963.base64EncodedString() == info.masterServerPublicKey)
            let invalid = try await client.send(
                "POST", "/api/v1/activations", headers: ["Authorization": "Bearer \(server.apiKey)"],
                body: Data(#"{"userId":"a","commitMode":"sometimes"}"#.utf8))
            #expect(invalid.status == 400)
            let missing = try await client.send(
                "GET", "/api/v1/activations/none", headers: ["Authorization": "Bearer \(server.apiKey)"])
            #expect(missing.status == 404)
            #expect(missing.errorCode == "ACTIVATION_NOT_FOUND")
        }
    }
}
