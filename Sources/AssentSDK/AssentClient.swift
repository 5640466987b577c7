import AssentCrypto
import AssentModel
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What proves the user on a signed call.
public enum AuthenticationFactor: Sendable {
    /// The device alone (1FA).
    case possession
    /// The device and the user's PIN (2FA).
    case pin(String)
    /// The device and the user's biometry (2FA); the ``BiometryProvider`` shows `prompt`.
    case biometry(prompt: String)
}

/// How ``AssentClient/finishActivation(with:)`` protects the new activation. The device (possession) is always
/// part of it.
public enum ActivationMethod: Sendable {
    /// The device and a PIN.
    case pin(String)
    /// The device, a PIN and biometry (the biometry key goes to the client's ``BiometryProvider``).
    case pinAndBiometry(String)
    /// The device alone: one-factor operations only, and no second factor can be added later.
    case device
}

/// The PIN rules the SDK checks before it encrypts anything with a PIN.
public struct PINPolicy: Sendable, Equatable {
    /// The fewest characters a PIN may have.
    public var minimumLength: Int
    /// The most characters a PIN may have.
    public var maximumLength: Int
    /// Whether only the digits 0–9 are allowed.
    public var digitsOnly: Bool

    /// Four to sixteen digits by default.
    public init(minimumLength: Int = 4, maximumLength: Int = 16, digitsOnly: Bool = true) {
        self.minimumLength = minimumLength
        self.maximumLength = maximumLength
        self.digitsOnly = digitsOnly
    }

    /// The rules a server announced in its ``DeviceConfiguration``.
    public init(_ format: DeviceConfiguration.PINFormat) {
        self.init(
            minimumLength: format.minLength, maximumLength: format.maxLength,
            digitsOnly: format.type != DeviceConfiguration.PINFormat.alphanumeric)
    }

    /// Throws ``AssentError/Code/invalidInput`` with the rule the PIN breaks.
    public func validate(_ pin: String) throws {
        guard (minimumLength...maximumLength).contains(pin.count) else {
            throw AssentError(.invalidInput, "The PIN must have \(minimumLength) to \(maximumLength) characters.")
        }
        if digitsOnly, !pin.allSatisfy({ $0.isASCII && $0.isNumber }) {
            throw AssentError(.invalidInput, "The PIN may contain digits only.")
        }
    }
}

/// The result of ``AssentClient/startActivation(code:name:)``: show the fingerprint, then finish with a PIN.
public struct ActivationStart: Sendable, Equatable {
    /// The activation id (the registration id).
    public var activationId: String
    /// The fingerprint the user may compare with the one the operator sees.
    public var fingerprint: String
    /// The methods this device can finish the activation with: those the server accepts, biometry only when the
    /// client has an available ``BiometryProvider``.
    public var methods: [DeviceConfiguration.Method]
}

/// The activation's state on the server.
public struct ActivationStatus: Sendable, Equatable {
    /// `CREATED`, `PENDING_COMMIT`, `ACTIVE`, `BLOCKED` or `REMOVED`.
    public var state: ActivationState
    /// Wrong PINs (or failed biometry) in a row so far.
    public var failedAttempts: Int
    /// Wrong PINs in a row that block the activation.
    public var maxFailedAttempts: Int
    /// PIN attempts left before the activation blocks.
    public var remainingAttempts: Int { max(0, maxFailedAttempts - failedAttempts) }
}

/// One device's activation with an Assent server: activation, status, signed calls and MAC tokens. The state lives
/// in a ``Keystore`` and is saved before every signature leaves the device, so a counter is never used twice.
public actor AssentClient {
    /// The Assent server this client talks to.
    public let serverURL: URL
    /// The application's keys (application key and secret, master server public key).
    public let configuration: SDKConfiguration
    let keystore: any Keystore
    let transport: any Transport
    var state: DeviceState?
    var pending: PendingActivation?
    /// The PIN rules checked locally; ``loadConfiguration()`` replaces them with the server's.
    public var pinPolicy = PINPolicy()
    /// The server's configuration, once ``loadConfiguration()`` read it.
    public private(set) var serverConfiguration: DeviceConfiguration?
    /// Keeps the biometry key behind the platform's biometric check; `nil` when the device has none.
    public let biometry: (any BiometryProvider)?

    static let encoder = JSONEncoder()
    static let decoder = JSONDecoder()

    /// A client for the server at `serverURL` and the application `configuration` (the SDK configuration string
    /// the server prints), with its state in `keystore` and, when the device has biometry, its key in `biometry`.
    public init(
        serverURL: URL, configuration: String, keystore: any Keystore, biometry: (any BiometryProvider)? = nil,
        transport: any Transport = URLSessionTransport()
    ) throws {
        self.serverURL = serverURL
        self.biometry = biometry
        do {
            self.configuration = try SDKConfiguration(parsing: configuration)
        } catch {
            throw AssentError.wrap(error, .invalidInput, "The SDK configuration string is not valid.")
        }
        self.keystore = keystore
        self.transport = transport
        if let data = try keystore.load() {
            do {
                state = try Self.decoder.decode(DeviceState.self, from: data)
            } catch {
                throw AssentError.wrap(error, .keystore, "The stored activation cannot be read.")
            }
        }
    }

    /// Sets the PIN rules.
    public func setPINPolicy(_ policy: PINPolicy) { pinPolicy = policy }

    /// Whether this device holds an activation (no network involved).
    public var isActivatedLocally: Bool { state != nil }
    /// The activation id, once activated.
    public var registrationId: String? { state?.activationId ?? pending?.activationId }
    /// The activation fingerprint, once activated.
    public var fingerprint: String? { state?.fingerprint ?? pending?.fingerprint }
    /// The methods this activation can sign with (no network involved): always `DEVICE`, `PIN` unless it was
    /// activated with the device alone, `BIOMETRY` once added.
    public var activatedMethods: [DeviceConfiguration.Method] {
        guard let state else { return [] }
        return [.device] + (state.protectedKnowledgeKey == nil ? [] : [.pin])
            + (state.biometryEnabled ? [.biometry] : [])
    }

    // MARK: Activation

    /// Reads the server's activation configuration (code format, PIN rules, enabled methods) and adopts its PIN
    /// rules as ``pinPolicy``.
    @discardableResult
    public func loadConfiguration() async throws -> DeviceConfiguration {
        let key =
            configuration.applicationKey.addingPercentEncoding(withAllowedCharacters: .alphanumerics)
            ?? configuration.applicationKey
        let answer = try await call("/api/device/configuration?applicationKey=\(key)", method: "GET", body: nil)
        let loaded: DeviceConfiguration
        do {
            loaded = try Self.decoder.decode(ResponseEnvelope<DeviceConfiguration>.self, from: answer).responseObject
        } catch {
            throw AssentError.wrap(error, .invalidResponse, "The server's activation configuration cannot be read.")
        }
        serverConfiguration = loaded
        pinPolicy = PINPolicy(loaded.pin)
        return loaded
    }

    /// The methods the server accepts that this device can offer.
    func offeredMethods() async throws -> [DeviceConfiguration.Method] {
        let server: DeviceConfiguration
        if let loaded = serverConfiguration { server = loaded } else { server = try await loadConfiguration() }
        var biometryAvailable = false
        if let biometry { biometryAvailable = await biometry.isAvailable }
        return server.methods.filter { $0 != .biometry || biometryAvailable }
    }

    /// Exchanges keys with the server using an activation code (`XXXXX-XXXXX-XXXXX-XXXXX`) or a scanned activation
    /// QR code (`CODE#signature`, whose master-key signature is verified first). Loads the server's
    /// configuration first if ``loadConfiguration()`` was not called. Finish with ``finishActivation(with:)``.
    public func startActivation(code text: String, name: String = "Assent SDK") async throws -> ActivationStart {
        guard state == nil else { throw AssentError(.alreadyActivated, "This device is already activated.") }
        let code: String
        if text.contains("#") {
            do {
                let qr = try ActivationQRCode(parsing: text)
                try qr.verify(masterPublicKey: configuration.masterServerPublicKey)
                code = qr.code.value
            } catch {
                throw AssentError.wrap(
                    error, .signatureVerificationFailed, "The activation QR code was not signed by this server.")
            }
        } else {
            do {
                code = try ActivationCode(text).value
            } catch let error as AssentCryptoError {
                // The shape, the alphabet or the checksum: a checksum that does not match is a typo.
                throw AssentError(.invalidInput, "\(error.message) It reads XXXXX-XXXXX-XXXXX-XXXXX.")
            }
        }
        let methods = try await offeredMethods()
        let deviceKey = ECPrivateKey()
        let key = try await temporaryKey(activationScope: false)
        let innerContext = applicationContext(.activationLayer2, keyId: key.id)
        let outerContext = applicationContext(.applicationScopeGeneric, keyId: key.id)
        let layer2 = ActivationLayer2Request(
            devicePublicKey: deviceKey.publicKey.compressed.base64EncodedString(), activationName: name,
            platform: Self.platform, deviceInfo: "Assent SDK \(AssentSDK.protocolVersion)")
        let (inner, innerKey) = try ECIES.encryptRequest(
            try Self.encoder.encode(layer2), to: key.publicKey, context: innerContext, timestamp: Self.now)
        let layer1 = ActivationLayer1Request(
            code: code, activationData: EncryptedRequest(temporaryKeyId: key.id, cryptogram: inner))
        let (outer, outerKey) = try ECIES.encryptRequest(
            try Self.encoder.encode(layer1), to: key.publicKey, context: outerContext, timestamp: Self.now)
        let body = try Self.encoder.encode(EncryptedRequest(temporaryKeyId: key.id, cryptogram: outer))
        let answer = try await call(
            "/pa/v3/activation/create",
            headers: [EncryptionHeader.name: EncryptionHeader(applicationKey: configuration.applicationKey).value],
            body: body)
        do {
            let outerResponse = try Self.decoder.decode(EncryptedResponse.self, from: answer)
            let layer1Response = try Self.decoder.decode(
                ActivationLayer1Response.self,
                from: try ECIES.decryptResponse(
                    try outerResponse.cryptogram(), envelopeKey: outerKey, context: outerContext))
            let layer2Response = try Self.decoder.decode(
                ActivationLayer2Response.self,
                from: try ECIES.decryptResponse(
                    try layer1Response.activationData.cryptogram(), envelopeKey: innerKey, context: innerContext))
            let serverKey = try ECPublicKey(base64: layer2Response.serverPublicKey)
            let keys = try ActivationKeys(
                masterSecret: try KeyDerivation.masterSecret(privateKey: deviceKey, publicKey: serverKey))
            let fingerprint = ActivationFingerprint.compute(
                devicePublicKey: deviceKey.publicKey, activationId: layer2Response.activationId,
                serverPublicKey: serverKey)
            pending = PendingActivation(
                activationId: layer2Response.activationId, devicePrivateKey: deviceKey, serverPublicKey: serverKey,
                keys: keys, counter: try HashCounter(base64: layer2Response.ctrData), fingerprint: fingerprint)
            return ActivationStart(
                activationId: layer2Response.activationId, fingerprint: fingerprint, methods: methods)
        } catch {
            throw AssentError.wrap(error, .invalidResponse, "The server's activation answer cannot be read.")
        }
    }

    /// Protects the knowledge key with `pin` and saves the activation (the device and a PIN).
    public func finishActivation(pin: String) async throws {
        try await finishActivation(with: .pin(pin))
    }

    /// Saves the activation protected by `method`. The PIN is checked against ``pinPolicy`` first; the knowledge
    /// key is stored only encrypted under it. The device private key is kept encrypted under the vault key, so
    /// biometry can be added later through a vault unlock.
    public func finishActivation(with method: ActivationMethod) async throws {
        guard let pending else { throw AssentError(.notActivated, "Start the activation first.") }
        let (pin, withBiometry): (String?, Bool) =
            switch method {
            case .pin(let pin): (pin, false)
            case .pinAndBiometry(let pin): (pin, true)
            case .device: (nil, false)
            }
        var protectedKnowledge: (key: Data, salt: Data)?
        if let pin {
            try pinPolicy.validate(pin)
            let salt = KnowledgeKeyProtection.makeSalt()
            protectedKnowledge = (
                try KnowledgeKeyProtection.protect(
                    knowledgeKey: pending.keys.knowledge, password: Data(pin.utf8), salt: salt), salt
            )
        }
        if withBiometry {
            try await storeBiometryKey(
                pending.keys.biometry, activationId: pending.activationId, in: try await availableBiometry())
        }
        let newState = DeviceState(
            activationId: pending.activationId, serverPublicKey: pending.serverPublicKey.x963,
            possessionKey: pending.keys.possession, protectedKnowledgeKey: protectedKnowledge?.key,
            knowledgeSalt: protectedKnowledge?.salt, transportKey: pending.keys.transport,
            vaultProtectedDevicePrivateKey: try DevicePrivateKeyVault.protect(
                pending.devicePrivateKey, vaultKey: pending.keys.vault),
            biometryEnabled: withBiometry,
            counter: pending.counter.data, fingerprint: pending.fingerprint)
        guard self.pending?.activationId == pending.activationId else {
            throw AssentError(.notActivated, "The activation was restarted meanwhile.")
        }
        try save(newState)
        self.pending = nil
    }

    /// Removes on the server the activation this device started with ``startActivation(code:name:)`` but could not
    /// finish (the keystore could not be written, the app was told to stop), so the server keeps no activation that
    /// no device holds. The removal is signed with the keys just agreed — possession and knowledge, still in memory
    /// — as ``removeActivation(pin:)`` signs with the stored ones. Works while the activation is active (committed
    /// at once); one that waits for the operator's commit is left to the operator.
    public func abandonActivation() async throws {
        guard let pending else { throw AssentError(.notActivated, "No activation was started on this device.") }
        self.pending = nil
        let body = Data("{}".utf8)
        let nonce = Bytes.random(count: 16)
        let data = PowerAuthSignature.dataToSign(
            method: "POST", uriId: "/pa/activation/remove", nonce: nonce, body: body,
            applicationSecret: configuration.applicationSecret)
        let signature = try PowerAuthSignature.compute(
            data: data, counter: pending.counter, keys: [pending.keys.possession, pending.keys.knowledge],
            format: .base64)
        let header = AuthorizationHeader(
            activationId: pending.activationId, applicationKey: configuration.applicationKey, nonce: nonce,
            signatureType: .possessionKnowledge, signature: signature)
        _ = try await call("/pa/v3/activation/remove", headers: [AuthorizationHeader.name: header.value], body: body)
    }

    /// The activation's state on the server; resynchronises the local counter if the server is ahead.
    public func status() async throws -> ActivationStatus {
        guard let current = state else { throw AssentError(.notActivated, "This device is not activated.") }
        let challenge = Bytes.random(count: 16)
        let body = try Self.encoder.encode(
            RequestEnvelope(
                ActivationStatusRequest(activationId: current.activationId, challenge: challenge.base64EncodedString())
            ))
        let answer = try await call("/pa/v3/activation/status", body: body)
        let blob: ActivationStatusBlob
        do {
            let response = try Self.decoder.decode(ResponseEnvelope<ActivationStatusResponse>.self, from: answer)
            blob = try ActivationStatusBlob(
                decrypting: try Bytes.base64(response.responseObject.encryptedStatusBlob, field: "status blob"),
                transportKey: current.transportKey, challenge: challenge,
                nonce: try Bytes.base64(response.responseObject.nonce, field: "nonce", length: 16))
        } catch {
            throw AssentError.wrap(
                error, .invalidResponse,
                "The activation status cannot be decrypted: the server does not know this activation, or the answer "
                    + "was altered.")
        }
        // Resynchronise only if no signature moved the counter while the status was on its way.
        if blob.state == .active, var latest = state, latest.counter == current.counter,
            let distance = try? blob.counterDistance(
                from: try HashCounter(data: latest.counter), transportKey: latest.transportKey), distance > 0
        {
            latest.counter = try HashCounter(data: latest.counter).advanced(by: distance).data
            try save(latest)
        }
        return ActivationStatus(
            state: blob.state, failedAttempts: Int(blob.failedAttempts), maxFailedAttempts: Int(blob.maxFailedAttempts))
    }

    /// Removes the activation on the server (2FA with `pin`), then on this device.
    public func removeActivation(pin: String) async throws {
        guard state != nil else { throw AssentError(.notActivated, "This device is not activated.") }
        _ = try await signedCall(
            "/pa/v3/activation/remove", uriId: "/pa/activation/remove", body: Data("{}".utf8), factor: .pin(pin))
        try await removeActivationLocally()
    }

    /// Forgets the activation on this device only (when the server cannot be reached, or it was removed there),
    /// including its biometry key.
    public func removeActivationLocally() async throws {
        if let current = state, current.biometryEnabled, let biometry {
            try? await biometry.delete(account: Self.biometryAccount(current.activationId))
        }
        try keystore.delete()
        state = nil
        pending = nil
    }

    // MARK: Signed calls and tokens

    /// Builds `X-PowerAuth-Authorization` for a request and saves the advanced counter before returning it.
    func authorization(method: String = "POST", uriId: String, body: Data, factor: AuthenticationFactor) async throws
        -> String
    {
        let nonce = Bytes.random(count: 16)
        let data = PowerAuthSignature.dataToSign(
            method: method, uriId: uriId, nonce: nonce, body: body, applicationSecret: configuration.applicationSecret)
        let signed = try await sign(data, factor: factor, format: .base64)
        return AuthorizationHeader(
            activationId: signed.activationId, applicationKey: configuration.applicationKey, nonce: nonce,
            signatureType: signed.type, signature: signed.signature
        ).value
    }

    /// Signs `data` with the possession key and `factor`'s key at the current counter, and saves the next counter
    /// before returning. The factor's key is obtained first; from then on nothing suspends, so the counter is
    /// read, used and saved in one step of the actor and two calls never sign with the same value.
    func sign(_ data: Data, factor: AuthenticationFactor, format: SignatureFormat) async throws
        -> (type: SignatureType, signature: String, activationId: String)
    {
        let (type, factorKeys) = try await signatureKeys(for: factor)
        guard var current = state else { throw AssentError(.notActivated, "This device is not activated.") }
        let counter = try HashCounter(data: current.counter)
        let signature = try PowerAuthSignature.compute(
            data: data, counter: counter, keys: [current.possessionKey] + factorKeys, format: format)
        current.counter = counter.next().data
        try save(current)
        return (type, signature, current.activationId)
    }

    /// The signature type and the keys besides the possession key that `factor` needs: the knowledge key
    /// decrypted with the PIN, or the biometry key released by the ``BiometryProvider``.
    func signatureKeys(for factor: AuthenticationFactor) async throws -> (SignatureType, [Data]) {
        guard let current = state else { throw AssentError(.notActivated, "This device is not activated.") }
        switch factor {
        case .possession:
            return (.possession, [])
        case .pin(let pin):
            guard let protected = current.protectedKnowledgeKey, let salt = current.knowledgeSalt else {
                throw AssentError(
                    .factorUnavailable, "This activation has no PIN (it was activated with the device only).")
            }
            return (
                .possessionKnowledge,
                [try KnowledgeKeyProtection.unprotect(protected, password: Data(pin.utf8), salt: salt)]
            )
        case .biometry(let prompt):
            guard current.biometryEnabled, let biometry else {
                throw AssentError(.factorUnavailable, "Biometry is not enabled for this activation.")
            }
            do {
                let key = try await biometry.retrieve(
                    account: Self.biometryAccount(current.activationId), prompt: prompt)
                return (.possessionBiometry, [key])
            } catch {
                throw AssentError.wrap(error, .biometryFailed, "The biometric check did not release the key.")
            }
        }
    }

    /// Posts a signed request; a 401 after a PIN is reported as a wrong PIN with the attempts left (or blocked).
    func signedCall(
        _ path: String, uriId: String, body: Data, factor: AuthenticationFactor, headers: [String: String] = [:]
    ) async throws -> Data {
        let header = try await authorization(uriId: uriId, body: body, factor: factor)
        do {
            return try await call(
                path, headers: headers.merging([AuthorizationHeader.name: header]) { $1 }, body: body)
        } catch let error as AssentError where error.httpStatus == 401 && error.mobileTokenCode == .authenticationFailed
        {
            throw await explainAuthenticationFailure(error, factor: factor)
        }
    }

    func explainAuthenticationFailure(_ error: AssentError, factor: AuthenticationFactor) async -> AssentError {
        guard let status = try? await status() else { return error }
        switch status.state {
        case .blocked:
            return AssentError(
                .blocked, "The activation is blocked; ask the operator to unblock it.", serverCode: error.serverCode,
                httpStatus: 401, remainingAttempts: 0)
        case .removed:
            return AssentError(.removed, "The activation was removed on the server.", httpStatus: 401)
        default:
            switch factor {
            case .possession: return error
            case .pin:
                return AssentError(
                    .wrongPIN, "The PIN is wrong.", serverCode: error.serverCode, httpStatus: 401,
                    remainingAttempts: status.remainingAttempts)
            case .biometry:
                return AssentError(
                    .biometryFailed, "The server refused the biometry signature.", serverCode: error.serverCode,
                    httpStatus: 401, remainingAttempts: status.remainingAttempts)
            }
        }
    }

    /// A fresh `X-PowerAuth-Token` header, creating the MAC token first if there is none yet.
    func tokenHeader() async throws -> String {
        guard var current = state else { throw AssentError(.notActivated, "This device is not activated.") }
        if current.tokenId == nil || current.tokenSecret == nil {
            let token = try await createToken()
            // Creating the token signed a request and moved the counter: continue from the saved state.
            guard let updated = state else { throw AssentError(.notActivated, "This device is not activated.") }
            current = updated
            current.tokenId = token.tokenId
            current.tokenSecret = try Bytes.base64(token.tokenSecret, field: "token secret", length: 16)
            try save(current)
        }
        return TokenHeader.make(tokenId: current.tokenId!, tokenSecret: current.tokenSecret!, timestamp: Self.now)
            .value
    }

    /// Forgets the MAC token (after the server refused it), so the next call creates a new one.
    func dropToken() throws {
        guard var current = state else { return }
        current.tokenId = nil
        current.tokenSecret = nil
        try save(current)
    }

    /// Posts with a MAC token; when the server refuses the token (e.g. removed), creates a new one and retries once.
    func tokenCall(_ path: String, body: Data, headers: [String: String] = [:]) async throws -> Data {
        do {
            return try await call(
                path, headers: headers.merging([TokenHeader.name: try await tokenHeader()]) { $1 },
                body: body)
        } catch let error as AssentError where error.httpStatus == 401 {
            try dropToken()
            do {
                return try await call(
                    path, headers: headers.merging([TokenHeader.name: try await tokenHeader()]) { $1 }, body: body)
            } catch let retry as AssentError where retry.httpStatus == 401 {
                throw await explainAuthenticationFailure(retry, factor: .possession)
            }
        }
    }

    private func createToken() async throws -> TokenCreateResponse {
        try await encryptedSignedCall(
            "/pa/v3/token/create", uriId: "/pa/token/create", sharedInfo1: .createToken, plaintext: Data("{}".utf8),
            factor: .possession, as: TokenCreateResponse.self)
    }

    /// A signed call whose body and answer are encrypted in the activation's scope (encrypt, then sign the
    /// encrypted body).
    func encryptedSignedCall<Response: Decodable>(
        _ path: String, uriId: String, sharedInfo1: ECIESSharedInfo1, plaintext: Data, factor: AuthenticationFactor,
        as type: Response.Type
    ) async throws -> Response {
        let key = try await temporaryKey(activationScope: true)
        let context = try activationContext(sharedInfo1, keyId: key.id)
        let (request, envelope) = try ECIES.encryptRequest(
            plaintext, to: key.publicKey, context: context, timestamp: Self.now)
        let body = try Self.encoder.encode(EncryptedRequest(temporaryKeyId: key.id, cryptogram: request))
        let answer = try await signedCall(path, uriId: uriId, body: body, factor: factor)
        do {
            let encrypted = try Self.decoder.decode(EncryptedResponse.self, from: answer)
            return try Self.decoder.decode(
                type,
                from: try ECIES.decryptResponse(try encrypted.cryptogram(), envelopeKey: envelope, context: context))
        } catch {
            throw AssentError.wrap(error, .invalidResponse, "The server's encrypted answer cannot be decrypted.")
        }
    }

    // MARK: Temporary keys and ECIES contexts

    private func temporaryKey(activationScope: Bool) async throws -> (id: String, publicKey: ECPublicKey) {
        let appSecret = try Bytes.base64(configuration.applicationSecret, field: "application secret")
        let challenge = Bytes.random(count: 16).base64EncodedString()
        var hmacKey = appSecret
        var signer = configuration.masterServerPublicKey
        var activationId: String?
        if activationScope {
            guard let current = state else { throw AssentError(.notActivated, "This device is not activated.") }
            hmacKey = KeyDerivation.deriveInternal(from: current.transportKey, index: appSecret)
            signer = try ECPublicKey(x963: current.serverPublicKey)
            activationId = current.activationId
        }
        let claims = TemporaryKeyRequestClaims(
            applicationKey: configuration.applicationKey, activationId: activationId, challenge: challenge)
        let jwt = try CompactJWS.sign(payload: try Self.encoder.encode(claims), with: .hs256(hmacKey))
        let answer = try await call(
            "/pa/v3/keystore/create", body: try Self.encoder.encode(RequestEnvelope(TemporaryKeyRequest(jwt: jwt))))
        do {
            let response = try Self.decoder.decode(ResponseEnvelope<TemporaryKeyResponse>.self, from: answer)
            let payload = try CompactJWS.verify(response.responseObject.jwt, with: .es256(signer))
            let responseClaims = try Self.decoder.decode(TemporaryKeyResponseClaims.self, from: payload)
            guard responseClaims.challenge == challenge else {
                throw AssentError(.signatureVerificationFailed, "The temporary key answers another challenge.")
            }
            return (responseClaims.sub, try ECPublicKey(base64: responseClaims.publicKey))
        } catch {
            throw AssentError.wrap(
                error, .signatureVerificationFailed, "The server's temporary key is not signed by this server.")
        }
    }

    private func applicationContext(_ sharedInfo1: ECIESSharedInfo1, keyId: String) -> ECIESContext {
        .applicationScope(
            sharedInfo1, applicationKey: configuration.applicationKey,
            applicationSecret: configuration.applicationSecret, temporaryKeyId: keyId)
    }

    private func activationContext(_ sharedInfo1: ECIESSharedInfo1, keyId: String) throws -> ECIESContext {
        guard let current = state else { throw AssentError(.notActivated, "This device is not activated.") }
        return .activationScope(
            sharedInfo1, applicationKey: configuration.applicationKey,
            applicationSecret: configuration.applicationSecret, activationId: current.activationId,
            transportKey: current.transportKey, temporaryKeyId: keyId)
    }

    // MARK: HTTP

    /// Sends JSON (a POST unless said otherwise) and returns the body of a 2xx answer; anything else becomes an
    /// ``AssentError`` with the server's code. A cancelled task ends the call with ``AssentError/Code/cancelled``.
    func call(_ path: String, method: String = "POST", headers: [String: String] = [:], body: Data?) async throws
        -> Data
    {
        guard !Task.isCancelled else { throw AssentError(.cancelled, "The call was cancelled.") }
        guard let url = URL(string: path, relativeTo: serverURL) else {
            throw AssentError(.invalidInput, "The server URL cannot take the path \(path).")
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        let status: Int
        let data: Data
        do {
            (status, data) = try await transport.send(request)
        } catch {
            if Task.isCancelled || Self.isCancellation(error) {
                throw AssentError(.cancelled, "The call was cancelled.", underlying: SendableError(error))
            }
            throw AssentError.wrap(error, .network, "Cannot reach \(serverURL.absoluteString).")
        }
        guard (200..<300).contains(status) else { throw Self.serverError(status: status, body: data) }
        return data
    }

    static func isCancellation(_ error: any Error) -> Bool {
        if error is CancellationError { return true }
        if let error = error as? URLError, error.code == .cancelled { return true }
        return false
    }

    static func serverError(status: Int, body: Data) -> AssentError {
        guard let envelope = try? decoder.decode(ErrorEnvelope.self, from: body) else {
            return AssentError(.server, "The server answered HTTP \(status).", httpStatus: status)
        }
        let payload = envelope.responseObject
        let code: AssentError.Code =
            switch MobileTokenErrorCode(rawValue: payload.code) {
            case .operationExpired: .operationExpired
            case .operationAlreadyFinished, .operationAlreadyCanceled, .operationAlreadyFailed: .operationFinished
            case .operationFailed: .operationFailed
            case .operationDataMismatch: .operationDataMismatch
            case .pinExpired: .pinExpired
            case .proximityCheckMissing: .proximityCheckMissing
            case .proximityCheckFailed: .proximityCheckFailed
            case .numberMissing: .numberMissing
            case .numberMismatch: .numberMismatch
            default: .server
            }
        return AssentError(code, payload.message, serverCode: payload.code, httpStatus: status)
    }

    // MARK: Web Push

    /// Makes new Web Push subscription keys, keeps them with the activation, and returns the public part.
    func newWebPushKeys() throws -> WebPushEncryption.Subscription {
        guard var current = state else { throw AssentError(.notActivated, "This device is not activated.") }
        let key = ECPrivateKey()
        let secret = Bytes.random(count: 16)
        current.webPushPrivateKey = key.scalar
        current.webPushAuthSecret = secret
        try save(current)
        return try WebPushEncryption.Subscription(publicKey: key.publicKey, authSecret: secret)
    }

    /// Decrypts a Web Push body with the kept subscription keys.
    func decryptWebPush(_ body: Data) throws -> Data {
        guard let scalar = state?.webPushPrivateKey, let secret = state?.webPushAuthSecret else {
            throw AssentError(.notActivated, "This device has not registered for Web Push.")
        }
        do {
            return try WebPushEncryption.decrypt(body, privateKey: try ECPrivateKey(scalar: scalar), authSecret: secret)
        } catch {
            throw AssentError.wrap(
                error, .invalidInput, "The push message cannot be decrypted with this device's keys.")
        }
    }

    // MARK: State

    func save(_ newState: DeviceState) throws {
        try keystore.save(try Self.encoder.encode(newState))
        state = newState
    }

    static var now: UInt64 { UInt64(max(0, Date().timeIntervalSince1970 * 1000)) }

    static var platform: String {
        #if os(iOS)
            "ios"
        #elseif os(macOS)
            "macos"
        #elseif os(Linux)
            "linux"
        #else
            "unknown"
        #endif
    }
}

/// Keys and counter between the key exchange and the PIN.
struct PendingActivation: Sendable {
    var activationId: String
    var devicePrivateKey: ECPrivateKey
    var serverPublicKey: ECPublicKey
    var keys: ActivationKeys
    var counter: HashCounter
    var fingerprint: String
}

/// What the keystore holds for an activation. The knowledge key is only stored encrypted under the PIN, the device
/// private key only under the vault key (which never stays on the device), the biometry key only in the
/// ``BiometryProvider``.
struct DeviceState: Codable, Sendable {
    var activationId: String
    var serverPublicKey: Data
    var possessionKey: Data
    /// `nil` for an activation with the device alone.
    var protectedKnowledgeKey: Data?
    var knowledgeSalt: Data?
    var transportKey: Data
    var vaultProtectedDevicePrivateKey: Data
    var biometryEnabled: Bool
    var counter: Data
    var fingerprint: String
    var tokenId: String?
    var tokenSecret: Data?
    /// The Web Push subscription's private key (P-256 scalar) and authentication secret, once registered.
    var webPushPrivateKey: Data?
    var webPushAuthSecret: Data?
}
