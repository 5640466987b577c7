import AssentCrypto
import AssentModel
import Foundation

/// Keeps the biometry key behind the platform's biometric check. The SDK hands it the key when biometry is added
/// and asks for it back, with a prompt, whenever the user approves with biometry.
///
/// On Apple platforms use ``LocalAuthenticationBiometryProvider``. Linux has no biometry; an app that has its own
/// (e.g. a hardware reader) implements this protocol, and tests use ``SimulatedBiometryProvider``.
public protocol BiometryProvider: Sendable {
    /// Whether biometry can be used now (hardware present and a finger or face enrolled).
    var isAvailable: Bool { get async }
    /// Stores `key` for `account` so that it is released only after a successful biometric check, replacing any
    /// earlier key of that account.
    func store(_ key: Data, account: String) async throws
    /// Asks the user for biometry, showing `prompt`, and returns the key stored for `account`. Throws
    /// `CancellationError` when the user cancels.
    func retrieve(account: String, prompt: String) async throws -> Data
    /// Deletes the key of `account` (nothing happens when there is none).
    func delete(account: String) async throws
}

extension AssentClient {
    static func biometryAccount(_ activationId: String) -> String { "assent.biometry.\(activationId)" }

    /// The biometry provider, if this device has one and the server accepts biometry.
    func availableBiometry() async throws -> any BiometryProvider {
        guard let biometry else { throw AssentError(.factorUnavailable, "This client has no biometry provider.") }
        guard try await offeredMethods().contains(.biometry) else {
            throw AssentError(.factorUnavailable, "Biometry is not available here or not enabled on the server.")
        }
        return biometry
    }

    func storeBiometryKey(_ key: Data, activationId: String, in biometry: any BiometryProvider) async throws {
        do {
            try await biometry.store(key, account: Self.biometryAccount(activationId))
        } catch {
            throw AssentError.wrap(error, .biometryFailed, "The biometry key cannot be stored.")
        }
    }

    /// Adds biometry to an activation that has a PIN: the vault unlock (signed with the PIN) returns the vault key,
    /// which decrypts the device private key; the biometry key is derived again from the shared secret and handed to
    /// the ``BiometryProvider``. A wrong PIN throws ``AssentError/Code/wrongPIN`` with the attempts left.
    public func addBiometry(pin: String) async throws {
        guard let current = state else { throw AssentError(.notActivated, "This device is not activated.") }
        guard current.protectedKnowledgeKey != nil else {
            throw AssentError(
                .factorUnavailable, "A device-only activation cannot add biometry: one factor cannot add a second.")
        }
        // Checked before the vault unlock, which costs a signature.
        let biometry = try await availableBiometry()
        let vaultKey = try await unlockVault(factor: .pin(pin), reason: "ADD_BIOMETRY")
        let biometryKey: Data
        do {
            let devicePrivateKey = try DevicePrivateKeyVault.unprotect(
                current.vaultProtectedDevicePrivateKey, vaultKey: vaultKey)
            let keys = try ActivationKeys(
                masterSecret: try KeyDerivation.masterSecret(
                    privateKey: devicePrivateKey, publicKey: try ECPublicKey(x963: current.serverPublicKey)))
            biometryKey = keys.biometry
        } catch {
            throw AssentError.wrap(error, .keystore, "The stored device key does not open with the vault key.")
        }
        try await storeBiometryKey(biometryKey, activationId: current.activationId, in: biometry)
        guard var latest = state, latest.activationId == current.activationId else {
            throw AssentError(.notActivated, "The activation was removed meanwhile.")
        }
        latest.biometryEnabled = true
        try save(latest)
    }

    /// Removes biometry from this activation: the key is deleted from the ``BiometryProvider`` and biometry
    /// approvals stop. The device and the PIN stay (the device method itself can never be removed this way).
    public func removeBiometry() async throws {
        guard let current = state else { throw AssentError(.notActivated, "This device is not activated.") }
        guard current.biometryEnabled else { return }
        if let biometry {
            do {
                try await biometry.delete(account: Self.biometryAccount(current.activationId))
            } catch {
                throw AssentError.wrap(error, .biometryFailed, "The biometry key cannot be deleted.")
            }
        }
        // The state may have moved (a signature) while the key was deleted: change the latest one.
        guard var latest = state, latest.activationId == current.activationId else { return }
        latest.biometryEnabled = false
        try save(latest)
    }

    /// Changes the PIN: the new PIN is checked against ``pinPolicy``, the old one by the server (a signed
    /// `/pa/v3/signature/validate`, so a wrong old PIN counts like any wrong PIN), then the knowledge key is
    /// encrypted again under the new PIN with a new salt. The server never sees either PIN.
    public func changePIN(from oldPIN: String, to newPIN: String) async throws {
        try pinPolicy.validate(newPIN)
        _ = try await signedCall(
            "/pa/v3/signature/validate", uriId: "/pa/signature/validate", body: Data("{}".utf8),
            factor: .pin(oldPIN))
        guard var current = state, let protected = current.protectedKnowledgeKey, let salt = current.knowledgeSalt
        else {
            throw AssentError(.factorUnavailable, "This activation has no PIN.")
        }
        let knowledge = try KnowledgeKeyProtection.unprotect(protected, password: Data(oldPIN.utf8), salt: salt)
        let newSalt = KnowledgeKeyProtection.makeSalt()
        current.protectedKnowledgeKey = try KnowledgeKeyProtection.protect(
            knowledgeKey: knowledge, password: Data(newPIN.utf8), salt: newSalt)
        current.knowledgeSalt = newSalt
        try save(current)
        try await confirmPINChange(pin: newPIN)
    }

    /// Tells the server the PIN changed, signed with the new PIN, which restarts the PIN's age under the server's
    /// maximum PIN age. ``changePIN(from:to:)`` calls it; call it again if that call failed after the local change
    /// (the error says so).
    public func confirmPINChange(pin: String) async throws {
        do {
            _ = try await signedCall(
                "/api/device/pin/changed", uriId: "/pin/changed", body: Data("{}".utf8), factor: .pin(pin))
        } catch var error as AssentError {
            error.message =
                "The PIN was changed on this device, but the server could not be told (\(error.message)); "
                + "call confirmPINChange(pin:) again."
            throw error
        }
    }

    /// The vault key, delivered encrypted under the transport key by a two-factor `/pa/v3/vault/unlock`.
    func unlockVault(factor: AuthenticationFactor, reason: String) async throws -> Data {
        let response = try await encryptedSignedCall(
            "/pa/v3/vault/unlock", uriId: "/pa/vault/unlock", sharedInfo1: .vaultUnlock,
            plaintext: try Self.encoder.encode(VaultUnlockRequest(reason: reason)), factor: factor,
            as: VaultUnlockResponse.self)
        guard let current = state else { throw AssentError(.notActivated, "This device is not activated.") }
        do {
            return try VaultKeyTransport.decrypt(
                try Bytes.base64(response.encryptedVaultEncryptionKey, field: "vault key"),
                transportKey: current.transportKey)
        } catch {
            throw AssentError.wrap(error, .invalidResponse, "The vault key cannot be decrypted.")
        }
    }
}
