import AssentCrypto
import AssentModel
import Crypto
import Foundation

/// A WebAuthn authenticator in software for tests that speak to the server's API the way a browser would: it makes
/// P-256 (ES256) credentials with `none` attestation and answers challenges with them, keeping a signature counter
/// per credential. Its knobs make the answers a real authenticator or browser could send when something is wrong:
/// another origin, a counter set back, no user verification.
public final class SoftwareAuthenticator: @unchecked Sendable {
    public struct Credential: Sendable {
        public let id: Data
        public let key: P256.Signing.PrivateKey
        public let userHandle: Data
        public let relyingPartyID: String
        public var signCount: UInt32
    }

    /// The page's origin the browser reports.
    public var origin: String
    /// Whether the authenticator verifies its user (the UV flag).
    public var verifiesUser = true
    /// Whether the credentials it makes are synced passkeys (backup eligible and backed up).
    public var synced = false
    public private(set) var credentials: [Credential] = []
    private let lock = NSLock()

    public init(origin: String) { self.origin = origin }

    /// Answers `navigator.credentials.create()` with these options.
    public func create(_ options: PasskeyOptions) throws -> RegistrationCredential {
        let rpID = options.rp?.id ?? ""
        let key = P256.Signing.PrivateKey()
        let id = Bytes.random(count: 32)
        let credential = Credential(
            id: id, key: key, userHandle: try Base64URL.decode(options.user?.id ?? ""), relyingPartyID: rpID,
            signCount: 0)
        lock.withLock { credentials.append(credential) }
        let point = key.publicKey.x963Representation
        let coseKey = CBOR.map([
            (.unsigned(1), .unsigned(2)), (.unsigned(3), .negative(6)), (.negative(0), .unsigned(1)),
            (.negative(1), .bytes(point.subdata(in: 1..<33))), (.negative(2), .bytes(point.subdata(in: 33..<65))),
        ]).encoded
        var authData = authenticatorData(rpID: rpID, attested: true, signCount: 0)
        authData.append(Data(count: 16))
        authData.append(contentsOf: [UInt8(id.count >> 8), UInt8(id.count & 0xff)])
        authData.append(id)
        authData.append(coseKey)
        let attestation = CBOR.map([
            (.text("fmt"), .text("none")), (.text("attStmt"), .map([])), (.text("authData"), .bytes(authData)),
        ]).encoded
        return RegistrationCredential(
            id: Base64URL.encode(id), rawId: Base64URL.encode(id),
            response: .init(
                clientDataJSON: Base64URL.encode(clientData("webauthn.create", options.challenge)),
                attestationObject: Base64URL.encode(attestation), transports: ["internal"]),
            authenticatorAttachment: "platform")
    }

    /// Answers `navigator.credentials.get()`: with the credential `id` names, else the first one for the options'
    /// relying party that the options allow. `signCount` overrides the next counter value (a clone's).
    public func get(_ options: PasskeyOptions, id: Data? = nil, signCount: UInt32? = nil) throws
        -> AuthenticationCredential
    {
        let allowed = (options.allowCredentials ?? []).compactMap { try? Base64URL.decode($0.id) }
        let index = try lock.withLock { () throws -> Int in
            guard
                let index = credentials.firstIndex(where: {
                    $0.relyingPartyID == options.rpId && (id == nil || $0.id == id)
                        && (allowed.isEmpty || allowed.contains($0.id))
                })
            else { throw Failure(description: "no credential for \(options.rpId ?? "?")") }
            credentials[index].signCount = signCount ?? credentials[index].signCount + 1
            return index
        }
        let credential = lock.withLock { credentials[index] }
        let authData = authenticatorData(
            rpID: credential.relyingPartyID, attested: false, signCount: credential.signCount)
        let client = clientData("webauthn.get", options.challenge)
        let signature = try credential.key.signature(for: authData + Data(SHA256.hash(data: client)))
        return AuthenticationCredential(
            id: Base64URL.encode(credential.id), rawId: Base64URL.encode(credential.id),
            response: .init(
                clientDataJSON: Base64URL.encode(client), authenticatorData: Base64URL.encode(authData),
                signature: Base64URL.encode(signature.derRepresentation),
                userHandle: Base64URL.encode(credential.userHandle)),
            authenticatorAttachment: "platform")
    }

    private func authenticatorData(rpID: String, attested: Bool, signCount: UInt32) -> Data {
        var flags: UInt8 = 0x01
        if verifiesUser { flags |= 0x04 }
        if synced { flags |= 0x08 | 0x10 }
        if attested { flags |= 0x40 }
        var data = Data(SHA256.hash(data: Data(rpID.utf8)))
        data.append(flags)
        data.append(Bytes.bigEndian(signCount))
        return data
    }

    private func clientData(_ type: String, _ challenge: String) -> Data {
        Data(#"{"type":"\#(type)","challenge":"\#(challenge)","origin":"\#(origin)","crossOrigin":false}"#.utf8)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }
}
