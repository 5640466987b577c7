import AssentCrypto
import AssentModel
import Foundation
import Logging

/// A device whose signature was accepted.
public struct AuthenticatedDevice: Sendable {
    public var activation: ActivationRecord
    public var application: ApplicationRecord
    public var signatureType: SignatureType
}

/// The device side of PowerAuth 3.3: temporary keys, activation, status, signatures, tokens and vault.
public struct PowerAuthService: Sendable {
    /// Signature types that prove the user, required by removal, vault unlock and signature validation.
    public static let twoFactorTypes: Set<SignatureType> = [
        .possessionKnowledge, .possessionBiometry, .possessionKnowledgeBiometry,
    ]

    /// The part of the store this sees.
    let store: any ActivationStore & ReplayGuard
    let clock: WallClock
    let audit: Auditor
    let logger: Logger
    let policy: SecurityPolicy
    let limiter: RateLimiter
    let applications: ApplicationService
    static let decoder = JSONDecoder()
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()

    // MARK: Temporary keys

    /// `/pa/v3/keystore/create`: verifies the device's HS256 request and answers with an ES256-signed temporary key.
    ///
    /// The JWT is the request's credential: one that is not a JWT, names an unknown application or activation, or
    /// does not verify is an authentication failure (401); only the claims of a verified JWT are checked further.
    public func createTemporaryKey(_ request: TemporaryKeyRequest) async throws -> TemporaryKeyResponse {
        let parts = request.jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = try? Base64URL.decode(String(parts[1])),
            let claims = try? Self.decoder.decode(TemporaryKeyRequestClaims.self, from: payload)
        else {
            throw AssentServerError.authenticationFailed(
                "The temporary key request is not a JWT with the application key and a challenge.")
        }
        let application = try await applications.application(key: claims.applicationKey)
        let appSecret = try Bytes.base64(application.applicationSecret, field: "Application secret")
        let verificationKey: Data
        let signingKey: ECPrivateKey
        if let activationId = claims.activationId {
            guard let activation = try await store.activation(id: activationId),
                activation.applicationId == application.id, let keys = try activation.keys(),
                activation.state != .removed
            else {
                throw AssentServerError.authenticationFailed("The activation cannot use activation-scope encryption.")
            }
            verificationKey = KeyDerivation.deriveInternal(from: keys.transport, index: appSecret)
            signingKey = try activation.serverPrivateKey()
        } else {
            verificationKey = appSecret
            signingKey = application.masterPrivateKey
        }
        do {
            _ = try CompactJWS.verify(request.jwt, with: .hs256(verificationKey))
        } catch {
            throw AssentServerError.authenticationFailed("The temporary key request's signature does not verify.")
        }
        guard !claims.challenge.isEmpty, claims.challenge.utf8.count <= 256 else {
            throw AssentServerError.invalidRequest("The challenge must be 1 to 256 characters.")
        }
        let now = clock.millis
        let key = TemporaryKeyRecord(
            id: UUID().uuidString.lowercased(), applicationId: application.id, activationId: claims.activationId,
            privateKey: ECPrivateKey(), expiresAt: now + Millis(policy.temporaryKeyLifetime) * 1000)
        try await store.insertTemporaryKey(key)
        let responseClaims = TemporaryKeyResponseClaims(
            sub: key.id, applicationKey: application.applicationKey, activationId: claims.activationId,
            challenge: claims.challenge, publicKey: key.privateKey.publicKey.x963.base64EncodedString(),
            issuedAt: now, expiresAt: key.expiresAt)
        let jwt = try CompactJWS.sign(payload: try Self.encoder.encode(responseClaims), with: .es256(signingKey))
        return TemporaryKeyResponse(jwt: jwt)
    }

    // MARK: Activation

    /// `/pa/v3/activation/create` with an activation code: both ECIES layers, key exchange, single use of the code.
    /// Wrong codes count against the client (`client`: what the per-address limits count for it,
    /// ``AssentRequestContext/clientLimitKey``) and the code's first two groups; over either limit, the request is
    /// refused with 429 before the code is looked up.
    public func createActivation(
        encryptionHeader: String?, body: EncryptedRequest, client: String? = nil
    ) async throws -> EncryptedResponse {
        let limits = limiter.rateLimits
        if let client {
            try await limiter.check(limits.activationPerAddress, "activation.address", client)
        }
        /// Counts a wrong code and returns the error to throw.
        func wrongCode(_ code: ActivationCode?) async -> AssentServerError {
            if let client {
                await limiter.recordFailure(limits.activationPerAddress, "activation.address", client)
            }
            if let code { await limiter.recordFailure(limits.activationPerCodePrefix, "activation.code", code.prefix) }
            return .activationCodeInvalid()
        }
        // The header names the application whose keys the body is encrypted for: without a well-formed one the
        // request is not authenticated (401), like a request naming an unknown application key.
        guard let encryptionHeader else {
            throw AssentServerError.authenticationFailed("The X-PowerAuth-Encryption header is missing.")
        }
        let header: EncryptionHeader
        do {
            header = try EncryptionHeader(parsing: encryptionHeader)
        } catch {
            throw AssentServerError.authenticationFailed("The X-PowerAuth-Encryption header is malformed.")
        }
        guard header.activationId == nil else {
            throw AssentServerError.invalidRequest("Activation creation uses application-scope encryption.")
        }
        let application = try await applications.application(key: header.applicationKey)
        let outer = try await decrypt(
            body, sharedInfo1: .applicationScopeGeneric, application: application, activation: nil)
        let layer1 = try decodeJSON(ActivationLayer1Request.self, outer.plaintext)
        guard layer1.type == "CODE", let codeText = layer1.identityAttributes["code"] else {
            throw AssentServerError.invalidRequest(
                "Only activation type CODE with identityAttributes.code is supported.")
        }
        guard let code = try? ActivationCode(codeText) else { throw await wrongCode(nil) }
        try await limiter.check(limits.activationPerCodePrefix, "activation.code", code.prefix)
        let inner = try await decrypt(
            layer1.activationData, sharedInfo1: .activationLayer2, application: application, activation: nil)
        let layer2 = try decodeJSON(ActivationLayer2Request.self, inner.plaintext)
        let devicePublicKey: ECPublicKey
        do {
            devicePublicKey = try ECPublicKey(base64: layer2.devicePublicKey, field: "devicePublicKey")
        } catch {
            throw AssentServerError.invalidRequest("devicePublicKey is not a P-256 public key.")
        }
        for (field, value) in [
            ("activationName", layer2.activationName), ("platform", layer2.platform),
            ("deviceInfo", layer2.deviceInfo), ("extras", layer2.extras),
        ] where (value?.utf8.count ?? 0) > 1024 {
            throw AssentServerError.invalidRequest("\(field) is longer than 1024 bytes.")
        }
        guard let found = try await store.activation(code: code.value, applicationId: application.id) else {
            throw await wrongCode(code)
        }
        let now = clock.millis
        guard found.state == .created, now < found.codeExpiresAt else { throw await wrongCode(code) }
        let (activation, _) = try await store.updateActivation(id: found.id, at: clock) { activation in
            // Checked again on the row being written: a concurrent use of the code wins once.
            try activation.completeKeyExchange(
                code: code.value, devicePublicKey: devicePublicKey,
                device: .init(
                    name: layer2.activationName, platform: layer2.platform, info: layer2.deviceInfo,
                    extras: layer2.extras),
                now: now)
        }
        await audit(
            .activationDeviceCompleted, activation: activation, actor: "device",
            "The device exchanged keys; state \(activation.state.name).")
        logger.info(
            "activation completed by device",
            metadata: ["activation.id": "\(activation.id)", "activation.state": "\(activation.state.name)"])

        let layer2Response = ActivationLayer2Response(
            activationId: activation.id,
            serverPublicKey: try activation.serverPublicKey().x963.base64EncodedString(),
            ctrData: activation.counterData.data.base64EncodedString())
        let layer1Response = ActivationLayer1Response(
            customAttributes: layer1.customAttributes ?? [:],
            activationData: try inner.response(layer2Response, timestamp: clock.millis))
        return try outer.response(layer1Response, timestamp: clock.millis)
    }

    /// `/pa/v3/activation/status`: the encrypted status blob for the device's challenge.
    ///
    /// An unknown activation, or one whose device has not completed the key exchange, gets 32 random bytes and a
    /// random nonce, as PowerAuth answers: the answer is the same shape either way, so this unauthenticated endpoint
    /// does not tell who asks which activation ids exist; only the device holding the transport key can read it.
    public func status(_ request: ActivationStatusRequest) async throws -> ActivationStatusResponse {
        let challenge: Data
        do {
            challenge = try Bytes.base64(request.challenge, field: "challenge", length: 16)
        } catch {
            throw AssentServerError.invalidRequest("challenge must be Base64 of 16 bytes.")
        }
        guard let activation = try await store.activation(id: request.activationId),
            let keys = try activation.keys()
        else {
            return ActivationStatusResponse(
                activationId: request.activationId,
                encryptedStatusBlob: Bytes.random(count: ActivationStatusBlob.encryptedLength).base64EncodedString(),
                nonce: Bytes.random(count: 16).base64EncodedString(), customObject: nil)
        }
        let blob = ActivationStatusBlob(
            state: activation.state,
            counterByte: UInt8(truncatingIfNeeded: activation.counter),
            failedAttempts: UInt8(clamping: activation.failedAttempts),
            maxFailedAttempts: UInt8(clamping: activation.maxFailedAttempts),
            counterLookAhead: UInt8(clamping: policy.counterLookAhead),
            counterDataHash: try ActivationStatusBlob.counterDataHash(
                of: activation.counterData, transportKey: keys.transport))
        let nonce = Bytes.random(count: 16)
        let encrypted = try blob.encrypted(transportKey: keys.transport, challenge: challenge, nonce: nonce)
        return ActivationStatusResponse(
            activationId: activation.id, encryptedStatusBlob: encrypted.base64EncodedString(),
            nonce: nonce.base64EncodedString(), customObject: nil)
    }

    /// `/pa/v3/activation/remove`: a 2FA-signed removal by the device.
    public func removeActivation(authorization: String?, body: Data) async throws -> ActivationIdResponse {
        let device = try await authenticate(
            authorization: authorization, method: "POST", uriId: "/pa/activation/remove", body: body,
            allowed: Self.twoFactorTypes)
        let (activation, _) = try await store.updateActivation(id: device.activation.id, at: clock) { try $0.remove() }
        await audit(.activationRemoved, activation: activation, actor: "device", "Removed by the device.")
        return ActivationIdResponse(activationId: activation.id)
    }

    // MARK: Signatures

    /// Verifies `X-PowerAuth-Authorization` against the stored counter window and records the outcome atomically:
    /// a match advances the counter (and resets failures for 2FA), a mismatch counts a failure and blocks at the
    /// limit. A signature is never accepted twice. Anything but an accepted signature is a 401.
    public func authenticate(
        authorization: String?, method: String, uriId: String, body: Data, allowed: Set<SignatureType>
    ) async throws -> AuthenticatedDevice {
        let verdict = try await verify(
            authorization: authorization, method: method, uriId: uriId, body: body, allowed: allowed)
        guard case .accepted(let device) = verdict else { throw verdict.refusal }
        return device
    }

    /// What became of a well-formed signature of a known activation: accepted, failed (counted against the
    /// activation, which it may have blocked) or replayed (a copy of one already used: nothing counted).
    public enum Verdict: Sendable {
        case accepted(AuthenticatedDevice)
        case failed(ActivationRecord, blocked: Bool)
        case replayed(ActivationRecord)

        /// The 401 a refused signature is answered with.
        var refusal: AssentServerError {
            switch self {
            case .replayed: .authenticationFailed("The signature was already used.")
            case .accepted, .failed: .authenticationFailed("The signature does not match.")
            }
        }
    }

    /// Verifies and records a signature as ``authenticate(authorization:method:uriId:body:allowed:)`` does, and
    /// returns the verdict with the activation it concerns, for a caller whose own rules depend on how a signature
    /// failed (an operation counts a failed approval too). A missing or malformed header, a signature type not
    /// `allowed`, an unknown application or activation throw a 401: there is no activation to speak of.
    public func verify(
        authorization: String?, method: String, uriId: String, body: Data, allowed: Set<SignatureType>
    ) async throws -> Verdict {
        let signed = try await signedRequest(
            authorization: authorization, method: method, uriId: uriId, body: body, allowed: allowed)
        let (header, application) = (signed.header, signed.application)
        let now = clock.millis
        let activation: ActivationRecord
        let outcome: Outcome
        do {
            (activation, outcome) = try await recordSignature(
                header: header, application: application, data: signed.data, format: signed.format, now: now)
        } catch let error as AssentServerError where error.code == .activationNotFound {
            // An unknown activation fails like a removed one, so signed endpoints do not reveal which ids exist.
            throw AssentServerError.authenticationFailed("The activation is not active.")
        }
        switch outcome {
        case .accepted(let offset):
            logger.debug(
                "signature accepted",
                metadata: ["activation.id": "\(activation.id)", "signature.offset": "\(offset)", "uri.id": "\(uriId)"])
            return .accepted(
                AuthenticatedDevice(
                    activation: activation, application: application, signatureType: header.signatureType))
        case .failed(let blocked):
            await audit(
                .signatureFailed, activation: activation, actor: "device",
                "Signature for \(uriId) failed (\(activation.failedAttempts)/\(activation.maxFailedAttempts)).")
            if blocked {
                await audit(
                    .activationBlocked, activation: activation, actor: "system", "Blocked: too many failed attempts.")
            }
            return .failed(activation, blocked: blocked)
        case .replayed:
            await audit(
                .signatureReplayed, activation: activation, actor: "device",
                "A copy of an already used signature for \(uriId) was refused (not counted as a failed attempt).")
            return .replayed(activation)
        }
    }

    /// A signed request as far as it can be checked before any activation is read: its header, the application it
    /// names, and the bytes the signature covers.
    struct SignedRequest: Sendable {
        let header: AuthorizationHeader
        let application: ApplicationRecord
        let format: SignatureFormat
        let data: Data
    }

    /// Parses `X-PowerAuth-Authorization` and builds what the signature covers. - Throws: a 401 for a missing or
    /// malformed header, a signature type not `allowed`, biometry the server does not accept, an unknown application.
    func signedRequest(
        authorization: String?, method: String, uriId: String, body: Data, allowed: Set<SignatureType>
    ) async throws -> SignedRequest {
        guard let authorization else {
            throw AssentServerError.authenticationFailed("The X-PowerAuth-Authorization header is missing.")
        }
        let header: AuthorizationHeader
        do {
            header = try AuthorizationHeader(parsing: authorization)
        } catch {
            throw AssentServerError.authenticationFailed("The X-PowerAuth-Authorization header is malformed.")
        }
        guard allowed.contains(header.signatureType) else {
            throw AssentServerError.authenticationFailed("This endpoint needs a different signature type.")
        }
        guard policy.biometryEnabled || !header.signatureType.factors.contains(.biometry) else {
            throw AssentServerError.authenticationFailed("Biometry is not enabled on this server.")
        }
        let application = try await applications.application(key: header.applicationKey)
        return SignedRequest(
            header: header, application: application, format: try SignatureFormat(protocolVersion: header.version),
            data: PowerAuthSignature.dataToSign(
                method: method, uriId: uriId, nonce: header.nonce, body: body,
                applicationSecret: application.applicationSecret))
    }

    enum Outcome: Sendable {
        case accepted(offset: Int)
        case failed(blocked: Bool)
        /// The signature is valid for a counter value already behind the activation's: a copy of a used one.
        case replayed
    }

    /// Thrown out of the activation update so that a replay writes nothing.
    struct ReplayedSignature: Error {
        let activation: ActivationRecord
    }

    /// Validates the signature against the stored counter window and writes the outcome in one conditional update.
    func recordSignature(
        header: AuthorizationHeader, application: ApplicationRecord, data: Data, format: SignatureFormat, now: Millis
    ) async throws -> (ActivationRecord, Outcome) {
        let (activation, outcome, _) = try await recordSignature(
            activationId: header.activationId, signature: header.signature, types: [header.signatureType],
            application: application, data: data, format: format, now: now)
        return (activation, outcome)
    }

    /// Validates `signature` as any of `types` (tried in order) against the stored counter window and writes the
    /// outcome in one conditional update: a match advances the counter, a mismatch counts a failed attempt, and a
    /// copy of a signature already used (valid for a remembered counter value) writes nothing. Returns the type that
    /// matched.
    func recordSignature(
        activationId: String, signature: String, types: [SignatureType], application: ApplicationRecord, data: Data,
        format: SignatureFormat, now: Millis
    ) async throws -> (ActivationRecord, Outcome, SignatureType?) {
        let activation: ActivationRecord
        let result: (Outcome, SignatureType?)
        do {
            (activation, result) = try await updateSignatureState(
                activationId: activationId, signature: signature, types: types, application: application, data: data,
                format: format, now: now)
        } catch let replay as ReplayedSignature {
            return (replay.activation, .replayed, nil)
        }
        return (activation, result.0, result.1)
    }

    private func updateSignatureState(
        activationId: String, signature: String, types: [SignatureType], application: ApplicationRecord, data: Data,
        format: SignatureFormat, now: Millis
    ) async throws -> (ActivationRecord, (Outcome, SignatureType?)) {
        let lookAhead = policy.counterLookAhead
        let replayMemory = policy.replayMemory
        return try await store.updateActivation(id: activationId, at: clock) { activation in
            try Self.check(
                signature, types: types, on: &activation, application: application, data: data, format: format,
                now: now, lookAhead: lookAhead, replayMemory: replayMemory)
        }
    }

    /// Checks `signed`'s signature against `activation` under this server's policy, as a verification does, and
    /// writes the outcome into it without storing it (``check(_:types:on:application:data:format:now:lookAhead:replayMemory:)``).
    func check(_ signed: SignedRequest, on activation: inout ActivationRecord, now: Millis) throws -> (
        Outcome, SignatureType?
    ) {
        try Self.check(
            signed.header.signature, types: [signed.header.signatureType], on: &activation,
            application: signed.application, data: signed.data, format: signed.format, now: now,
            lookAhead: policy.counterLookAhead, replayMemory: policy.replayMemory)
    }

    /// Checks `signature` as any of `types` (tried in order) against `activation`'s counter window and writes the
    /// outcome into it: a match advances the counter, a mismatch counts a failed attempt (and may block). Pure: the
    /// caller writes the activation back conditionally. - Throws: ``ReplayedSignature`` for a copy of a signature
    /// already used (nothing to write), a 401 when the activation is not an active one of `application`.
    static func check(
        _ signature: String, types: [SignatureType], on activation: inout ActivationRecord,
        application: ApplicationRecord, data: Data, format: SignatureFormat, now: Millis, lookAhead: Int,
        replayMemory: Int
    ) throws -> (Outcome, SignatureType?) {
        guard activation.applicationId == application.id, activation.state == .active,
            let keys = try activation.keys()
        else { throw AssentServerError.authenticationFailed("The activation is not active.") }
        for type in types {
            guard
                let match = try PowerAuthSignature.validate(
                    signature, data: data, counter: activation.counterData, keys: keys.signatureKeys(for: type),
                    format: format, lookAhead: lookAhead)
            else { continue }
            activation.usedCounters.append(
                contentsOf: sequence(first: activation.counterData) { $0.next() }.prefix(match.offset + 1))
            activation.usedCounters.removeFirst(max(0, activation.usedCounters.count - replayMemory))
            activation.counterData = match.nextCounter
            activation.counter += Int64(match.offset + 1)
            if type.provesUserPresence { activation.failedAttempts = 0 }
            activation.lastUsedAt = now
            return (Outcome.accepted(offset: match.offset), type)
        }
        for type in types {
            let factorKeys = keys.signatureKeys(for: type)
            for used in activation.usedCounters.reversed()
            where try PowerAuthSignature.validate(
                signature, data: data, counter: used, keys: factorKeys, format: format, lookAhead: 1) != nil
            {
                throw ReplayedSignature(activation: activation)
            }
        }
        return (Outcome.failed(blocked: activation.countFailedSignature()), nil)
    }

    /// `/pa/v3/signature/validate`: validates a 2FA signature over the request body.
    public func validateSignature(authorization: String?, method: String, body: Data) async throws {
        _ = try await authenticate(
            authorization: authorization, method: method, uriId: "/pa/signature/validate", body: body,
            allowed: Self.twoFactorTypes)
    }

    // MARK: Tokens and vault

    /// `/pa/v3/token/create`: signed, activation-scope encrypted; returns a new MAC token.
    public func createToken(authorization: String?, body: Data) async throws -> EncryptedResponse {
        let (device, decrypted) = try await signedEncryptedRequest(
            authorization: authorization, body: body, uriId: "/pa/token/create", sharedInfo1: .createToken,
            allowed: Set(SignatureType.allCases))
        let token = TokenRecord(
            id: UUID().uuidString.lowercased(), activationId: device.activation.id, secret: Bytes.random(count: 16),
            signatureType: device.signatureType, createdAt: clock.millis)
        try await store.insertToken(token)
        await audit(
            .tokenCreated, activation: device.activation, actor: "device",
            "MAC token created with \(device.signatureType.rawValue).")
        return try decrypted.response(
            TokenCreateResponse(tokenId: token.id, tokenSecret: token.secret.base64EncodedString()),
            timestamp: clock.millis)
    }

    /// `/pa/v3/token/remove`: signed removal of one of the activation's tokens.
    public func removeToken(authorization: String?, body: Data) async throws -> TokenIdObject {
        let device = try await authenticate(
            authorization: authorization, method: "POST", uriId: "/pa/token/remove", body: body,
            allowed: Set(SignatureType.allCases))
        let request = try decodeJSON(RequestEnvelope<TokenIdObject>.self, body).requestObject
        guard try await store.deleteToken(id: request.tokenId, activationId: device.activation.id) else {
            throw AssentServerError.notFound("The activation has no token with this id.")
        }
        await audit(.tokenRemoved, activation: device.activation, actor: "device", "MAC token removed.")
        return request
    }

    /// `/pa/v3/vault/unlock`: 2FA-signed, activation-scope encrypted; returns the vault key under `KEY_TRANSPORT`.
    public func unlockVault(authorization: String?, body: Data) async throws -> EncryptedResponse {
        let (device, decrypted) = try await signedEncryptedRequest(
            authorization: authorization, body: body, uriId: "/pa/vault/unlock", sharedInfo1: .vaultUnlock,
            allowed: Self.twoFactorTypes)
        let reason = (try? Self.decoder.decode(VaultUnlockRequest.self, from: decrypted.plaintext))?.reason
        guard let keys = try device.activation.keys() else { throw AssentServerError.internalError("No keys.") }
        let encryptedKey = try VaultKeyTransport.encrypt(vaultKey: keys.vault, transportKey: keys.transport)
        await audit(
            .vaultUnlocked, activation: device.activation, actor: "device",
            "Vault unlocked, reason \(reason.map { String($0.prefix(64)) } ?? "NOT_SPECIFIED").")
        return try decrypted.response(
            VaultUnlockResponse(encryptedVaultEncryptionKey: encryptedKey.base64EncodedString()),
            timestamp: clock.millis)
    }

    // MARK: Helpers

    /// Encrypt-then-sign requests: the signature covers the encrypted body, then the body is decrypted in the
    /// activation's scope.
    func signedEncryptedRequest(
        authorization: String?, body: Data, uriId: String, sharedInfo1: ECIESSharedInfo1, allowed: Set<SignatureType>
    ) async throws -> (AuthenticatedDevice, Decrypted) {
        let device = try await authenticate(
            authorization: authorization, method: "POST", uriId: uriId, body: body, allowed: allowed)
        let decrypted = try await decrypt(
            try decodeJSON(EncryptedRequest.self, body), sharedInfo1: sharedInfo1, application: device.application,
            activation: device.activation)
        return (device, decrypted)
    }

    struct Decrypted {
        var plaintext: Data
        var envelope: ECIESEnvelopeKey
        var context: ECIESContext

        /// Encrypts `value` as JSON for the device, under the request's envelope key.
        func response<T: Encodable>(_ value: T, timestamp: Millis) throws -> EncryptedResponse {
            EncryptedResponse(
                cryptogram: try ECIES.encryptResponse(
                    try PowerAuthService.encoder.encode(value), envelopeKey: envelope, context: context,
                    timestamp: UInt64(timestamp)))
        }
    }

    /// Decrypts with the request's temporary key, checking its scope, expiry, the timestamp and nonce reuse.
    func decrypt(
        _ request: EncryptedRequest, sharedInfo1: ECIESSharedInfo1, application: ApplicationRecord,
        activation: ActivationRecord?
    ) async throws -> Decrypted {
        let cryptogram: ECIESCryptogram
        do {
            cryptogram = try request.cryptogram()
        } catch {
            throw AssentServerError.invalidRequest("The encrypted request has a malformed field.")
        }
        let now = clock.millis
        let tolerance = Millis(policy.timestampTolerance) * 1000
        guard abs(Int64(cryptogram.timestamp) - now) <= tolerance else {
            throw AssentServerError.invalidRequest("The encrypted request's timestamp is too far from the server time.")
        }
        guard let key = try await store.temporaryKey(id: request.temporaryKeyId),
            key.applicationId == application.id, key.activationId == activation?.id, key.expiresAt > now
        else {
            throw AssentServerError.invalidRequest(
                "The temporary key is unknown, expired or of another scope: fetch a new one.")
        }
        let context: ECIESContext
        if let activation {
            guard let keys = try activation.keys() else { throw AssentServerError.decryptionFailed() }
            context = .activationScope(
                sharedInfo1, applicationKey: application.applicationKey,
                applicationSecret: application.applicationSecret, activationId: activation.id,
                transportKey: keys.transport, temporaryKeyId: key.id)
        } else {
            context = .applicationScope(
                sharedInfo1, applicationKey: application.applicationKey,
                applicationSecret: application.applicationSecret, temporaryKeyId: key.id)
        }
        let plaintext: Data
        let envelope: ECIESEnvelopeKey
        do {
            (plaintext, envelope) = try ECIES.decryptRequest(cryptogram, with: key.privateKey, context: context)
        } catch {
            throw AssentServerError.decryptionFailed()
        }
        guard
            try await store.claimUnique(
                kind: "ecies", value: "\(key.id):\(request.nonce)", expiresAt: now + 2 * tolerance)
        else {
            throw AssentServerError.invalidRequest("This encrypted request was already received (replay).")
        }
        return Decrypted(plaintext: plaintext, envelope: envelope, context: context)
    }

    func activationForDevice(id: String, application: ApplicationRecord) async throws -> ActivationRecord {
        guard let activation = try await store.activation(id: id),
            activation.applicationId == application.id
        else { throw AssentServerError.activationNotFound() }
        return activation
    }

    func decodeJSON<T: Decodable>(_ type: T.Type, _ data: Data) throws -> T {
        do {
            return try Self.decoder.decode(type, from: data)
        } catch {
            throw AssentServerError.invalidRequest("The request body is not the expected JSON.")
        }
    }
}
