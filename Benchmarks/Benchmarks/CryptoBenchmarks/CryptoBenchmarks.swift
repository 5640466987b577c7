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

    // Web Push: what the server spends per message (a fresh key pair, ECDH, HKDF, AES-GCM over the padded
    // message), what a receiver spends, and one VAPID token (made once an hour per push service in practice).
    let receiver = ECPrivateKey()
    let subscription = try! WebPushEncryption.Subscription(
        publicKey: receiver.publicKey, authSecret: Bytes.random(count: 16))
    let message = Data(
        #"{"data":{"activationId":"0b0e6cf3-5d5c-4b0e-9d6e-2c4a6f1f6c1e","messageType":"mtoken.operationInit","operationId":"7d1f4a4e-9b2a-4d7c-8f43-1b0a2a9c5e11","operationName":"authorize_payment"},"notification":{"body":"Pay 100 CZK to Nela?","tag":"7d1f4a4e-9b2a-4d7c-8f43-1b0a2a9c5e11","title":"Confirm payment"}}"#
            .utf8)
    Benchmark("Web Push encrypt (RFC 8291, a 300-byte message, fresh sender key)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try WebPushEncryption.encrypt(message, for: subscription))
        }
    }
    let body = try! WebPushEncryption.encrypt(message, for: subscription)
    Benchmark("Web Push decrypt (the receiver's side)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try WebPushEncryption.decrypt(body, privateKey: receiver, authSecret: subscription.authSecret))
        }
    }
    let vapidKey = ECPrivateKey()
    Benchmark("VAPID token (ES256 JWT and header)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(
                try VAPID.authorization(
                    audience: "https://push.example.net", subject: "mailto:push@bank.example",
                    expiresAt: Date(timeIntervalSince1970: 1_800_000_000), key: vapidKey))
        }
    }
}
