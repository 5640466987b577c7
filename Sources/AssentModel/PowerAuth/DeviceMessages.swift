import AssentCrypto
import Foundation

/// Decodes and checks the Base64 fields shared by encrypted requests and responses.
private func decodeCryptogram(
    ephemeralPublicKey: Data?, encryptedData: String, mac: String, nonce: String, timestamp: Int64
) throws -> ECIESCryptogram {
    guard timestamp >= 0 else { throw AssentCryptoError(.invalidEncoding, "The timestamp must not be negative.") }
    return ECIESCryptogram(
        ephemeralPublicKey: ephemeralPublicKey,
        encryptedData: try Bytes.base64(encryptedData, field: "encryptedData"),
        mac: try Bytes.base64(mac, field: "mac", length: 32),
        nonce: try Bytes.base64(nonce, field: "nonce", length: 16),
        timestamp: UInt64(timestamp)
    )
}

/// An ECIES-encrypted request body: a bare JSON object, not wrapped in `requestObject`.
public struct EncryptedRequest: Codable, Sendable, Equatable {
    public var temporaryKeyId: String
    public var ephemeralPublicKey: String
    public var encryptedData: String
    public var mac: String
    public var nonce: String
    public var timestamp: Int64

    /// Wraps a cryptogram made for temporary key `temporaryKeyId`.
    public init(temporaryKeyId: String, cryptogram: ECIESCryptogram) {
        self.temporaryKeyId = temporaryKeyId
        self.ephemeralPublicKey = cryptogram.ephemeralPublicKey?.base64EncodedString() ?? ""
        self.encryptedData = cryptogram.encryptedData.base64EncodedString()
        self.mac = cryptogram.mac.base64EncodedString()
        self.nonce = cryptogram.nonce.base64EncodedString()
        self.timestamp = Int64(cryptogram.timestamp)
    }

    /// The cryptogram, with every field decoded and checked.
    public func cryptogram() throws -> ECIESCryptogram {
        try decodeCryptogram(
            ephemeralPublicKey: try Bytes.base64(ephemeralPublicKey, field: "ephemeralPublicKey"),
            encryptedData: encryptedData, mac: mac, nonce: nonce, timestamp: timestamp)
    }
}

/// An ECIES-encrypted response body.
public struct EncryptedResponse: Codable, Sendable, Equatable {
    public var encryptedData: String
    public var mac: String
    public var nonce: String
    public var timestamp: Int64

    /// Wraps a response cryptogram.
    public init(cryptogram: ECIESCryptogram) {
        self.encryptedData = cryptogram.encryptedData.base64EncodedString()
        self.mac = cryptogram.mac.base64EncodedString()
        self.nonce = cryptogram.nonce.base64EncodedString()
        self.timestamp = Int64(cryptogram.timestamp)
    }

    /// The cryptogram, with every field decoded and checked.
    public func cryptogram() throws -> ECIESCryptogram {
        try decodeCryptogram(
            ephemeralPublicKey: nil, encryptedData: encryptedData, mac: mac, nonce: nonce, timestamp: timestamp)
    }
}

/// `/pa/v3/keystore/create` request: `{"requestObject":{"jwt":…}}`.
public struct TemporaryKeyRequest: Codable, Sendable {
    public var jwt: String
    public init(jwt: String) { self.jwt = jwt }
}

/// `/pa/v3/keystore/create` response object: `{"jwt":…}`.
public struct TemporaryKeyResponse: Codable, Sendable {
    public var jwt: String
    public init(jwt: String) { self.jwt = jwt }
}

/// Claims of the device's HS256 temporary-key request.
public struct TemporaryKeyRequestClaims: Codable, Sendable, Equatable {
    public var applicationKey: String
    /// Present for activation scope only.
    public var activationId: String?
    /// Base64 of random bytes, echoed by the server.
    public var challenge: String

    public init(applicationKey: String, activationId: String?, challenge: String) {
        self.applicationKey = applicationKey
        self.activationId = activationId
        self.challenge = challenge
    }
}

/// Claims of the server's ES256 temporary-key response.
public struct TemporaryKeyResponseClaims: Codable, Sendable, Equatable {
    /// The temporary key id.
    public var sub: String
    public var applicationKey: String
    public var activationId: String?
    public var challenge: String
    /// Base64 of the X9.63 public key.
    public var publicKey: String
    public var iat: Int64
    public var exp: Int64
    public var iat_ms: Int64
    public var exp_ms: Int64

    public init(
        sub: String, applicationKey: String, activationId: String?, challenge: String, publicKey: String,
        issuedAt: Int64, expiresAt: Int64
    ) {
        self.sub = sub
        self.applicationKey = applicationKey
        self.activationId = activationId
        self.challenge = challenge
        self.publicKey = publicKey
        self.iat = issuedAt / 1000
        self.exp = expiresAt / 1000
        self.iat_ms = issuedAt
        self.exp_ms = expiresAt
    }
}

/// The outer (application-scope `/pa/generic/application`) layer of `/pa/v3/activation/create`.
public struct ActivationLayer1Request: Codable, Sendable {
    /// `CODE`; clients send it as `type` or `activationType`.
    public var type: String
    public var identityAttributes: [String: String]
    public var customAttributes: [String: String]?
    public var activationData: EncryptedRequest

    public init(code: String, activationData: EncryptedRequest, customAttributes: [String: String]? = nil) {
        self.type = "CODE"
        self.identityAttributes = ["code": code]
        self.customAttributes = customAttributes
        self.activationData = activationData
    }

    private enum CodingKeys: String, CodingKey {
        case type, activationType, identityAttributes, customAttributes, activationData
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let type = try container.decodeIfPresent(String.self, forKey: .type) {
            self.type = type
        } else {
            self.type = try container.decode(String.self, forKey: .activationType)
        }
        identityAttributes = try container.decode([String: String].self, forKey: .identityAttributes)
        customAttributes = try container.decodeIfPresent([String: String].self, forKey: .customAttributes)
        activationData = try container.decode(EncryptedRequest.self, forKey: .activationData)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(identityAttributes, forKey: .identityAttributes)
        try container.encodeIfPresent(customAttributes, forKey: .customAttributes)
        try container.encode(activationData, forKey: .activationData)
    }
}

/// The inner (`/pa/activation`) layer of `/pa/v3/activation/create`.
public struct ActivationLayer2Request: Codable, Sendable {
    /// Base64 of the device's X9.63 public key.
    public var devicePublicKey: String
    public var activationName: String?
    public var activationOtp: String?
    public var platform: String?
    public var deviceInfo: String?
    public var extras: String?

    public init(
        devicePublicKey: String, activationName: String?, activationOtp: String? = nil, platform: String?,
        deviceInfo: String?, extras: String? = nil
    ) {
        self.devicePublicKey = devicePublicKey
        self.activationName = activationName
        self.activationOtp = activationOtp
        self.platform = platform
        self.deviceInfo = deviceInfo
        self.extras = extras
    }
}

/// The decrypted inner response of `/pa/v3/activation/create`.
public struct ActivationLayer2Response: Codable, Sendable, Equatable {
    public var activationId: String
    /// Base64 of the personal server public key (X9.63).
    public var serverPublicKey: String
    /// Base64 of the initial 16-byte counter.
    public var ctrData: String

    public init(activationId: String, serverPublicKey: String, ctrData: String) {
        self.activationId = activationId
        self.serverPublicKey = serverPublicKey
        self.ctrData = ctrData
    }
}

/// The decrypted outer response of `/pa/v3/activation/create`.
public struct ActivationLayer1Response: Codable, Sendable {
    public var customAttributes: [String: String]
    public var activationData: EncryptedResponse

    public init(customAttributes: [String: String], activationData: EncryptedResponse) {
        self.customAttributes = customAttributes
        self.activationData = activationData
    }
}

/// `/pa/v3/activation/status` request object.
public struct ActivationStatusRequest: Codable, Sendable {
    public var activationId: String
    /// Base64 of 16 random bytes.
    public var challenge: String

    public init(activationId: String, challenge: String) {
        self.activationId = activationId
        self.challenge = challenge
    }
}

/// `/pa/v3/activation/status` response object.
public struct ActivationStatusResponse: Codable, Sendable {
    public var activationId: String
    public var encryptedStatusBlob: String
    public var nonce: String
    public var customObject: [String: String]?

    public init(activationId: String, encryptedStatusBlob: String, nonce: String, customObject: [String: String]?) {
        self.activationId = activationId
        self.encryptedStatusBlob = encryptedStatusBlob
        self.nonce = nonce
        self.customObject = customObject
    }
}

/// The `{activationId}` object several endpoints answer with.
public struct ActivationIdResponse: Codable, Sendable, Equatable {
    public var activationId: String
    public init(activationId: String) { self.activationId = activationId }
}

/// The decrypted `/pa/v3/token/create` response.
public struct TokenCreateResponse: Codable, Sendable, Equatable {
    public var tokenId: String
    /// Base64 of the 16-byte token secret.
    public var tokenSecret: String
    public init(tokenId: String, tokenSecret: String) {
        self.tokenId = tokenId
        self.tokenSecret = tokenSecret
    }
}

/// `/pa/v3/token/remove` request and response object.
public struct TokenIdObject: Codable, Sendable, Equatable {
    public var tokenId: String
    public init(tokenId: String) { self.tokenId = tokenId }
}

/// The decrypted `/pa/v3/vault/unlock` request.
public struct VaultUnlockRequest: Codable, Sendable {
    /// `ADD_BIOMETRY`, `FETCH_ENCRYPTION_KEY`, `SIGN_WITH_DEVICE_PRIVATE_KEY` or another reason.
    public var reason: String?
    public init(reason: String?) { self.reason = reason }
}

/// The decrypted `/pa/v3/vault/unlock` response.
public struct VaultUnlockResponse: Codable, Sendable {
    /// Base64 of the vault key encrypted under `KEY_TRANSPORT` (32 bytes).
    public var encryptedVaultEncryptionKey: String
    public init(encryptedVaultEncryptionKey: String) { self.encryptedVaultEncryptionKey = encryptedVaultEncryptionKey }
}

/// The `{"status":"OK"}` body of endpoints with nothing to return.
public struct StatusOnlyResponse: Codable, Sendable {
    public var status: ResponseStatus
    public init() { status = .ok }
}
