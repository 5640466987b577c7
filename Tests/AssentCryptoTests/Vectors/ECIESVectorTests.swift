import AssentCrypto
import Foundation
import Testing

@Suite("Published vectors: ECIES 3.3")
struct ECIESVectorTests {
    static func field(_ vector: [String: String], _ key: String) throws -> String {
        try InputOutput.value(vector, key)
    }

    static func data(_ vector: [String: String], _ key: String) throws -> Data {
        try InputOutput.base64(try field(vector, key), key)
    }

    static func timestamp(_ vector: [String: String], _ key: String) throws -> UInt64 {
        guard let value = UInt64(try field(vector, key)) else { throw Mismatch(description: "\(key) is not a number") }
        return value
    }

    /// Checks sharedInfo2 base, both directions' ciphertext and MAC, and decryption of the published cryptograms.
    static func check(_ vector: [String: String], context: ECIESContext) throws {
        try require(context.sharedInfo2Base, try data(vector, "sharedInfo2Base"), "sharedInfo2 base")
        let envelope = try ECIESEnvelopeKey(data: try data(vector, "envelopeKey"))

        let request = try envelope.seal(
            Data(try field(vector, "requestData").utf8),
            nonce: try data(vector, "requestNonce"),
            timestamp: try timestamp(vector, "timestampRequest"),
            ephemeralPublicKey: try data(vector, "requestEphemeralPublicKey"),
            context: context
        )
        try require(request.encryptedData, try data(vector, "encryptedDataRequest"), "request ciphertext")
        try require(request.mac, try data(vector, "requestMac"), "request MAC")
        try require(
            String(decoding: try envelope.open(request, context: context), as: UTF8.self),
            try field(vector, "requestData"), "decrypted request")

        let response = try ECIES.encryptResponse(
            Data(try field(vector, "responseData").utf8),
            envelopeKey: envelope,
            context: context,
            timestamp: try timestamp(vector, "timestampResponse"),
            nonce: try data(vector, "responseNonce")
        )
        try require(response.encryptedData, try data(vector, "encryptedDataResponse"), "response ciphertext")
        try require(response.mac, try data(vector, "responseMac"), "response MAC")
        let decrypted = try ECIES.decryptResponse(response, envelopeKey: envelope, context: context)
        try require(String(decoding: decrypted, as: UTF8.self), try field(vector, "responseData"), "decrypted response")
    }

    @Test("e2ee-application-scope-3.3.json: application scope, request and response")
    func applicationScope() {
        Vectors.run(
            "powerauth/e2ee-application-scope-3.3.json", key: "e2ee_test_vectors_application_scope", expected: 25,
            as: [String: String].self
        ) { vector in
            try require(try Self.field(vector, "protocolVersion"), "3.3", "protocol version")
            let context = ECIESContext.applicationScope(
                .applicationScopeGeneric,
                applicationKey: try Self.field(vector, "applicationKey"),
                applicationSecret: try Self.field(vector, "applicationSecret"),
                temporaryKeyId: try Self.field(vector, "temporaryKeyId")
            )
            try Self.check(vector, context: context)
        }
    }

    @Test("e2ee-activation-scope-3.3.json: activation scope, request and response")
    func activationScope() {
        Vectors.run(
            "powerauth/e2ee-activation-scope-3.3.json", key: "e2ee_test_vectors_activation_scope", expected: 25,
            as: [String: String].self
        ) { vector in
            try require(try Self.field(vector, "protocolVersion"), "3.3", "protocol version")
            let context = ECIESContext.activationScope(
                .activationScopeGeneric,
                applicationKey: try Self.field(vector, "applicationKey"),
                applicationSecret: try Self.field(vector, "applicationSecret"),
                activationId: try Self.field(vector, "activationId"),
                transportKey: try Self.data(vector, "transportKey"),
                temporaryKeyId: try Self.field(vector, "temporaryKeyId")
            )
            try Self.check(vector, context: context)
        }
    }

    @Test("The spec's worked application-scope request: ECDH and X9.63 KDF from the master server key")
    func workedRequest() throws {
        let context = ECIESContext.applicationScope(
            .applicationScopeGeneric,
            applicationKey: "WQBeNgCHGlW58rzUlP7Ehg==",
            applicationSecret: "Epbv1D+tibvvkqGIyDOT5g==",
            temporaryKeyId: "D3D82A6B-47CF-4225-BBE5-BAD96FB84CA4"
        )
        let serverPrivate = try ECPrivateKey(
            scalar: Data(base64Encoded: "oG1PJWwflQ8XRt4Nf4uzyBf0w0D4jNW22JxfImj4i5w=")!)
        let ephemeral = Data(base64Encoded: "AjpBEi1V6hxMt6SXmn6pFuSNd6S2loTKwqa/9A5hL+lh")!
        let envelope = try ECIESEnvelopeKey.derive(
            sharedSecret: try serverPrivate.sharedSecret(with: try ECPublicKey(x963: ephemeral)),
            ephemeralPublicKey: ephemeral,
            context: context
        )
        #expect(
            envelope.data.base64EncodedString() == "k074hGF+oBZMhhh6BS6CY+4/aaN5TrIwDsVEwn/WjyXWgNSqshjiANmOR36L/Shc")
        let request = ECIESCryptogram(
            ephemeralPublicKey: ephemeral,
            encryptedData: Data(base64Encoded: "7m3Eh0RUc2S4k1sThtVQvwzK1QEiAJwxAgKmTigAqY3wPen5EO+HJG6FolSVTM0J")!,
            mac: Data(base64Encoded: "un7Wreqd91tQp1UuqrKDRwKpCIHn4dxFaD6PEay94tQ=")!,
            nonce: Data(base64Encoded: "yss0YBlx0ERypDj/4HF6oQ==")!,
            timestamp: 1_723_109_505_418
        )
        let (plaintext, derived) = try ECIES.decryptRequest(request, with: serverPrivate, context: context)
        #expect(derived == envelope)
        #expect(!plaintext.isEmpty)
    }
}
