import AssentCrypto
import AssentModel
import Foundation

/// What a signed-in person may do with their own security on `/account`: see their factors, remembered browsers and
/// activated phones; add, rename and remove passkeys; make new backup codes; remove a factor (never the last one
/// that is not a backup code while the application requires a second factor); revoke a remembered browser; report
/// a phone lost; change the password. Every change goes through the services the operator API uses and is audited
/// with the person as the actor. The caller (the pages) has checked the fresh two-factor sign-in.
struct AccountService: Sendable {
    let environment: ServerEnvironment
    let accounts: TFAAccountService
    let passkeys: PasskeyService
    let backup: BackupCodeFactor
    let activations: ActivationService
    let operations: OperationService
    /// The part of the store this sees.
    var store: any TFAStore & PasskeyStore & BackupCodeStore & OperationStore & PushRegistrationStore {
        environment.store
    }

    init(environment: ServerEnvironment) {
        self.environment = environment
        accounts = TFAAccountService(environment: environment)
        passkeys = PasskeyService(environment: environment)
        backup = BackupCodeFactor(environment: environment)
        activations = ActivationService(environment: environment)
        operations = OperationService(environment: environment)
    }

    /// Everything the page lists.
    struct Overview: Sendable {
        var factors: [TFAFactorRecord]
        var passkeys: [PasskeyRecord]
        var backupCodesLeft: Int?
        var browsers: [RememberedDeviceRecord]
        var phones: [ActivationRecord]
    }

    func overview(_ application: ApplicationRecord, userId: String) async throws -> Overview {
        let factors = try await store.tfaFactors(applicationId: application.id, userId: userId)
            .filter { $0.state == .active }
        var left: Int?
        if let codes = factors.last(where: { $0.provider == .backup }) {
            left = try await store.backupCodesLeft(factorId: codes.id)
        }
        let now = environment.nowMillis
        return Overview(
            factors: factors, passkeys: try await store.passkeys(applicationId: application.id, userId: userId),
            backupCodesLeft: left,
            browsers: try await accounts.rememberedDevices(userId: userId, in: application).filter {
                $0.revokedAt == nil && $0.expiresAt > now
            },
            phones: try await activations.list(userId: userId).map(\.0).filter {
                $0.applicationId == application.id && [.active, .blocked].contains($0.state)
            })
    }

    func renamePasskey(_ application: ApplicationRecord, userId: String, factorId: String, name: String) async throws {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let valid = InputText.displayName(trimmed), valid.count <= 64 else {
            throw AssentServerError.invalidRequest("A passkey's name is 1 to 64 printable characters.")
        }
        guard
            try await store.renamePasskey(
                factorId: factorId, applicationId: application.id, userId: userId, name: valid)
        else { throw AssentServerError.notFound("You have no such passkey.") }
        await environment.audit(.passkeyRenamed, userId: userId, actor: "user", "Passkey \(factorId) renamed.")
    }

    /// Removes one of the person's factors, keeping at least one that is not a backup code when the application
    /// requires a second factor (backup codes alone would be the only way in).
    func removeFactor(_ application: ApplicationRecord, userId: String, factorId: String) async throws {
        let factors = try await store.tfaFactors(applicationId: application.id, userId: userId)
            .filter { $0.state == .active }
        guard let factor = factors.first(where: { $0.id == factorId }) else {
            throw AssentServerError.notFound("You have no such factor.")
        }
        let remaining = factors.filter { $0.id != factorId && $0.provider != .backup }
        if factor.provider != .backup, remaining.isEmpty,
            try await TFAService(environment: environment).policy(application.id).required
        {
            throw AssentServerError(
                .conflict, "This is your last second factor: add another one before you remove it.", status: 409)
        }
        try await accounts.removeFactor(id: factorId, userId: userId, in: application, actor: "user")
    }

    /// Revokes one of the person's own remembered browsers.
    func revokeBrowser(_ application: ApplicationRecord, userId: String, deviceId: String) async throws {
        let mine = try await accounts.rememberedDevices(userId: userId, in: application)
        guard mine.contains(where: { $0.id == deviceId }) else {
            throw AssentServerError.notFound("You have no such remembered browser.")
        }
        try await accounts.revokeDevice(id: deviceId, in: application, actor: "user")
    }

    /// "I lost this phone": the activation is blocked with reason `LOST`, the operations waiting for it are
    /// canceled, and its push registration is dropped, so nothing more reaches it.
    func lostPhone(_ application: ApplicationRecord, userId: String, activationId: String) async throws
        -> ActivationRecord
    {
        guard let activation = try await activations.find(id: activationId), activation.userId == userId,
            activation.applicationId == application.id
        else { throw AssentServerError.notFound("You have no such phone.") }
        let blocked =
            activation.state == .active
            ? try await activations.block(id: activationId, reason: "LOST", actor: "user") : activation
        let others = try await activations.active(userId: userId, applicationId: application.id)
        for operation in try await operations.list(userId: userId, status: .pending)
        where operation.devices?.contains(activationId) ?? others.isEmpty {
            _ = try? await operations.cancel(id: operation.id, reason: "DEVICE_LOST", actor: "user")
        }
        if let registration = try await store.pushRegistration(activationId: activationId) {
            _ = try await store.deletePushRegistration(
                activationId: activationId, registeredAt: registration.registeredAt)
        }
        await environment.audit(
            .activationLost, activation: blocked, actor: "user",
            "Reported lost: blocked, its waiting operations canceled, its push registration dropped.")
        return blocked
    }

    /// Changes the password after checking the current one (a wrong one counts like a failed login).
    func changePassword(
        _ application: ApplicationRecord, userId: String, current: String, new: String, address: String?
    ) async throws {
        guard (8...PasswordHasher.maxLength).contains(new.unicodeScalars.count) else {
            throw AssentServerError.invalidRequest("A new password is 8 to 1024 characters.")
        }
        let hasher = environment.tfa.passwordHasher
        let rules = environment.rateLimits
        let limiter = RateLimiter(environment: environment)
        let key = "\(application.id):\(userId)"
        try await limiter.check(rules.loginFailuresPerUser, "login.user", key)
        guard let stored = try await store.tfaAccount(applicationId: application.id, userId: userId)?.passwordHash,
            try await hasher.verify(current, against: stored)
        else {
            await limiter.recordFailure(rules.loginFailuresPerUser, "login.user", key)
            throw AssentServerError(.authenticationFailed, "The current password is wrong.", status: 400)
        }
        guard
            try await store.setTFAPassword(
                applicationId: application.id, userId: userId, hash: try await hasher.hash(new))
        else { throw AssentServerError.notFound("The account is gone.") }
        await environment.audit(.tfaPasswordChanged, userId: userId, actor: "user", "Password changed.")
    }
}
