import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

@Suite("Bad input gets a 4xx with a code, and the server keeps serving")
struct BadInputTests {
    @Test(
        "Malformed JSON, bad Base64, a wrong ECIES MAC, an unknown signer and a 2 MB body", arguments: Backend.all)
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

extension BadInputTests {
    @Test(
        "Device credentials that do not verify answer 401; an unknown activation's status is random bytes",
        arguments: Backend.all)
    func deviceCredentials(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            // activation/status: the same shape for an unknown id and for an activation the device has not completed,
            // fresh random bytes each time, which the real device's transport key does not open.
            let created = try await server.createActivation(client)
            let device = try await server.activatedDevice(client, userId: "alice")
            for activationId in ["nope", created.activationId, UUID().uuidString.lowercased()] {
                let challenge = Bytes.random(count: 16)
                var answers: [ActivationStatusResponse] = []
                for _ in 0..<2 {
                    let response = try await client.send(
                        "POST", "/pa/v3/activation/status",
                        body: try JSONEncoder().encode(
                            RequestEnvelope(
                                ActivationStatusRequest(
                                    activationId: activationId, challenge: challenge.base64EncodedString()))))
                    #expect(response.status == 200, "\(activationId): \(response.text)")
                    let answer = try JSONDecoder().decode(
                        ResponseEnvelope<ActivationStatusResponse>.self, from: response.body
                    ).responseObject
                    #expect(answer.activationId == activationId)
                    #expect(Data(base64Encoded: answer.encryptedStatusBlob)?.count == 32)
                    #expect(Data(base64Encoded: answer.nonce)?.count == 16)
                    #expect(
                        throws: (any Error).self,
                        "a random blob must not decrypt to a status"
                    ) {
                        try ActivationStatusBlob(
                            decrypting: Data(base64Encoded: answer.encryptedStatusBlob)!,
                            transportKey: device.keys!.transport, challenge: challenge,
                            nonce: Data(base64Encoded: answer.nonce)!)
                    }
                    answers.append(answer)
                }
                #expect(answers[0].encryptedStatusBlob != answers[1].encryptedStatusBlob)
            }
            // The real device still reads its own status.
            #expect(try await device.status().state == .active)

            // keystore/create: the JWT is the credential.
            let configuration = try server.configuration
            func keystore(_ jwt: String) async throws -> HTTPClient.Response {
                try await client.send(
                    "POST", "/pa/v3/keystore/create",
                    body: try JSONEncoder().encode(RequestEnvelope(TemporaryKeyRequest(jwt: jwt))))
            }
            let claims = try JSONEncoder().encode(
                TemporaryKeyRequestClaims(
                    applicationKey: configuration.applicationKey, activationId: nil, challenge: "c"))
            let unknownActivation = try JSONEncoder().encode(
                TemporaryKeyRequestClaims(
                    applicationKey: configuration.applicationKey, activationId: UUID().uuidString.lowercased(),
                    challenge: "c"))
            let appSecret = Data(base64Encoded: configuration.applicationSecret)!
            for jwt in [
                "0.0.0", "not a jwt", try CompactJWS.sign(payload: claims, with: .hs256(Bytes.random(count: 16))),
                try CompactJWS.sign(payload: unknownActivation, with: .hs256(appSecret)),
            ] {
                let refused = try await keystore(jwt)
                #expect(refused.status == 401, "\(jwt)")
                #expect(refused.errorCode == "POWERAUTH_AUTH_FAIL")
            }
            // Claims are checked once the signature verifies: an empty challenge is a request error.
            let emptyChallenge = try JSONEncoder().encode(
                TemporaryKeyRequestClaims(
                    applicationKey: configuration.applicationKey, activationId: nil, challenge: ""))
            let badClaims = try await keystore(try CompactJWS.sign(payload: emptyChallenge, with: .hs256(appSecret)))
            #expect(badClaims.status == 400 && badClaims.errorCode == "ERR_REQUEST")
            #expect(try await keystore(try CompactJWS.sign(payload: claims, with: .hs256(appSecret))).status == 200)

            // activation/create: the encryption header names the application.
            for header in [
                nil, "PowerAuth version=\"3.3\"", "Bearer x",
                "PowerAuth version=\"3.3\", application_key=\"AAAAAAAAAAAAAAAAAAAAAA==\"",
            ] {
                let refused = try await client.send(
                    "POST", "/pa/v3/activation/create",
                    headers: header.map { [EncryptionHeader.name: $0] } ?? [:],
                    body: Data(
                        #"{"temporaryKeyId":"k","ephemeralPublicKey":"AA==","encryptedData":"AA==","mac":"AA==","nonce":"AA==","timestamp":1}"#
                            .utf8))
                #expect(refused.status == 401, "\(header ?? "no header")")
                #expect(refused.errorCode == "POWERAUTH_AUTH_FAIL")
            }
        }
    }
}

@Suite("Operator API")
struct OperatorAPITests {
    /// Every route of the operator API admits exactly the scope its OpenAPI operation names: a key with any other
    /// single scope gets 403 naming that scope, a key with it gets past the check (whatever the request's fate).
    @Test("Each operator route needs the scope the OpenAPI document names, and no other")
    func scopesMatchTheDocument() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let document = try await client.send("GET", "/api/v1/openapi.json")
            let paths = try #require(
                (try JSONSerialization.jsonObject(with: document.body) as? [String: Any])?["paths"]
                    as? [String: [String: Any]])
            var routes: [(method: String, path: String, scope: String)] = []
            for (path, operations) in paths where path.hasPrefix("/api/v1/") {
                for (method, operation) in operations {
                    let security = (operation as? [String: Any])?["security"] as? [[String: [String]]]
                    guard let scope = security?.first?["apiKey"]?.first else { continue }
                    let concrete = path.replacingOccurrences(
                        of: #"\{[A-Za-z]+\}"#, with: "x1", options: .regularExpression)
                    routes.append((method.uppercased(), concrete, scope))
                }
            }
            #expect(routes.count >= 39)
            var keys: [String: String] = [:]
            for scope in Set(routes.map(\.scope)) {
                let created = try await server.operatorCall(
                    client, "POST", "/api/v1/api-keys",
                    body: try OperatorJSON.encoder().encode(
                        CreateAPIKeyRequest(name: "only \(scope)", scopes: [scope])),
                    as: CreateAPIKeyResponse.self)
                keys[scope] = created.apiKey
            }
            for route in routes {
                let body = route.method == "GET" ? Data() : Data("{}".utf8)
                let other = try #require(keys.keys.filter { $0 != route.scope }.sorted().first)
                let refused = try await client.send(
                    route.method, route.path, headers: ["Authorization": "Bearer \(keys[other]!)"],
                    body: body)
                #expect(
                    refused.status == 403 && refused.errorMessage?.contains(route.scope) == true,
                    "\(route.method) \(route.path) with \(other): \(refused.status)")
                let admitted = try await client.send(
                    route.method, route.path, headers: ["Authorization": "Bearer \(keys[route.scope]!)"],
                    body: body)
                #expect(
                    ![401, 403].contains(admitted.status), "\(route.method) \(route.path): \(admitted.status)")
            }
        }
    }

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
