import AssentCrypto
import Foundation
import Testing

@Suite("Published vectors: activation status")
struct StatusVectorTests {
    @Test("activation-status-blob-iv.json: the status blob IV")
    func statusIV() {
        Vectors.run("powerauth/activation-status-blob-iv.json", expected: 32, as: InputOutput.self) { vector in
            let iv = try ActivationStatusBlob.iv(
                transportKey: try vector.inputData("transportKey"),
                challenge: try vector.inputData("challenge"),
                nonce: try vector.inputData("nonce")
            )
            try require(iv, try vector.outputData("iv"), "IV")
        }
    }

    @Test("activation-status-blob-data.json: decrypt, parse, re-encrypt and resynchronise the counter")
    func statusBlob() {
        Vectors.run("powerauth/activation-status-blob-data.json", expected: 8, as: InputOutput.self) { vector in
            let transportKey = try vector.inputData("transportKey")
            let challenge = try vector.inputData("challenge")
            let nonce = try vector.inputData("nonce")
            let encrypted = try vector.inputData("encryptedStatusBlob")
            let blob = try ActivationStatusBlob(
                decrypting: encrypted, transportKey: transportKey, challenge: challenge, nonce: nonce)
            try require(String(blob.state.rawValue), try vector.output("activationStatus"), "status")
            try require(String(blob.currentVersion), try vector.output("currentVersion"), "current version")
            try require(String(blob.upgradeVersion), try vector.output("upgradeVersion"), "upgrade version")
            try require(String(blob.failedAttempts), try vector.output("failedAttempts"), "failed attempts")
            try require(String(blob.maxFailedAttempts), try vector.output("maxFailedAttempts"), "max failed attempts")
            try require(String(blob.counterLookAhead), try vector.output("ctrLookAhead"), "look-ahead")
            try require(String(blob.counterByte), try vector.output("ctrByte"), "counter byte")
            try require(blob.counterDataHash, try vector.outputData("ctrDataHash"), "ctrDataHash")

            let deviceCounter = try HashCounter(base64: try vector.input("ctrData"))
            let distance = try blob.counterDistance(from: deviceCounter, transportKey: transportKey)
            try require(String(distance), try vector.output("counterDistance"), "counter distance")
            try require(
                try ActivationStatusBlob.counterDataHash(
                    of: deviceCounter.advanced(by: distance), transportKey: transportKey),
                blob.counterDataHash, "server-side ctrDataHash")

            // The server-side encoder's output decrypts to the same fields (its reserved bytes are random).
            let reencrypted = try blob.encrypted(transportKey: transportKey, challenge: challenge, nonce: nonce)
            try require(
                try ActivationStatusBlob(
                    decrypting: reencrypted, transportKey: transportKey, challenge: challenge, nonce: nonce),
                blob, "re-encrypted blob")
        }
    }
}
