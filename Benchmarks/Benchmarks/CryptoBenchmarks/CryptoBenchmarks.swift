import AssentCrypto
import Benchmark
import Foundation

/// Fixed inputs, made once, so every iteration measures only the operation named.
private struct Fixture {
    let keys = try! ActivationKeys(masterSecret: Bytes.random(count: 16))
    let counter = HashCounter.random()
    let data = PowerAuthSignature.dataToSign(
        method: "POST",
        uriId: "/pa/signature/validate",
        nonce: Bytes.random(count: 16),
        body: Data(#"{"requestObject":{"amount":"100.00","currency":"EUR"}}"#.utf8),
        applicationSecret: Bytes.random(count: 16).base64EncodedString()
    )
    let serverKey = ECPrivateKey()
    let context = ECIESContext.applicationScope(
        .applicationScopeGeneric,
        applicationKey: Bytes.random(count: 16).base64EncodedString(),
        applicationSecret: Bytes.random(count: 16).base64EncodedString(),
        temporaryKeyId: UUID().uuidString
    )
    let request = Data(#"{"activationCode":"W65WE-3T7VI-7FBS2-A4OYA","platform":"ios"}"#.utf8)
    let challenge = Bytes.random(count: 16)
    let nonce = Bytes.random(count: 16)
    let totp = try! TOTP(secret: Bytes.random(count: 20), digits: 8, algorithm: .sha256)

    var twoFactorKeys: [Data] { keys.signatureKeys(for: .possessionKnowledge) }
}

let benchmarks: @Sendable () -> Void = {
    let fixture = Fixture()
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal], maxDuration: .seconds(2))

    Benchmark("Signature compute (2FA, Base64)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(
                try PowerAuthSignature.compute(
                    data: fixture.data, counter: fixture.counter, keys: fixture.twoFactorKeys, format: .base64))
        }
    }

    let signature = try! PowerAuthSignature.compute(
        data: fixture.data, counter: fixture.counter.advanced(by: 5), keys: fixture.twoFactorKeys, format: .base64)
    Benchmark("Signature validate (2FA, look-ahead 20, device 5 ahead)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(
                try PowerAuthSignature.validate(
                    signature, data: fixture.data, counter: fixture.counter, keys: fixture.twoFactorKeys,
                    format: .base64, lookAhead: 20))
        }
    }

    Benchmark("ECIES request round trip (device encrypt, server decrypt and respond, device decrypt)") { benchmark in
        for _ in benchmark.scaledIterations {
            let (request, deviceEnvelope) = try ECIES.encryptRequest(
                fixture.request, to: fixture.serverKey.publicKey, context: fixture.context, timestamp: 1)
            let (plaintext, serverEnvelope) = try ECIES.decryptRequest(
                request, with: fixture.serverKey, context: fixture.context)
            let response = try ECIES.encryptResponse(
                plaintext, envelopeKey: serverEnvelope, context: fixture.context, timestamp: 2)
            blackHole(try ECIES.decryptResponse(response, envelopeKey: deviceEnvelope, context: fixture.context))
        }
    }

    Benchmark("KDF (the five activation keys from the master secret)") { benchmark in
        let masterSecret = Bytes.random(count: 16)
        for _ in benchmark.scaledIterations {
            blackHole(try ActivationKeys(masterSecret: masterSecret))
        }
    }

    let blob = ActivationStatusBlob(
        state: .active, counterByte: 7, failedAttempts: 0, maxFailedAttempts: 5, counterLookAhead: 20,
        counterDataHash: try! ActivationStatusBlob.counterDataHash(
            of: fixture.counter, transportKey: fixture.keys.transport)
    )
    Benchmark("Status blob (server encrypt, device decrypt)") { benchmark in
        for _ in benchmark.scaledIterations {
            let encrypted = try blob.encrypted(
                transportKey: fixture.keys.transport, challenge: fixture.challenge, nonce: fixture.nonce)
            blackHole(
                try ActivationStatusBlob(
                    decrypting: encrypted, transportKey: fixture.keys.transport, challenge: fixture.challenge,
                    nonce: fixture.nonce))
        }
    }

    Benchmark("TOTP validate (SHA-256, 8 digits, window ±1)") { benchmark in
        let code = fixture.totp.code(at: 1_800_000_000)
        for _ in benchmark.scaledIterations {
            blackHole(fixture.totp.validate(code, at: 1_800_000_000))
        }
    }
}
