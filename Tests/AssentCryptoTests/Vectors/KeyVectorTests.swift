import AssentCrypto
import Foundation
import Testing

@Suite("Published vectors: keys")
struct KeyVectorTests {
    @Test("compute-derived-keys.json: the five activation keys from the master secret")
    func derivedKeys() {
        Vectors.run("powerauth/compute-derived-keys.json", expected: 20, as: InputOutput.self) { vector in
            let keys = try ActivationKeys(masterSecret: try vector.inputData("masterSecretKey"))
            try require(keys.possession, try vector.outputData("signaturePossessionKey"), "possession key")
            try require(keys.knowledge, try vector.outputData("signatureKnowledgeKey"), "knowledge key")
            try require(keys.biometry, try vector.outputData("signatureBiometryKey"), "biometry key")
            try require(keys.transport, try vector.outputData("transportKey"), "transport key")
            try require(keys.vault, try vector.outputData("vaultEncryptionKey"), "vault key")
        }
    }

    @Test("compute-master-secret-key.json: ECDH master secret, same on device and server")
    func masterSecret() {
        Vectors.run("powerauth/compute-master-secret-key.json", expected: 20, as: InputOutput.self) { vector in
            let devicePrivate = try ECPrivateKey(scalar: try vector.inputData("devicePrivateKey"))
            let serverPrivate = try ECPrivateKey(scalar: try vector.inputData("serverPrivateKey"))
            let devicePublic = try ECPublicKey(x963: try vector.inputData("devicePublicKey"))
            let serverPublic = try ECPublicKey(x963: try vector.inputData("serverPublicKey"))
            try require(devicePrivate.publicKey, devicePublic, "device public key from private")
            try require(serverPrivate.publicKey, serverPublic, "server public key from private")
            let expected = try vector.outputData("masterSecretKey")
            try require(
                try KeyDerivation.masterSecret(privateKey: devicePrivate, publicKey: serverPublic), expected,
                "device-side master secret")
            try require(
                try KeyDerivation.masterSecret(privateKey: serverPrivate, publicKey: devicePublic), expected,
                "server-side master secret")
        }
    }

    @Test("public-key-fingerprint-v3.json: activation fingerprint and X coordinates")
    func fingerprint() {
        Vectors.run("powerauth/public-key-fingerprint-v3.json", expected: 100, as: InputOutput.self) { vector in
            let device = try ECPublicKey(x963: try vector.inputData("devicePublicKey"))
            let server = try ECPublicKey(x963: try vector.inputData("serverPublicKey"))
            // The published X coordinates are big integers: without leading zero bytes (vector #32 has 31 bytes).
            try require(
                Data(device.xCoordinate.drop { $0 == 0 }), try vector.outputData("devicePublicKeyCoordX"), "device X")
            try require(
                Data(server.xCoordinate.drop { $0 == 0 }), try vector.outputData("serverPublicKeyCoordX"), "server X")
            let fingerprint = ActivationFingerprint.compute(
                devicePublicKey: device,
                activationId: try vector.output("activationId"),
                serverPublicKey: server
            )
            try require(fingerprint, try vector.output("fingerprint"), "fingerprint")
        }
    }

    @Test("verify-activation-data-signature-v3.json: activation code signed by the master server key")
    func activationCodeSignature() {
        Vectors.run("powerauth/verify-activation-data-signature-v3.json", expected: 20, as: InputOutput.self) {
            vector in
            let code = try ActivationCode(try vector.input("activationCode"))
            let masterPrivate = try ECPrivateKey(scalar: try vector.inputData("masterPrivateKey"))
            let masterPublic = try ECPublicKey(x963: try vector.inputData("masterPublicKey"))
            try require(masterPrivate.publicKey, masterPublic, "master public key from private")
            let published = try vector.outputData("activationSignature")
            try require(
                try code.isSignatureValid(published, masterPublicKey: masterPublic), true, "published signature")
            // ECDSA is randomised: our own signature differs but must verify, and the QR form must round-trip.
            let qr = try ActivationQRCode(code: code, masterPrivateKey: masterPrivate)
            let parsed = try ActivationQRCode(parsing: qr.text)
            try parsed.verify(masterPublicKey: masterPublic)
            let publishedQR = try ActivationQRCode(parsing: "\(code.value)#\(published.base64EncodedString())")
            try publishedQR.verify(masterPublicKey: masterPublic)
        }
    }
}
