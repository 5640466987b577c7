import Foundation

/// The authenticator's own record of a ceremony (WebAuthn §6.1): whom it was for, what the person did, its counter,
/// and at registration the new credential.
public struct AuthenticatorData: Sendable, Equatable {
    /// The flags byte.
    public struct Flags: OptionSet, Sendable, Equatable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// User present (a touch, a click).
        public static let userPresent = Flags(rawValue: 0x01)
        /// User verified (PIN, biometry).
        public static let userVerified = Flags(rawValue: 0x04)
        /// Backup eligible: the credential may live on more than one device (a synced passkey).
        public static let backupEligible = Flags(rawValue: 0x08)
        /// Backup state: it is backed up now.
        public static let backedUp = Flags(rawValue: 0x10)
        /// Attested credential data follows.
        public static let attestedCredentialData = Flags(rawValue: 0x40)
        /// Extension data follows.
        public static let extensionData = Flags(rawValue: 0x80)
    }

    /// A new credential, present at registration.
    public struct AttestedCredential: Sendable, Equatable {
        /// The authenticator model's AAGUID (16 bytes; zeros when it does not say).
        public let aaguid: Data
        public let credentialID: Data
        /// The credential's public key as its COSE_Key bytes.
        public let publicKey: Data
    }

    /// The bytes as sent (signatures cover them).
    public let raw: Data
    public let rpIDHash: Data
    public let flags: Flags
    public let signCount: UInt32
    public let attestedCredential: AttestedCredential?
    /// The extension outputs map.
    public let extensions: CBOR?

    /// The longest credential id WebAuthn allows (Level 3, §7.1: at most 1023 bytes).
    public static let maximumCredentialIDLength = 1023

    /// Parses authenticator data; nothing may follow what its flags announce.
    public static func parse(_ data: Data) throws(WebAuthnError) -> AuthenticatorData {
        let bytes = [UInt8](data)
        guard bytes.count >= 37 else {
            throw WebAuthnError(.malformed, "Authenticator data is \(bytes.count) bytes; it has at least 37.")
        }
        let flags = Flags(rawValue: bytes[32])
        let signCount = bytes[33..<37].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        var offset = 37
        var attested: AttestedCredential?
        if flags.contains(.attestedCredentialData) {
            guard bytes.count >= offset + 18 else {
                throw WebAuthnError(.malformed, "Authenticator data ends inside its attested credential data.")
            }
            let aaguid = Data(bytes[offset..<offset + 16])
            let length = Int(bytes[offset + 16]) << 8 | Int(bytes[offset + 17])
            offset += 18
            guard length <= maximumCredentialIDLength else {
                throw WebAuthnError(.malformed, "A credential id of \(length) bytes is longer than WebAuthn allows.")
            }
            guard bytes.count >= offset + length else {
                throw WebAuthnError(.malformed, "Authenticator data ends inside its credential id.")
            }
            let credentialID = Data(bytes[offset..<offset + length])
            offset += length
            let keyBytes = try publicKeyBytes(Array(bytes[offset...]), extensionsFollow: flags.contains(.extensionData))
            offset += keyBytes.count
            attested = AttestedCredential(aaguid: aaguid, credentialID: credentialID, publicKey: keyBytes.key)
        }
        var extensions: CBOR?
        if flags.contains(.extensionData) {
            do {
                extensions = try CBORDecoder().decode(Data(bytes[offset...]))
            } catch {
                throw WebAuthnError(.malformed, "The authenticator's extension data is not one CBOR map: \(error)")
            }
            guard case .map = extensions else {
                throw WebAuthnError(.malformed, "The authenticator's extension data is not a CBOR map.")
            }
            offset = bytes.count
        }
        guard offset == bytes.count else {
            throw WebAuthnError(.malformed, "\(bytes.count - offset) bytes follow the authenticator data.")
        }
        return AuthenticatorData(
            raw: data, rpIDHash: Data(bytes[0..<32]), flags: flags, signCount: signCount,
            attestedCredential: attested, extensions: extensions)
    }

    /// The COSE key at the start of `bytes` and how many bytes it took.
    ///
    /// Some YubiKeys encode an Ed25519 key as a map header announcing 3 entries followed by 4 (duo-labs/py_webauthn
    /// issue 160); when exactly that leaves bytes over with no extensions announced, the header is read as 4, the
    /// way other relying parties accept those keys. The key's own checks still apply when it is used.
    private static func publicKeyBytes(_ bytes: [UInt8], extensionsFollow: Bool) throws(WebAuthnError) -> (
        key: Data, count: Int
    ) {
        let decoder = CBORDecoder()
        let item: CBOR
        let used: Int
        do {
            (item, used) = try decoder.decodePrefix(Data(bytes))
        } catch {
            throw WebAuthnError(.malformed, "The credential public key is not CBOR: \(error)")
        }
        if used < bytes.count, !extensionsFollow, bytes.first == 0xA3 {
            var patched = bytes
            patched[0] = 0xA4
            if let (_, all) = try? decoder.decodePrefix(Data(patched)), all == bytes.count {
                return (Data(patched), all)
            }
        }
        guard case .map = item else {
            throw WebAuthnError(.malformed, "The credential public key is not a CBOR map.")
        }
        return (Data(bytes[..<used]), used)
    }

    /// Whether the credential may be on more than one device, and whether it is backed up now (§6.1.3).
    public func backupState() throws(WebAuthnError) -> (multiDevice: Bool, backedUp: Bool) {
        try Self.backupState(flags)
    }

    /// The backup state a flags byte says; backed up but not eligible is impossible and refused.
    public static func backupState(_ flags: Flags) throws(WebAuthnError) -> (multiDevice: Bool, backedUp: Bool) {
        let eligible = flags.contains(.backupEligible)
        let backedUp = flags.contains(.backedUp)
        guard eligible || !backedUp else {
            throw WebAuthnError(
                .backupFlags,
                "The authenticator says a credential that cannot be backed up is backed up, which is impossible.")
        }
        return (eligible, backedUp)
    }
}
