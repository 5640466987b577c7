import Crypto
import Foundation

/// Message encryption for Web Push (RFC 8291): the application server agrees a secret with the subscription's P-256
/// key from a fresh key pair of its own, mixes in the subscription's 16-octet authentication secret, and encrypts
/// the message as one `aes128gcm` record (RFC 8188) whose key id is its own public key.
public enum WebPushEncryption {
    /// The record size the sender writes (RFC 8291 §4).
    public static let recordSize = 4096
    /// The largest body a push service must accept (RFC 8030 §7.2).
    public static let maximumBodySize = 4096
    /// The largest plaintext, padding included, that fits that body: 4096 − 86 (header) − 1 (delimiter) − 16 (tag).
    public static let maximumPlaintextSize = 3993
    /// Plaintexts are padded to a multiple of this, so the body's length tells only the length class.
    public static let paddingBlock = 256

    /// A subscription's keys as the user agent gives them.
    public struct Subscription: Sendable, Equatable {
        /// The user agent's P-256 public key (`p256dh`).
        public var publicKey: ECPublicKey
        /// The authentication secret (`auth`, 16 octets).
        public var authSecret: Data

        /// The keys from their Base64URL text (`keys.p256dh` and `keys.auth` of a `PushSubscription`).
        /// - Throws: `invalidKey` when `p256dh` is not an uncompressed point on P-256, `invalidLength` when `auth` is
        ///   not 16 octets, `invalidEncoding` for text that is not Base64URL.
        public init(p256dh: String, auth: String) throws {
            let point = try Base64URL.decode(p256dh)
            guard point.count == 65, point.first == 4 else {
                throw AssentCryptoError(.invalidKey, "p256dh is an uncompressed P-256 point (65 octets).")
            }
            try self.init(publicKey: try ECPublicKey(x963: point), authSecret: try Base64URL.decode(auth))
        }

        /// - Throws: `invalidLength` when the secret is not 16 octets.
        public init(publicKey: ECPublicKey, authSecret: Data) throws {
            guard authSecret.count == 16 else {
                throw AssentCryptoError(.invalidLength, "The authentication secret is 16 octets.")
            }
            self.publicKey = publicKey
            self.authSecret = authSecret
        }

        /// `p256dh` as Base64URL.
        public var p256dh: String { Base64URL.encode(publicKey.x963) }
        /// `auth` as Base64URL.
        public var auth: String { Base64URL.encode(authSecret) }
    }

    /// The padding that brings `length` octets of plaintext to the next multiple of ``paddingBlock`` (never past
    /// ``maximumPlaintextSize``).
    public static func padding(forLength length: Int) -> Int {
        let rounded = (length + paddingBlock - 1) / paddingBlock * paddingBlock
        return max(0, min(rounded, maximumPlaintextSize) - length)
    }

    /// Encrypts `plaintext` for `subscription`: the complete request body (`Content-Encoding: aes128gcm`).
    /// - Parameters:
    ///   - padding: zero octets added after the delimiter; default: up to the length class.
    ///   - senderKey: the application server's key pair for this message; default a fresh one (a key must never
    ///     be used twice).
    ///   - salt: 16 octets; default random.
    /// - Throws: `invalidLength` when the padded plaintext exceeds ``maximumPlaintextSize``.
    public static func encrypt(
        _ plaintext: Data, for subscription: Subscription, padding: Int? = nil,
        senderKey: ECPrivateKey = ECPrivateKey(),
        salt: Data? = nil
    ) throws -> Data {
        let padding = padding ?? Self.padding(forLength: plaintext.count)
        guard plaintext.count + padding <= maximumPlaintextSize else {
            throw AssentCryptoError(
                .invalidLength, "A Web Push message holds at most \(maximumPlaintextSize) octets with its padding.")
        }
        let senderPublic = senderKey.publicKey.x963
        let inputKey = try inputKey(
            secret: try senderKey.sharedSecret(with: subscription.publicKey), authSecret: subscription.authSecret,
            userAgentPublic: subscription.publicKey.x963, applicationServerPublic: senderPublic)
        return try ContentEncoding.encrypt(
            [ContentEncoding.Record(data: plaintext, padding: padding)], inputKey: inputKey,
            salt: salt ?? Data(SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) }), recordSize: recordSize,
            keyId: senderPublic)
    }

    /// Decrypts a Web Push body with the subscription's private key and authentication secret (the user agent's
    /// side).
    /// - Throws: `invalidLength` when the body is not one record or its key id is not a P-256 point, `invalidKey`
    ///   for a key id off the curve, `decryptionFailed` when it does not authenticate.
    public static func decrypt(_ body: Data, privateKey: ECPrivateKey, authSecret: Data) throws -> Data {
        let header = try ContentEncoding.header(of: body)
        guard header.keyId.count == 65 else {
            throw AssentCryptoError(.invalidLength, "The key id of a Web Push message is the sender's P-256 key.")
        }
        let records = body.dropFirst(header.length)
        guard records.count <= header.recordSize else {
            throw AssentCryptoError(.invalidLength, "A Web Push message is a single record.")
        }
        let senderPublic = try ECPublicKey(x963: header.keyId)
        let userAgentPublic = privateKey.publicKey.x963
        let inputKey = try inputKey(
            secret: try privateKey.sharedSecret(with: senderPublic), authSecret: authSecret,
            userAgentPublic: userAgentPublic, applicationServerPublic: header.keyId)
        return try ContentEncoding.decryptRecords(
            Data(records), inputKey: inputKey, salt: header.salt, recordSize: header.recordSize)
    }

    /// IKM = HMAC(HMAC(auth_secret, ecdh_secret), "WebPush: info" ‖ 0x00 ‖ ua_public ‖ as_public ‖ 0x01)
    /// (RFC 8291 §3.3 and §3.4).
    static func inputKey(secret: Data, authSecret: Data, userAgentPublic: Data, applicationServerPublic: Data) throws
        -> Data
    {
        guard authSecret.count == 16 else {
            throw AssentCryptoError(.invalidLength, "The authentication secret is 16 octets.")
        }
        let prk = HMAC<SHA256>.authenticationCode(for: secret, using: SymmetricKey(data: authSecret))
        var info = Data("WebPush: info".utf8)
        info.append(0)
        info.append(userAgentPublic)
        info.append(applicationServerPublic)
        info.append(1)
        return Data(HMAC<SHA256>.authenticationCode(for: info, using: SymmetricKey(data: Data(prk))))
    }
}
