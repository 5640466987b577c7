import Crypto
import Foundation

/// A `PublicKeyCredential` in the JSON form of WebAuthn Level 3 §5.1.8 (`toJSON()`): binary members as Base64URL
/// text; `Response` is what `create()` or `get()` answered.
public struct PublicKeyCredentialJSON<Response: Codable & Sendable>: Codable, Sendable {
    public var id: String
    public var rawId: String
    public var type: String
    public var response: Response
    public var authenticatorAttachment: String?

    public init(
        id: String, rawId: String, type: String = "public-key", response: Response,
        authenticatorAttachment: String? = nil
    ) {
        self.id = id
        self.rawId = rawId
        self.type = type
        self.response = response
        self.authenticatorAttachment = authenticatorAttachment
    }
}

/// What `navigator.credentials.create()` answers (`AuthenticatorAttestationResponseJSON`).
public struct AuthenticatorAttestationResponseJSON: Codable, Sendable {
    public var clientDataJSON: String
    public var attestationObject: String
    public var transports: [String]?

    public init(clientDataJSON: String, attestationObject: String, transports: [String]? = nil) {
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
        self.transports = transports
    }
}

/// What `navigator.credentials.get()` answers (`AuthenticatorAssertionResponseJSON`).
public struct AuthenticatorAssertionResponseJSON: Codable, Sendable {
    public var clientDataJSON: String
    public var authenticatorData: String
    public var signature: String
    /// The user handle a discoverable credential returns (the relying party's id of the account).
    public var userHandle: String?

    public init(clientDataJSON: String, authenticatorData: String, signature: String, userHandle: String? = nil) {
        self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userHandle = userHandle
    }
}

/// A new credential from `navigator.credentials.create()`.
public typealias RegistrationCredential = PublicKeyCredentialJSON<AuthenticatorAttestationResponseJSON>
/// A credential's answer from `navigator.credentials.get()`.
public typealias AuthenticationCredential = PublicKeyCredentialJSON<AuthenticatorAssertionResponseJSON>

/// What the relying party expects of a registration.
public struct RegistrationExpectation: Sendable {
    /// The challenge the server issued for this ceremony.
    public var challenge: Data
    /// The origins the ceremony may run on (any one matches).
    public var origins: [String]
    /// The relying-party ID (a registrable domain of the origins).
    public var relyingPartyID: String
    public var requireUserVerification: Bool
    /// Whether the user-present flag is required; `false` only for conditional creation (WebAuthn §7.1 step 14).
    public var requireUserPresence: Bool
    /// The algorithms offered in `pubKeyCredParams`; a credential with another is refused.
    public var algorithms: [COSEKey.Algorithm]
    public var allowCrossOrigin: Bool
    public var trust: AttestationTrust

    public init(
        challenge: Data, origins: [String], relyingPartyID: String, requireUserVerification: Bool = false,
        requireUserPresence: Bool = true, algorithms: [COSEKey.Algorithm] = COSEKey.Algorithm.defaults,
        allowCrossOrigin: Bool = false, trust: AttestationTrust = AttestationTrust()
    ) {
        self.challenge = challenge
        self.origins = origins
        self.relyingPartyID = relyingPartyID
        self.requireUserVerification = requireUserVerification
        self.requireUserPresence = requireUserPresence
        self.algorithms = algorithms
        self.allowCrossOrigin = allowCrossOrigin
        self.trust = trust
    }
}

/// A credential a registration created, verified, with what the relying party stores of it.
public struct RegisteredCredential: Sendable {
    public let id: Data
    /// The COSE_Key bytes, stored and used for every later authentication.
    public let publicKey: Data
    public let algorithm: COSEKey.Algorithm
    public let signCount: UInt32
    /// The authenticator model (16 bytes; zeros when it does not say).
    public let aaguid: Data
    public let attestation: VerifiedAttestation
    public let userVerified: Bool
    /// Backup eligible: a synced passkey rather than one bound to a single device.
    public let multiDevice: Bool
    public let backedUp: Bool
    public let transports: [String]

    /// The AAGUID in its UUID text form.
    public var aaguidText: String {
        UUID(uuid: aaguid.count == 16 ? aaguid.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) } : UUID().uuid)
            .uuidString.lowercased()
    }
}

/// What the relying party expects of an authentication, with the credential it stored.
public struct AuthenticationExpectation: Sendable {
    public var challenge: Data
    public var origins: [String]
    public var relyingPartyID: String
    public var requireUserVerification: Bool
    public var allowCrossOrigin: Bool
    /// The stored COSE_Key bytes.
    public var publicKey: Data
    /// The stored signature counter.
    public var signCount: UInt32

    public init(
        challenge: Data, origins: [String], relyingPartyID: String, requireUserVerification: Bool = false,
        allowCrossOrigin: Bool = false, publicKey: Data, signCount: UInt32
    ) {
        self.challenge = challenge
        self.origins = origins
        self.relyingPartyID = relyingPartyID
        self.requireUserVerification = requireUserVerification
        self.allowCrossOrigin = allowCrossOrigin
        self.publicKey = publicKey
        self.signCount = signCount
    }
}

/// A verified authentication.
public struct VerifiedAuthentication: Sendable {
    public let credentialID: Data
    /// The counter to store now.
    public let signCount: UInt32
    public let userVerified: Bool
    public let multiDevice: Bool
    public let backedUp: Bool
    public let userHandle: Data?
}

/// The relying party's two ceremonies (WebAuthn Level 3 §7.1 and §7.2).
public enum WebAuthn {
    /// The attestation formats verified (others are refused with ``WebAuthnError/Code/attestationFormat``).
    public static var attestationFormats: [String] { AttestationVerifier.formats }

    /// Verifies a registration: client data, authenticator data, the credential's key and algorithm, and the
    /// attestation statement (its signature always; its chain when the trust names roots for its format).
    public static func verifyRegistration(
        _ credential: RegistrationCredential, expecting expected: RegistrationExpectation
    )
        async throws(WebAuthnError) -> RegisteredCredential
    {
        let id = try credentialID(id: credential.id, rawID: credential.rawId, type: credential.type)
        let clientDataJSON = try Base64URL.decodeLenient(credential.response.clientDataJSON, field: "clientDataJSON")
        let clientData = try CollectedClientData.parse(clientDataJSON)
        try clientData.check(
            type: "webauthn.create", challenge: expected.challenge, origins: expected.origins,
            allowCrossOrigin: expected.allowCrossOrigin)
        let object = try AttestationObject.parse(
            try Base64URL.decodeLenient(credential.response.attestationObject, field: "attestationObject"))
        let data = object.authenticatorData
        try checkFlags(
            data, relyingPartyID: expected.relyingPartyID, userPresence: expected.requireUserPresence,
            userVerification: expected.requireUserVerification)
        let backup = try data.backupState()
        guard let attested = data.attestedCredential else {
            throw WebAuthnError(.malformed, "The authenticator data of a registration carries no credential.")
        }
        guard attested.credentialID == id else {
            throw WebAuthnError(.credential, "The authenticator registered another credential than the response names.")
        }
        let key = try COSEKey(decoding: attested.publicKey)
        guard expected.algorithms.contains(key.algorithm) else {
            throw WebAuthnError(
                .algorithm, "The credential uses \(key.algorithm.name), which this relying party did not offer.")
        }
        let attestation = try await AttestationVerifier.verify(
            object, clientDataHash: clientData.hash, credentialKey: key, trust: expected.trust)
        return RegisteredCredential(
            id: id, publicKey: attested.publicKey, algorithm: key.algorithm, signCount: data.signCount,
            aaguid: attested.aaguid, attestation: attestation, userVerified: data.flags.contains(.userVerified),
            multiDevice: backup.multiDevice, backedUp: backup.backedUp, transports: credential.response.transports ?? []
        )
    }

    /// Verifies an authentication against the stored credential: client data, authenticator data, the signature
    /// over authenticator data ‖ SHA-256(clientDataJSON), and that the signature counter went forward (a counter
    /// that did not is ``WebAuthnError/Code/signCount``: the caller flags the credential).
    public static func verifyAuthentication(
        _ credential: AuthenticationCredential, expecting expected: AuthenticationExpectation
    ) throws(WebAuthnError) -> VerifiedAuthentication {
        let id = try credentialID(id: credential.id, rawID: credential.rawId, type: credential.type)
        let clientDataJSON = try Base64URL.decodeLenient(credential.response.clientDataJSON, field: "clientDataJSON")
        let clientData = try CollectedClientData.parse(clientDataJSON)
        try clientData.check(
            type: "webauthn.get", challenge: expected.challenge, origins: expected.origins,
            allowCrossOrigin: expected.allowCrossOrigin)
        let data = try AuthenticatorData.parse(
            try Base64URL.decodeLenient(credential.response.authenticatorData, field: "authenticatorData"))
        try checkFlags(
            data, relyingPartyID: expected.relyingPartyID, userPresence: true,
            userVerification: expected.requireUserVerification)
        let backup = try data.backupState()
        let key = try COSEKey(decoding: expected.publicKey)
        let signature = try Base64URL.decodeLenient(credential.response.signature, field: "signature")
        guard try key.isValidSignature(signature, for: data.raw + clientData.hash) else {
            throw WebAuthnError(.signature, "Could not verify authentication signature.")
        }
        // Counters of 0 on both sides mean the authenticator keeps none (synced passkeys).
        if data.signCount > 0 || expected.signCount > 0, data.signCount <= expected.signCount {
            throw WebAuthnError(
                .signCount,
                "The authenticator's signature counter (\(data.signCount)) did not go past the stored one (\(expected.signCount)); the credential may have been copied."
            )
        }
        let userHandle = try credential.response.userHandle.flatMap { text throws(WebAuthnError) in
            text.isEmpty ? nil : try Base64URL.decodeLenient(text, field: "userHandle")
        }
        return VerifiedAuthentication(
            credentialID: id, signCount: data.signCount, userVerified: data.flags.contains(.userVerified),
            multiDevice: backup.multiDevice, backedUp: backup.backedUp, userHandle: userHandle)
    }

    private static func credentialID(id: String, rawID: String, type: String) throws(WebAuthnError) -> Data {
        guard type == "public-key" else {
            throw WebAuthnError(.malformed, "The credential's type is \"\(type)\", not \"public-key\".")
        }
        let raw = try Base64URL.decodeLenient(rawID, field: "rawId")
        guard !raw.isEmpty, try Base64URL.decodeLenient(id, field: "id") == raw else {
            throw WebAuthnError(.credential, "The credential's id and rawId differ.")
        }
        return raw
    }

    private static func checkFlags(
        _ data: AuthenticatorData, relyingPartyID: String, userPresence: Bool, userVerification: Bool
    ) throws(WebAuthnError) {
        guard Bytes.constantTimeEqual(data.rpIDHash, Data(SHA256.hash(data: Data(relyingPartyID.utf8)))) else {
            throw WebAuthnError(
                .relyingParty, "The authenticator answered for another relying party than \(relyingPartyID).")
        }
        if userPresence, !data.flags.contains(.userPresent) {
            throw WebAuthnError(.userPresence, "The authenticator did not see the user present.")
        }
        if userVerification, !data.flags.contains(.userVerified) {
            throw WebAuthnError(.userVerification, "User verification is required but user was not verified.")
        }
    }
}
