import AssentCrypto
import Foundation

extension FuzzChecks {
    /// What a Web Push receiver and an audit verifier read from strangers: any bytes as an `aes128gcm` body (RFC 8188)
    /// and as a Web Push message (RFC 8291) never decrypt under keys that made nothing, and a header that parses
    /// names a record size of at least 18; as text, a VAPID `Authorization` never verifies for a key that signed
    /// nothing, and an audit export never verifies a checkpoint under such a key (rows alone may chain correctly).
    @Sendable public static func webPushAndAudit(_ input: Data) throws {
        if let header = try? ContentEncoding.header(of: input), header.recordSize < ContentEncoding.minimumRecordSize {
            throw Violation("A header with a record size below 18 parsed.")
        }
        if (try? ContentEncoding.decrypt(input, inputKey: Data(UnusedWebPushKeys.shared.inputKey))) != nil {
            throw Violation("An aes128gcm body decrypted under a key that encrypted nothing.")
        }
        let keys = UnusedWebPushKeys.shared
        if (try? WebPushEncryption.decrypt(input, privateKey: keys.receiver, authSecret: Data(keys.authSecret))) != nil
        {
            throw Violation("A Web Push body decrypted for a subscription nobody encrypted to.")
        }
        let text = String(decoding: input, as: UTF8.self)
        // A subscription's keys as a registration sends them: `p256dh auth`.
        let parts = text.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        if parts.count == 2,
            let subscription = try? WebPushEncryption.Subscription(p256dh: String(parts[0]), auth: String(parts[1]))
        {
            guard subscription.publicKey.x963.count == 65, subscription.authSecret.count == 16,
                let again = try? WebPushEncryption.Subscription(p256dh: subscription.p256dh, auth: subscription.auth),
                again.publicKey.x963 == subscription.publicKey.x963, again.authSecret == subscription.authSecret
            else { throw Violation("Web Push subscription keys changed on their way through their encoding.") }
        }
        if (try? VAPID.verify(authorization: text, audience: "https://push.example", expectedKey: keys.signer)) != nil {
            throw Violation("A VAPID token verified for a key that signed nothing.")
        }
        if case .success(let report) = AuditChain.verify(export: text, key: keys.signer),
            report.checkpoints > 0 || report.signedThrough != nil
        {
            throw Violation("An audit export verified a checkpoint under a key that signed nothing.")
        }
    }

    /// Keys that encrypt and sign nothing, made once per process. (Byte arrays, not `Data`: the leak checker does
    /// not see a global's `Data` storage through its packed representation and reports it at exit.)
    private struct UnusedWebPushKeys: Sendable {
        static let shared = UnusedWebPushKeys()
        let receiver = ECPrivateKey()
        let authSecret = [UInt8](Bytes.random(count: 16))
        let inputKey = [UInt8](Bytes.random(count: 16))
        let signer = ECPrivateKey().publicKey
    }
}
