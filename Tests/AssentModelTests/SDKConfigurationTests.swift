import AssentCrypto
import AssentModel
import Foundation
import Testing

@Suite("SDK configuration string")
struct SDKConfigurationTests {
    @Test("A configuration survives encoding to its opaque string and back")
    func roundTrip() throws {
        let master = ECPrivateKey().publicKey
        let configuration = try SDKConfiguration(
            applicationKey: Bytes.random(count: 16).base64EncodedString(),
            applicationSecret: Bytes.random(count: 16).base64EncodedString(),
            masterServerPublicKey: master
        )
        let parsed = try SDKConfiguration(parsing: configuration.text)
        #expect(parsed == configuration)
        #expect(parsed.masterServerPublicKey.x963 == master.x963)
    }

    @Test("Garbage, a truncated string and a wrong key length are rejected with typed errors")
    func rejectsMalformed() throws {
        let valid = try SDKConfiguration(
            applicationKey: Bytes.random(count: 16).base64EncodedString(),
            applicationSecret: Bytes.random(count: 16).base64EncodedString(),
            masterServerPublicKey: ECPrivateKey().publicKey
        ).text
        for text in ["", "not base64!", String(valid.dropLast(8))] {
            let error = #expect(throws: AssentCryptoError.self) { try SDKConfiguration(parsing: text) }
            #expect(error?.code == .invalidEncoding)
        }
        let error = #expect(throws: AssentCryptoError.self) {
            try SDKConfiguration(
                applicationKey: Bytes.random(count: 15).base64EncodedString(),
                applicationSecret: Bytes.random(count: 16).base64EncodedString(),
                masterServerPublicKey: ECPrivateKey().publicKey
            )
        }
        #expect(error?.code == .invalidLength)
    }
}

@Suite("PowerAuth envelopes")
struct EnvelopeTests {
    struct Payload: Codable, Sendable, Equatable {
        var activationId: String
    }

    @Test("Request, response and error envelopes have the spec's JSON shape")
    func jsonShape() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(
            String(decoding: try encoder.encode(RequestEnvelope(Payload(activationId: "a"))), as: UTF8.self)
                == #"{"requestObject":{"activationId":"a"}}"#)
        #expect(
            String(decoding: try encoder.encode(ResponseEnvelope(Payload(activationId: "a"))), as: UTF8.self)
                == #"{"responseObject":{"activationId":"a"},"status":"OK"}"#)
        #expect(
            String(decoding: try encoder.encode(ErrorEnvelope(code: "ERR_X", message: "m")), as: UTF8.self)
                == #"{"responseObject":{"code":"ERR_X","message":"m"},"status":"ERROR"}"#)
        let decoded = try JSONDecoder().decode(
            ResponseEnvelope<Payload>.self, from: Data(#"{"status":"OK","responseObject":{"activationId":"b"}}"#.utf8))
        #expect(decoded.responseObject == Payload(activationId: "b"))
    }
}
