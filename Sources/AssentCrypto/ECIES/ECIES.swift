import Crypto
import Foundation

/// The `sharedInfo1` constants that bind an ECIES cryptogram to the endpoint it is meant for.
public enum ECIESSharedInfo1: String, Sendable, CaseIterable {
    /// Generic application-scope encryption.
    case applicationScopeGeneric = "/pa/generic/application"
    /// Generic activation-scope encryption.
    case activationScopeGeneric = "/pa/generic/activation"
    /// The inner layer of activation creation.
    case activationLayer2 = "/pa/activation"
    /// MAC token creation.
    case createToken = "/pa/token/create"
    /// Vault unlock.
    case vaultUnlock = "/pa/vault/unlock"
    /// Protocol upgrade.
    case upgrade = "/pa/upgrade"
    /// Recovery code confirmation.
    case confirmRecoveryCode = "/pa/recovery/confirm"
}

/// Everything both parties must agree on besides the keys: protocol version, `sharedInfo1`, the
/// `sharedInfo2` base and the associated data.
public struct ECIESContext: Sendable, Equatable {
    /// The protocol version, `3.3`.
    public var version: String
    /// The endpoint constant.
    public var sharedInfo1: ECIESSharedInfo1
    /// `SHA256(appSecret)` (application scope) or `HMAC(KEY_TRANSPORT, appSecret)` (activation scope).
    public var sharedInfo2Base: Data
    /// `concatWithSizes(version, appKey[, activationId], temporaryKeyId)`.
    public var associatedData: Data

    /// Creates a context from its parts.
    public init(version: String = "3.3", sharedInfo1: ECIESSharedInfo1, sharedInfo2Base: Data, associatedData: Data) {
        self.version = version
        self.sharedInfo1 = sharedInfo1
        self.sharedInfo2Base = sharedInfo2Base
        self.associatedData = associatedData
    }

    /// The application-scope context (no activation yet).
    ///
    /// - Parameters:
    ///   - applicationKey: the application key's Base64 text.
    ///   - applicationSecret: the application secret's Base64 text, used as ASCII.
    ///   - temporaryKeyId: the id of the temporary key the request is encrypted to.
    public static func applicationScope(
        _ sharedInfo1: ECIESSharedInfo1,
        applicationKey: String,
        applicationSecret: String,
        temporaryKeyId: String,
        version: String = "3.3"
    ) -> ECIESContext {
        ECIESContext(
            version: version,
            sharedInfo1: sharedInfo1,
            sharedInfo2Base: Data(SHA256.hash(data: Data(applicationSecret.utf8))),
            associatedData: Bytes.concatenatingWithSizes([
                Data(version.utf8), Data(applicationKey.utf8), Data(temporaryKeyId.utf8),
            ])
        )
    }

    /// The activation-scope context, keyed additionally by the activation's `KEY_TRANSPORT`.
    public static func activationScope(
        _ sharedInfo1: ECIESSharedInfo1,
        applicationKey: String,
        applicationSecret: String,
        activationId: String,
        transportKey: Data,
        temporaryKeyId: String,
        version: String = "3.3"
    ) -> ECIESContext {
        ECIESContext(
            version: version,
            sharedInfo1: sharedInfo1,
            sharedInfo2Base: HMACSHA256.mac(key: transportKey, data: Data(applicationSecret.utf8)),
            associatedData: Bytes.concatenatingWithSizes([
                Data(version.utf8), Data(applicationKey.utf8), Data(activationId.utf8), Data(temporaryKeyId.utf8),
            ])
        )
    }
}

/// The 48-byte key one ECIES exchange derives: `encKey ‖ macKey ‖ ivKey`.
///
/// A request and its response share it: the device keeps it to decrypt the response, the server keeps it to
/// encrypt the response.
public struct ECIESEnvelopeKey: Sendable, Equatable {
    /// The 48 key bytes.
    public let data: Data

    /// Wraps 48 key bytes.
    public init(data: Data) throws {
        try Bytes.requireLength(data, 48, "ECIES envelope key")
        self.data = data
    }

    /// `X9.63-KDF-SHA256(Z, sharedInfo: version ‖ sharedInfo1 ‖ ephemeralPublicKey, 48)`.
    public static func derive(
        sharedSecret: Data,
        ephemeralPublicKey: Data,
        context: ECIESContext
    ) throws -> ECIESEnvelopeKey {
        var info = Data(context.version.utf8)
        info.append(Data(context.sharedInfo1.rawValue.utf8))
        info.append(ephemeralPublicKey)
        let derived = ANSIX963KDF.derive(secret: sharedSecret, sharedInfo: info, length: 48)
        return try ECIESEnvelopeKey(data: derived)
    }

    var encryptionKey: Data { data.subdata(in: 0..<16) }
    var macKey: Data { data.subdata(in: 16..<32) }
    var ivKey: Data { data.subdata(in: 32..<48) }

    /// Encrypts `plaintext`, binding it to the context, nonce, timestamp and (for requests) the ephemeral key.
    public func seal(
        _ plaintext: Data,
        nonce: Data,
        timestamp: UInt64,
        ephemeralPublicKey: Data?,
        context: ECIESContext
    ) throws -> ECIESCryptogram {
        try Bytes.requireLength(nonce, 16, "ECIES nonce")
        let iv = KeyDerivation.deriveInternal(from: ivKey, index: nonce)
        let ciphertext = try AESCBC.encrypt(plaintext, key: encryptionKey, iv: iv, padding: true)
        let sharedInfo2 = Self.sharedInfo2(
            context: context,
            nonce: nonce,
            timestamp: timestamp,
            ephemeralPublicKey: ephemeralPublicKey
        )
        return ECIESCryptogram(
            ephemeralPublicKey: ephemeralPublicKey,
            encryptedData: ciphertext,
            mac: HMACSHA256.mac(key: macKey, data: ciphertext + sharedInfo2),
            nonce: nonce,
            timestamp: timestamp
        )
    }

    /// Checks the MAC in constant time, then decrypts.
    ///
    /// - Throws: ``AssentCryptoError/Code/authenticationFailed`` when the MAC does not match (tampering or a wrong
    ///   key), ``AssentCryptoError/Code/decryptionFailed`` when the ciphertext is malformed.
    public func open(_ cryptogram: ECIESCryptogram, context: ECIESContext) throws -> Data {
        try Bytes.requireLength(cryptogram.nonce, 16, "ECIES nonce")
        let sharedInfo2 = Self.sharedInfo2(
            context: context,
            nonce: cryptogram.nonce,
            timestamp: cryptogram.timestamp,
            ephemeralPublicKey: cryptogram.ephemeralPublicKey
        )
        let expected = HMACSHA256.mac(key: macKey, data: cryptogram.encryptedData + sharedInfo2)
        guard Bytes.constantTimeEqual(expected, cryptogram.mac) else {
            throw AssentCryptoError(.authenticationFailed, "The encrypted message's MAC does not match.")
        }
        let iv = KeyDerivation.deriveInternal(from: ivKey, index: cryptogram.nonce)
        return try AESCBC.decrypt(cryptogram.encryptedData, key: encryptionKey, iv: iv, padding: true)
    }

    /// `concatWithSizes(sh2Base, nonce, BE64(timestamp), ephemeralPublicKey?, associatedData)`.
    static func sharedInfo2(context: ECIESContext, nonce: Data, timestamp: UInt64, ephemeralPublicKey: Data?) -> Data {
        Bytes.concatenatingWithSizes([
            context.sharedInfo2Base, nonce, Bytes.bigEndian(timestamp), ephemeralPublicKey, context.associatedData,
        ])
    }
}

/// The sending and receiving halves of ECIES for both parties.
public enum ECIES {
    /// Device side: encrypts a request to `recipientPublicKey` with a fresh ephemeral key.
    ///
    /// - Returns: the request cryptogram and the envelope key to decrypt the response with.
    public static func encryptRequest(
        _ plaintext: Data,
        to recipientPublicKey: ECPublicKey,
        context: ECIESContext,
        timestamp: UInt64,
        ephemeralKey: ECPrivateKey = ECPrivateKey(),
        nonce: Data = Bytes.random(count: 16)
    ) throws -> (request: ECIESCryptogram, envelopeKey: ECIESEnvelopeKey) {
        let ephemeralPublic = ephemeralKey.publicKey.x963
        let envelopeKey = try ECIESEnvelopeKey.derive(
            sharedSecret: try ephemeralKey.sharedSecret(with: recipientPublicKey),
            ephemeralPublicKey: ephemeralPublic,
            context: context
        )
        let request = try envelopeKey.seal(
            plaintext,
            nonce: nonce,
            timestamp: timestamp,
            ephemeralPublicKey: ephemeralPublic,
            context: context
        )
        return (request, envelopeKey)
    }

    /// Server side: decrypts a request with the recipient private key (master, personal or temporary).
    ///
    /// - Returns: the plaintext and the envelope key to encrypt the response with.
    public static func decryptRequest(
        _ request: ECIESCryptogram,
        with recipientPrivateKey: ECPrivateKey,
        context: ECIESContext
    ) throws -> (plaintext: Data, envelopeKey: ECIESEnvelopeKey) {
        guard let ephemeralBytes = request.ephemeralPublicKey else {
            throw AssentCryptoError(.invalidKey, "An encrypted request must carry the ephemeral public key.")
        }
        let ephemeral = try ECPublicKey(x963: ephemeralBytes)
        let envelopeKey = try ECIESEnvelopeKey.derive(
            sharedSecret: try recipientPrivateKey.sharedSecret(with: ephemeral),
            ephemeralPublicKey: ephemeralBytes,
            context: context
        )
        return (try envelopeKey.open(request, context: context), envelopeKey)
    }

    /// Server side: encrypts the response under the request's envelope key.
    public static func encryptResponse(
        _ plaintext: Data,
        envelopeKey: ECIESEnvelopeKey,
        context: ECIESContext,
        timestamp: UInt64,
        nonce: Data = Bytes.random(count: 16)
    ) throws -> ECIESCryptogram {
        try envelopeKey.seal(plaintext, nonce: nonce, timestamp: timestamp, ephemeralPublicKey: nil, context: context)
    }

    /// Device side: decrypts the response with the envelope key kept from the request.
    public static func decryptResponse(
        _ response: ECIESCryptogram,
        envelopeKey: ECIESEnvelopeKey,
        context: ECIESContext
    ) throws -> Data {
        guard response.ephemeralPublicKey == nil else {
            throw AssentCryptoError(.invalidKey, "An encrypted response carries no ephemeral public key.")
        }
        return try envelopeKey.open(response, context: context)
    }
}

/// The ANSI X9.63 key derivation function over SHA-256.
enum ANSIX963KDF {
    static func derive(secret: Data, sharedInfo: Data, length: Int) -> Data {
        var output = Data()
        var counter: UInt32 = 1
        while output.count < length {
            var hasher = SHA256()
            hasher.update(data: secret)
            hasher.update(data: Bytes.bigEndian(counter))
            hasher.update(data: sharedInfo)
            output.append(contentsOf: hasher.finalize())
            counter += 1
        }
        return output.prefix(length)
    }
}
