import AssentCrypto
import Foundation
import Testing

@Suite("ECIES round trips and rejections")
struct ECIESTests {
    static let applicationKey = Bytes.random(count: 16).base64EncodedString()
    static let applicationSecret = Bytes.random(count: 16).base64EncodedString()

    static func context(_ scope: String, sharedInfo1: ECIESSharedInfo1 = .applicationScopeGeneric) -> ECIESContext {
        switch scope {
        case "application":
            ECIESContext.applicationScope(
                sharedInfo1, applicationKey: applicationKey, applicationSecret: applicationSecret,
                temporaryKeyId: "temporary-key")
        default:
            ECIESContext.activationScope(
                sharedInfo1, applicationKey: applicationKey, applicationSecret: applicationSecret,
                activationId: "activation", transportKey: Data(repeating: 7, count: 16), temporaryKeyId: "temporary-key"
            )
        }
    }

    @Test("Device request → server → response → device, in both scopes", arguments: ["application", "activation"])
    func roundTrip(scope: String) throws {
        let server = ECPrivateKey()
        let context = Self.context(scope)
        let (request, deviceEnvelope) = try ECIES.encryptRequest(
            Data("request".utf8), to: server.publicKey, context: context, timestamp: 1000)
        let (plaintext, serverEnvelope) = try ECIES.decryptRequest(request, with: server, context: context)
        #expect(plaintext == Data("request".utf8))
        #expect(serverEnvelope == deviceEnvelope)
        let response = try ECIES.encryptResponse(
            Data("response".utf8), envelopeKey: serverEnvelope, context: context, timestamp: 1001)
        #expect(response.ephemeralPublicKey == nil)
        #expect(
            try ECIES.decryptResponse(response, envelopeKey: deviceEnvelope, context: context) == Data("response".utf8))
    }

    @Test("A compressed ephemeral key, as some devices send it, is accepted")
    func compressedEphemeralKey() throws {
        let server = ECPrivateKey()
        let ephemeral = ECPrivateKey()
        let context = Self.context("application")
        let envelope = try ECIESEnvelopeKey.derive(
            sharedSecret: try ephemeral.sharedSecret(with: server.publicKey),
            ephemeralPublicKey: ephemeral.publicKey.compressed, context: context)
        let request = try envelope.seal(
            Data("hi".utf8), nonce: Bytes.random(count: 16), timestamp: 5,
            ephemeralPublicKey: ephemeral.publicKey.compressed, context: context)
        #expect(try ECIES.decryptRequest(request, with: server, context: context).plaintext == Data("hi".utf8))
    }

    @Test("A tampered MAC, ciphertext, nonce or timestamp fails authentication")
    func tampering() throws {
        let server = ECPrivateKey()
        let context = Self.context("activation")
        let (request, _) = try ECIES.encryptRequest(
            Data(repeating: 1, count: 40), to: server.publicKey, context: context, timestamp: 1000)
        var tamperedMAC = request
        tamperedMAC.mac[0] ^= 1
        var tamperedData = request
        tamperedData.encryptedData[5] ^= 0x80
        var tamperedNonce = request
        tamperedNonce.nonce[15] ^= 1
        var tamperedTime = request
        tamperedTime.timestamp += 1
        for cryptogram in [tamperedMAC, tamperedData, tamperedNonce, tamperedTime] {
            let error = #expect(throws: AssentCryptoError.self) {
                try ECIES.decryptRequest(cryptogram, with: server, context: context)
            }
            #expect(error?.code == .authenticationFailed)
        }
    }

    @Test("The wrong recipient key, scope or endpoint constant fails authentication")
    func wrongKeyOrContext() throws {
        let server = ECPrivateKey()
        let context = Self.context("application")
        let (request, _) = try ECIES.encryptRequest(
            Data("x".utf8), to: server.publicKey, context: context, timestamp: 1)
        let attempts: [(ECPrivateKey, ECIESContext)] = [
            (ECPrivateKey(), context),
            (server, Self.context("activation")),
            (server, Self.context("application", sharedInfo1: .createToken)),
        ]
        for (key, wrongContext) in attempts {
            let error = #expect(throws: AssentCryptoError.self) {
                try ECIES.decryptRequest(request, with: key, context: wrongContext)
            }
            #expect(error?.code == .authenticationFailed)
        }
    }

    @Test("Malformed cryptograms are rejected with their own codes")
    func malformed() throws {
        let server = ECPrivateKey()
        let context = Self.context("application")
        let (request, envelope) = try ECIES.encryptRequest(
            Data("x".utf8), to: server.publicKey, context: context, timestamp: 1)
        var noEphemeral = request
        noEphemeral.ephemeralPublicKey = nil
        #expect(throws: AssentCryptoError.self) {
            try ECIES.decryptRequest(noEphemeral, with: server, context: context)
        }
        var badEphemeral = request
        badEphemeral.ephemeralPublicKey = Data(repeating: 4, count: 65)
        let keyError = #expect(throws: AssentCryptoError.self) {
            try ECIES.decryptRequest(badEphemeral, with: server, context: context)
        }
        #expect(keyError?.code == .invalidKey)
        var shortNonce = request
        shortNonce.nonce = Data(count: 12)
        let nonceError = #expect(throws: AssentCryptoError.self) {
            try ECIES.decryptRequest(shortNonce, with: server, context: context)
        }
        #expect(nonceError?.code == .invalidLength)
        // A response must not carry an ephemeral key: a request replayed as a response is refused.
        #expect(throws: AssentCryptoError.self) {
            try ECIES.decryptResponse(request, envelopeKey: envelope, context: context)
        }
        #expect(throws: AssentCryptoError.self) { try ECIESEnvelopeKey(data: Data(count: 32)) }
    }
}
