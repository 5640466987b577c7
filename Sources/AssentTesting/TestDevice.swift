import AssentCrypto
import AssentModel
import Foundation

/// A device written with AssentCrypto only, speaking PowerAuth 3.3 over HTTP the way a phone does.
///
/// Tests and load benchmarks use it as an independent client of the server.
public struct TestDevice: Sendable {
    /// The server it talks to (a device reaches another process of the same server by changing it).
    public var client: HTTPClient
    public let configuration: SDKConfiguration
    public let deviceKey = ECPrivateKey()
    public var activationId = ""
    public var serverPublicKey: ECPublicKey?
    public var keys: ActivationKeys?
    public var counter: HashCounter?
    public var fingerprint = ""

    static let encoder = JSONEncoder()
    static let decoder = JSONDecoder()

    /// A fresh device for the application `configuration` describes.
    public init(client: HTTPClient, configuration: SDKConfiguration) {
        self.client = client
        self.configuration = configuration
    }

    var now: UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    /// `/pa/v3/keystore/create`; verifies the server's ES256 answer and returns the key id and public key.
    public func temporaryKey(activationScope: Bool) async throws -> (id: String, publicKey: ECPublicKey) {
        let appSecret = Data(base64Encoded: configuration.applicationSecret)!
        let challenge = Bytes.random(count: 16).base64EncodedString()
        let claims = TemporaryKeyRequestClaims(
            applicationKey: configuration.applicationKey, activationId: activationScope ? activationId : nil,
            challenge: challenge)
        let hmacKey =
            activationScope ? KeyDerivation.deriveInternal(from: keys!.transport, index: appSecret) : appSecret
        let jwt = try CompactJWS.sign(payload: try Self.encoder.encode(claims), with: .hs256(hmacKey))
        let response = try await client.send(
            "POST", "/pa/v3/keystore/create",
            body: try Self.encoder.encode(RequestEnvelope(TemporaryKeyRequest(jwt: jwt))))
        guard response.status == 200 else { throw TestFailure("keystore: \(response.status) \(response.text)") }
        let answer = try Self.decoder.decode(ResponseEnvelope<TemporaryKeyResponse>.self, from: response.body)
        let signer = activationScope ? serverPublicKey! : configuration.masterServerPublicKey
        let payload = try CompactJWS.verify(answer.responseObject.jwt, with: .es256(signer))
        let responseClaims = try Self.decoder.decode(TemporaryKeyResponseClaims.self, from: payload)
        guard responseClaims.challenge == challenge else { throw TestFailure("challenge not echoed") }
        return (responseClaims.sub, try ECPublicKey(base64: responseClaims.publicKey))
    }

    public func applicationContext(_ sharedInfo1: ECIESSharedInfo1, keyId: String) -> ECIESContext {
        .applicationScope(
            sharedInfo1, applicationKey: configuration.applicationKey,
            applicationSecret: configuration.applicationSecret, temporaryKeyId: keyId)
    }

    public func activationContext(_ sharedInfo1: ECIESSharedInfo1, keyId: String) -> ECIESContext {
        .activationScope(
            sharedInfo1, applicationKey: configuration.applicationKey,
            applicationSecret: configuration.applicationSecret, activationId: activationId,
            transportKey: keys!.transport, temporaryKeyId: keyId)
    }

    /// The raw `/pa/v3/activation/create` exchange; returns the HTTP response.
    public func sendActivation(code: String, tamper: Bool = false) async throws -> (
        HTTPClient.Response, outer: ECIESEnvelopeKey, inner: ECIESEnvelopeKey, keyId: String
    ) {
        let key = try await temporaryKey(activationScope: false)
        let layer2 = ActivationLayer2Request(
            devicePublicKey: deviceKey.publicKey.compressed.base64EncodedString(), activationName: "Test phone",
            platform: "linux", deviceInfo: "swift-test")
        let (inner, innerKey) = try ECIES.encryptRequest(
            try Self.encoder.encode(layer2), to: key.publicKey,
            context: applicationContext(.activationLayer2, keyId: key.id), timestamp: now)
        let layer1 = ActivationLayer1Request(
            code: code, activationData: EncryptedRequest(temporaryKeyId: key.id, cryptogram: inner))
        var (outer, outerKey) = try ECIES.encryptRequest(
            try Self.encoder.encode(layer1), to: key.publicKey,
            context: applicationContext(.applicationScopeGeneric, keyId: key.id), timestamp: now)
        if tamper { outer.mac[0] ^= 1 }
        let response = try await client.send(
            "POST", "/pa/v3/activation/create",
            headers: [EncryptionHeader.name: EncryptionHeader(applicationKey: configuration.applicationKey).value],
            body: try Self.encoder.encode(EncryptedRequest(temporaryKeyId: key.id, cryptogram: outer)))
        return (response, outerKey, innerKey, key.id)
    }

    /// Activates with an activation code and returns the fingerprint.
    public mutating func activate(code: String) async throws {
        let (response, outerKey, innerKey, keyId) = try await sendActivation(code: code)
        guard response.status == 200 else { throw TestFailure("activation: \(response.status) \(response.text)") }
        let outer = try Self.decoder.decode(EncryptedResponse.self, from: response.body)
        let layer1 = try Self.decoder.decode(
            ActivationLayer1Response.self,
            from: try ECIES.decryptResponse(
                try outer.cryptogram(), envelopeKey: outerKey,
                context: applicationContext(.applicationScopeGeneric, keyId: keyId)))
        let layer2 = try Self.decoder.decode(
            ActivationLayer2Response.self,
            from: try ECIES.decryptResponse(
                try layer1.activationData.cryptogram(), envelopeKey: innerKey,
                context: applicationContext(.activationLayer2, keyId: keyId)))
        activationId = layer2.activationId
        let serverKey = try ECPublicKey(base64: layer2.serverPublicKey)
        serverPublicKey = serverKey
        keys = try ActivationKeys(
            masterSecret: try KeyDerivation.masterSecret(privateKey: deviceKey, publicKey: serverKey))
        counter = try HashCounter(base64: layer2.ctrData)
        fingerprint = ActivationFingerprint.compute(
            devicePublicKey: deviceKey.publicKey, activationId: activationId, serverPublicKey: serverKey)
    }

    /// Builds the authorization header for a request and advances the local counter, as the SDK does.
    public mutating func authorization(
        method: String = "POST", uriId: String, body: Data, type: SignatureType = .possessionKnowledge,
        wrongKnowledgeKey: Bool = false
    ) throws -> String {
        var factorKeys = keys!.signatureKeys(for: type)
        if wrongKnowledgeKey, type.factors.contains(.knowledge) { factorKeys[1] = Bytes.random(count: 16) }
        let nonce = Bytes.random(count: 16)
        let data = PowerAuthSignature.dataToSign(
            method: method, uriId: uriId, nonce: nonce, body: body,
            applicationSecret: configuration.applicationSecret)
        let signature = try PowerAuthSignature.compute(data: data, counter: counter!, keys: factorKeys, format: .base64)
        counter = counter!.next()
        return AuthorizationHeader(
            activationId: activationId, applicationKey: configuration.applicationKey, nonce: nonce,
            signatureType: type, signature: signature
        ).value
    }

    /// `/pa/v3/signature/validate` with a 2FA signature.
    public mutating func validateSignature(body: Data = Data(#"{"amount":"100"}"#.utf8), wrongPIN: Bool = false)
        async throws -> HTTPClient.Response
    {
        let header = try authorization(uriId: "/pa/signature/validate", body: body, wrongKnowledgeKey: wrongPIN)
        return try await client.send(
            "POST", "/pa/v3/signature/validate", headers: [AuthorizationHeader.name: header], body: body)
    }

    /// `/pa/v3/activation/status`, decrypted.
    public func status() async throws -> ActivationStatusBlob {
        let challenge = Bytes.random(count: 16)
        let response = try await client.send(
            "POST", "/pa/v3/activation/status",
            body: try Self.encoder.encode(
                RequestEnvelope(
                    ActivationStatusRequest(activationId: activationId, challenge: challenge.base64EncodedString()))))
        guard response.status == 200 else { throw TestFailure("status: \(response.status) \(response.text)") }
        let object = try Self.decoder.decode(ResponseEnvelope<ActivationStatusResponse>.self, from: response.body)
            .responseObject
        return try ActivationStatusBlob(
            decrypting: Data(base64Encoded: object.encryptedStatusBlob)!, transportKey: keys!.transport,
            challenge: challenge, nonce: Data(base64Encoded: object.nonce)!)
    }

    /// `/pa/v3/token/create`: returns the token id and secret.
    public mutating func createToken() async throws -> TokenCreateResponse {
        let key = try await temporaryKey(activationScope: true)
        let context = activationContext(.createToken, keyId: key.id)
        let (request, envelope) = try ECIES.encryptRequest(
            Data("{}".utf8), to: key.publicKey, context: context, timestamp: now)
        let body = try Self.encoder.encode(EncryptedRequest(temporaryKeyId: key.id, cryptogram: request))
        let header = try authorization(uriId: "/pa/token/create", body: body, type: .possession)
        let response = try await client.send(
            "POST", "/pa/v3/token/create", headers: [AuthorizationHeader.name: header], body: body)
        guard response.status == 200 else { throw TestFailure("token: \(response.status) \(response.text)") }
        let encrypted = try Self.decoder.decode(EncryptedResponse.self, from: response.body)
        return try Self.decoder.decode(
            TokenCreateResponse.self,
            from: try ECIES.decryptResponse(try encrypted.cryptogram(), envelopeKey: envelope, context: context))
    }

    /// `/pa/v3/vault/unlock`: returns the decrypted vault key.
    public mutating func unlockVault() async throws -> Data {
        let key = try await temporaryKey(activationScope: true)
        let context = activationContext(.vaultUnlock, keyId: key.id)
        let (request, envelope) = try ECIES.encryptRequest(
            try Self.encoder.encode(VaultUnlockRequest(reason: "ADD_BIOMETRY")), to: key.publicKey, context: context,
            timestamp: now)
        let body = try Self.encoder.encode(EncryptedRequest(temporaryKeyId: key.id, cryptogram: request))
        let header = try authorization(uriId: "/pa/vault/unlock", body: body)
        let response = try await client.send(
            "POST", "/pa/v3/vault/unlock", headers: [AuthorizationHeader.name: header], body: body)
        guard response.status == 200 else { throw TestFailure("vault: \(response.status) \(response.text)") }
        let encrypted = try Self.decoder.decode(EncryptedResponse.self, from: response.body)
        let answer = try Self.decoder.decode(
            VaultUnlockResponse.self,
            from: try ECIES.decryptResponse(try encrypted.cryptogram(), envelopeKey: envelope, context: context))
        return try VaultKeyTransport.decrypt(
            Data(base64Encoded: answer.encryptedVaultEncryptionKey)!, transportKey: keys!.transport)
    }
}
