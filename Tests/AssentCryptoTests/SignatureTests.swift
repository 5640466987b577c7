import AssentCrypto
import Foundation
import Testing

@Suite("Signature counter window and rejections")
struct SignatureTests {
    let keys = try! ActivationKeys(masterSecret: Bytes.random(count: 16))
    let counter = HashCounter.random()
    let data = PowerAuthSignature.dataToSign(
        method: "POST", uriId: "/pa/signature/validate", nonce: Bytes.random(count: 16), body: Data("{}".utf8),
        applicationSecret: "c2VjcmV0c2VjcmV0c2VjcmV0")

    @Test("A signature validates at every counter offset inside the look-ahead and reports it", arguments: 0..<20)
    func insideWindow(offset: Int) throws {
        let signing = keys.signatureKeys(for: .possessionKnowledge)
        let signature = try PowerAuthSignature.compute(
            data: data, counter: counter.advanced(by: offset), keys: signing, format: .base64)
        let match = try PowerAuthSignature.validate(
            signature, data: data, counter: counter, keys: signing, format: .base64, lookAhead: 20)
        #expect(match == SignatureMatch(offset: offset, nextCounter: counter.advanced(by: offset + 1)))
    }

    @Test("A signature one step past the look-ahead, or from an already used counter, fails")
    func outsideWindow() throws {
        let signing = keys.signatureKeys(for: .possessionKnowledge)
        let tooFar = try PowerAuthSignature.compute(
            data: data, counter: counter.advanced(by: 20), keys: signing, format: .base64)
        #expect(
            try PowerAuthSignature.validate(
                tooFar, data: data, counter: counter, keys: signing, format: .base64, lookAhead: 20) == nil)
        let used = try PowerAuthSignature.compute(data: data, counter: counter, keys: signing, format: .base64)
        #expect(
            try PowerAuthSignature.validate(
                used, data: data, counter: counter.next(), keys: signing, format: .base64, lookAhead: 20) == nil)
    }

    @Test("A wrong PIN key, other data or another factor combination fails")
    func wrongInputs() throws {
        let signing = keys.signatureKeys(for: .possessionKnowledge)
        let signature = try PowerAuthSignature.compute(data: data, counter: counter, keys: signing, format: .base64)
        let wrongKnowledge = [keys.possession, Bytes.random(count: 16)]
        #expect(
            try PowerAuthSignature.validate(
                signature, data: data, counter: counter, keys: wrongKnowledge, format: .base64, lookAhead: 5) == nil)
        #expect(
            try PowerAuthSignature.validate(
                signature, data: data + Data([0]), counter: counter, keys: signing, format: .base64, lookAhead: 5)
                == nil)
        #expect(
            try PowerAuthSignature.validate(
                signature, data: data, counter: counter, keys: keys.signatureKeys(for: .possessionBiometry),
                format: .base64, lookAhead: 5) == nil)
    }

    @Test("Offline signatures are two groups of 8 digits by default")
    func offlineShape() throws {
        let signature = try PowerAuthSignature.compute(
            data: data, counter: counter, keys: keys.signatureKeys(for: .possessionKnowledge), format: .offline)
        #expect(signature.count == 17)
        #expect(signature.split(separator: "-").allSatisfy { $0.count == 8 && $0.allSatisfy(\.isNumber) })
    }

    @Test("Bad key lengths, key counts, digit counts and counters give typed errors")
    func invalidParameters() throws {
        let lengthError = #expect(throws: AssentCryptoError.self) {
            try PowerAuthSignature.compute(data: data, counter: counter, keys: [Data(count: 15)], format: .base64)
        }
        #expect(lengthError?.code == .invalidLength)
        let countError = #expect(throws: AssentCryptoError.self) {
            try PowerAuthSignature.compute(data: data, counter: counter, keys: [], format: .base64)
        }
        #expect(countError?.code == .invalidSignatureType)
        #expect(throws: AssentCryptoError.self) {
            try PowerAuthSignature.compute(
                data: data, counter: counter, keys: [keys.possession], format: .decimal(length: 9))
        }
        #expect(throws: AssentCryptoError.self) { try HashCounter(data: Data(count: 8)) }
        let base64Error = #expect(throws: AssentCryptoError.self) { try HashCounter(base64: "%%%") }
        #expect(base64Error?.code == .invalidEncoding)
        #expect(throws: AssentCryptoError.self) { try SignatureType(parsing: "knowledge") }
    }

    @Test("Data to sign follows METHOD & B64(uriId) & B64(nonce) & B64(body) & secret")
    func dataToSign() {
        let nonce = Data(repeating: 0, count: 16)
        let text = PowerAuthSignature.dataToSign(
            method: "post", uriId: "/pa/activation/remove", nonce: nonce, body: Data(), applicationSecret: "offline")
        #expect(
            String(decoding: text, as: UTF8.self)
                == "POST&L3BhL2FjdGl2YXRpb24vcmVtb3Zl&AAAAAAAAAAAAAAAAAAAAAA==&&offline")
    }
}
