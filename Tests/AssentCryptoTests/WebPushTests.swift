import AssentCrypto
import Foundation
import Testing

@Suite("Web Push message encryption (RFC 8188, RFC 8291) and VAPID (RFC 8292)")
struct WebPushTests {
    static func bytes(_ text: String) throws -> Data { try Base64URL.decode(text) }

    /// RFC 8291 Appendix A, its line breaks removed.
    enum RFC8291 {
        static let plaintext = "When I grow up, I want to be a watermelon"
        static let asPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
        static let asPublic =
            "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
        static let uaPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
        static let uaPublic =
            "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
        static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
        static let header =
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
        static let ciphertext = "8pfeW0KbunFT06SuDKoJH9Ql87S1QUrdirN6GcG7sFz1y1sqLgVi1VhjVkHsUoEsbI_0LpXMuGvnzQ"
        static let body =
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
    }

    @Test("RFC 8291 Appendix A: the example's keys and salt encrypt to its body byte for byte, and it decrypts back")
    func rfc8291Example() throws {
        let sender = try ECPrivateKey(scalar: try Self.bytes(RFC8291.asPrivate))
        #expect(sender.publicKey.x963 == (try Self.bytes(RFC8291.asPublic)))
        let subscription = try WebPushEncryption.Subscription(p256dh: RFC8291.uaPublic, auth: RFC8291.auth)
        let body = try WebPushEncryption.encrypt(
            Data(RFC8291.plaintext.utf8), for: subscription, padding: 0, senderKey: sender,
            salt: try Self.bytes(RFC8291.salt))
        #expect(Base64URL.encode(body) == RFC8291.body)
        #expect(body == (try Self.bytes(RFC8291.header)) + (try Self.bytes(RFC8291.ciphertext)))

        let receiver = try ECPrivateKey(scalar: try Self.bytes(RFC8291.uaPrivate))
        #expect(receiver.publicKey == subscription.publicKey)
        let opened = try WebPushEncryption.decrypt(
            try Self.bytes(RFC8291.body), privateKey: receiver, authSecret: try Self.bytes(RFC8291.auth))
        #expect(String(decoding: opened, as: UTF8.self) == RFC8291.plaintext)

        // Every single-byte change after the header, a wrong secret and a cut body are refused.
        var body2 = try Self.bytes(RFC8291.body)
        for index in 86..<body2.count {
            body2[index] ^= 0x01
            #expect(throws: AssentCryptoError.self) {
                try WebPushEncryption.decrypt(body2, privateKey: receiver, authSecret: try Self.bytes(RFC8291.auth))
            }
            body2[index] ^= 0x01
        }
        #expect(throws: AssentCryptoError.self) {
            try WebPushEncryption.decrypt(body2, privateKey: receiver, authSecret: Data(count: 16))
        }
        #expect(throws: AssentCryptoError.self) {
            try WebPushEncryption.decrypt(
                body2.dropLast(1), privateKey: receiver, authSecret: try Self.bytes(RFC8291.auth))
        }
    }

    @Test("RFC 8188 §3.1: one record, record size 4096, no key id — byte for byte and back")
    func rfc8188SingleRecord() throws {
        let key = try Self.bytes("yqdlZ-tYemfogSmv7Ws5PQ")
        let expected = "I1BsxtFttlv3u_Oo94xnmwAAEAAA-NAVub2qFgBEuQKRapoZu-IxkIva3MEB1PD-ly8Thjg"
        let body = try ContentEncoding.encrypt(
            [.init(data: Data("I am the walrus".utf8))], inputKey: key,
            salt: try Self.bytes("I1BsxtFttlv3u_Oo94xnmw"), recordSize: 4096)
        #expect(Base64URL.encode(body) == expected)
        #expect(try ContentEncoding.decrypt(try Self.bytes(expected), inputKey: key) == Data("I am the walrus".utf8))
        #expect(throws: AssentCryptoError.self) {
            try ContentEncoding.decrypt(try Self.bytes(expected), inputKey: Data(count: 16))
        }
    }

    @Test(
        "RFC 8188 §3.2: two records of size 25 with key id \"a1\" decrypt, re-encrypt byte for byte, and a cut body fails"
    )
    func rfc8188TwoRecords() throws {
        let key = try Self.bytes("BO3ZVPxUlnLORbVGMpbT1Q")
        let expected = try Self.bytes(
            "uNCkWiNYzKTnBN9ji3-qWAAAABkCYTHOG8chz_gnvgOqdGYovxyjuqRyJFjEDyoF1Fvkj6hQPdPHI51OEUKEpgz3SsLWIqS_uA")
        let header = try ContentEncoding.header(of: expected)
        #expect(header.recordSize == 25 && header.keyId == Data("a1".utf8))
        #expect(try ContentEncoding.decrypt(expected, inputKey: key) == Data("I am the walrus".utf8))
        // The example's layout: "I am th" with one octet of padding, then "e walrus".
        let body = try ContentEncoding.encrypt(
            [.init(data: Data("I am th".utf8), padding: 1), .init(data: Data("e walrus".utf8))], inputKey: key,
            salt: header.salt, recordSize: 25, keyId: Data("a1".utf8))
        #expect(body == expected)
        // Without its last record the body ends on a record not marked last.
        #expect(throws: AssentCryptoError.self) {
            try ContentEncoding.decrypt(expected.prefix(header.length + 25), inputKey: key)
        }
        // Records swapped do not authenticate under each other's nonce.
        let records = expected.dropFirst(header.length)
        let swapped = expected.prefix(header.length) + records.suffix(25) + records.prefix(25)
        #expect(throws: AssentCryptoError.self) { try ContentEncoding.decrypt(swapped, inputKey: key) }
    }

    @Test("Messages are padded to their length class, round-trip with fresh keys, and refuse what does not fit")
    func paddingAndLimits() throws {
        let receiver = ECPrivateKey()
        let secret = Bytes.random(count: 16)
        let subscription = try WebPushEncryption.Subscription(publicKey: receiver.publicKey, authSecret: secret)
        var sizes: Set<Int> = []
        for length in [1, 100, 255] {
            let message = Data(repeating: 0x41, count: length)
            let body = try WebPushEncryption.encrypt(message, for: subscription)
            sizes.insert(body.count)
            #expect(try WebPushEncryption.decrypt(body, privateKey: receiver, authSecret: secret) == message)
        }
        #expect(sizes == [86 + 256 + 17])
        let largest = try WebPushEncryption.encrypt(Data(count: 3993), for: subscription)
        #expect(largest.count == WebPushEncryption.maximumBodySize)
        #expect(throws: AssentCryptoError.self) { try WebPushEncryption.encrypt(Data(count: 3994), for: subscription) }
        // Two encryptions of one message share neither salt nor sender key.
        let first = try WebPushEncryption.encrypt(Data("x".utf8), for: subscription)
        let second = try WebPushEncryption.encrypt(Data("x".utf8), for: subscription)
        #expect(first.prefix(86) != second.prefix(86))
        // Subscription keys are checked.
        #expect(throws: AssentCryptoError.self) {
            try WebPushEncryption.Subscription(p256dh: Base64URL.encode(receiver.publicKey.compressed), auth: "AAAA")
        }
        #expect(throws: AssentCryptoError.self) {
            try WebPushEncryption.Subscription(p256dh: RFC8291.uaPublic, auth: Base64URL.encode(Data(count: 8)))
        }
        var offCurve = try Self.bytes(RFC8291.uaPublic)
        offCurve[64] ^= 1
        #expect(throws: AssentCryptoError.self) {
            try WebPushEncryption.Subscription(p256dh: Base64URL.encode(offCurve), auth: RFC8291.auth)
        }
    }

    @Test("VAPID: the header verifies for its audience and refuses another audience, key, expiry or scheme")
    func vapid() throws {
        let key = ECPrivateKey()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let audience = try VAPID.audience(of: URL(string: "https://push.example.net:8443/wpush/v2/abc")!)
        #expect(audience == "https://push.example.net:8443")
        #expect(try VAPID.audience(of: URL(string: "https://Push.Example.net:443/x")!) == "https://push.example.net")
        let header = try VAPID.authorization(
            audience: audience, subject: "mailto:ops@example.com", expiresAt: now + 43_200, key: key)
        let (claims, signer) = try VAPID.verify(
            authorization: header, audience: audience, now: now, expectedKey: key.publicKey)
        #expect(claims == VAPID.Claims(aud: audience, exp: 1_800_043_200, sub: "mailto:ops@example.com"))
        #expect(signer == key.publicKey)
        #expect(throws: AssentCryptoError.self) {
            try VAPID.verify(authorization: header, audience: "https://other.example", now: now)
        }
        #expect(throws: AssentCryptoError.self) {
            try VAPID.verify(
                authorization: header, audience: audience, now: now, expectedKey: ECPrivateKey().publicKey)
        }
        #expect(throws: AssentCryptoError.self) {
            try VAPID.verify(authorization: header, audience: audience, now: now + 43_200)
        }
        let distant = try VAPID.authorization(audience: audience, subject: nil, expiresAt: now + 90_000, key: key)
        #expect(throws: AssentCryptoError.self) {
            try VAPID.verify(authorization: distant, audience: audience, now: now)
        }
        #expect(throws: AssentCryptoError.self) {
            try VAPID.verify(authorization: "WebPush " + header.dropFirst(6), audience: audience, now: now)
        }
        // A token signed by one key presented with another's k.
        let other = try VAPID.authorization(audience: audience, subject: nil, expiresAt: now + 60, key: ECPrivateKey())
        let mixed = header.components(separatedBy: ", k=")[0] + ", k=" + other.components(separatedBy: ", k=")[1]
        #expect(throws: AssentCryptoError.self) { try VAPID.verify(authorization: mixed, audience: audience, now: now) }
    }
}
