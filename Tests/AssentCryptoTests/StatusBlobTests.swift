import AssentCrypto
import Foundation
import Testing

@Suite("Activation status blob")
struct StatusBlobTests {
    let transportKey = Bytes.random(count: 16)
    let challenge = Bytes.random(count: 16)
    let nonce = Bytes.random(count: 16)

    func blob(for counter: HashCounter, state: ActivationState = .active) throws -> ActivationStatusBlob {
        ActivationStatusBlob(
            state: state, counterByte: 9, failedAttempts: 2, maxFailedAttempts: 5, counterLookAhead: 20,
            counterDataHash: try ActivationStatusBlob.counterDataHash(of: counter, transportKey: transportKey))
    }

    @Test("Every state survives server encryption and device decryption", arguments: ActivationState.allCases)
    func roundTrip(state: ActivationState) throws {
        let original = try blob(for: .random(), state: state)
        let encrypted = try original.encrypted(transportKey: transportKey, challenge: challenge, nonce: nonce)
        #expect(encrypted.count == 32)
        let decoded = try ActivationStatusBlob(
            decrypting: encrypted, transportKey: transportKey, challenge: challenge, nonce: nonce)
        #expect(decoded == original)
    }

    @Test("A wrong transport key, challenge or length is refused instead of yielding garbage")
    func wrongInputs() throws {
        let encrypted = try blob(for: .random()).encrypted(
            transportKey: transportKey, challenge: challenge, nonce: nonce)
        let wrongKey = #expect(throws: AssentCryptoError.self) {
            try ActivationStatusBlob(
                decrypting: encrypted, transportKey: Bytes.random(count: 16), challenge: challenge, nonce: nonce)
        }
        #expect(wrongKey?.code == .invalidStatusBlob)
        #expect(throws: AssentCryptoError.self) {
            try ActivationStatusBlob(
                decrypting: encrypted, transportKey: transportKey, challenge: Bytes.random(count: 16), nonce: nonce)
        }
        let length = #expect(throws: AssentCryptoError.self) {
            try ActivationStatusBlob(
                decrypting: encrypted.prefix(16), transportKey: transportKey, challenge: challenge, nonce: nonce)
        }
        #expect(length?.code == .invalidLength)
    }

    @Test("A device behind by up to the look-ahead resynchronises; further behind it cannot")
    func counterResync() throws {
        let device = HashCounter.random()
        #expect(try blob(for: device.advanced(by: 20)).counterDistance(from: device, transportKey: transportKey) == 20)
        let error = #expect(throws: AssentCryptoError.self) {
            try blob(for: device.advanced(by: 21)).counterDistance(from: device, transportKey: transportKey)
        }
        #expect(error?.code == .counterNotFound)
    }
}
