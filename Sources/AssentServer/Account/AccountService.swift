import AssentCrypto
import AssentModel
import Foundation

/// What a signed-in person may do with their own security on `/account`: see their factors, remembered browsers and
/// activated phones; add, rename and remove passkeys; make new backup codes; remove a factor (never the last one
/// that is not a backup code while the application requires a second factor); revoke a remembered browser; report
/// a phone lost; change the password. Every change goes through the services the operator API uses and is audited
/// with the person as the actor. The caller (the pages) has checked the fresh two-factor sign-in.
struct AccountService: Sendable {
    /// The part of the store this sees.
    let store: any TFAStore & PasskeyStore & BackupCodeStore & OperationStore & PushRegistrationStore & NoticeStore
    let clock: WallClock
    let audit: Auditor
    let tfa: TFASettings
    let flows: TFAService
    let grants: GrantRevocation
    let applicationLimits: ApplicationRateLimitService
    let limiter: RateLimiter
    let accounts: TFAAccountService
    let passkeys: PasskeyService
    let backup: BackupCodeFactor
    let activations: ActivationService
    let operations: OperationService
    let notices: AccountNotices
    let approvers: BrowserApprovers

    /// Everything the page lists.
    struct Overview: Sendable {
        var factors: [TFAFactorRecord]
        var passkeys: [PasskeyRecord]
        var backupCodesLeft: Int?
        var browsers: [RememberedDeviceRecord]
        var phones: [ActivationRecord]
        /// The language the person chose; `nil` follows the browser.
        var language: String?
    }

    func overview(_ application: ApplicationRecord, userId: String) async throws -> Overview {
        let factors = try await store.tfaFactors(applicationId: application.id, userId: userId)
            .filter { $0.state == .active }
        var left: Int?
        if let codes = factors.last(where: { $0.provider == .backup }) {
            left = try await store.backupCodesLeft(factorId: codes.id)
        }
        let now = clock.millis
        return Overview(
            factors: factors, passkeys: try await store.passkeys(applicationId: application.id, userId: userId),
            backupCodesLeft: left,
            browsers: try await accounts.rememberedDevices(userId: userId, in: application).filter {
                $0.revokedAt == nil && $0.expiresAt > now
            },
            phones: try await activations.all(userId: userId).filter {
                $0.applicationId == application.id && [.active, .blocked].contains($0.state)
            },
            language: try await store.tfaAccount(applicationId: application.id, userId: userId)?.language)
    }

    /// Sets the language of the person's pages and mail (one of ``Languages/supported``), or with `nil` lets their
    /// browser choose again.
    func setLanguage(_ application: ApplicationRecord, userId: String, language: String?) async throws {
        if let language, !Languages.supported.contains(language) {
            throw AssentServerError.invalidRequest("Choose one of the languages shown.")
        }
        guard try await store.setTFAAccountLanguage(applicationId: application.id, userId: userId, language: language)
        else { throw AssentServerError.notFound("The account is gone.") }
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
        await audit(
            .passkeyRenamed, userId: userId, application: application.id, actor: "user", "Passkey \(factorId) renamed.")
    }

    /// Adds a passkey the person just made on the page.
    func addPasskey(
        _ application: ApplicationRecord, userId: String, credential: RegistrationCredential, name: String?
    ) async throws {
        _ = try await passkeys.register(application, userId: userId, credential: credential, name: name)
        let label =
            try await store.tfaFactors(applicationId: application.id, userId: userId)
            .last { $0.provider == .passkey }?.destination ?? "Passkey"
        await notices.send(
            application, userId: userId, subject: "A passkey was added", what: "A passkey named “{{label}}” was added",
            values: ["label": label])
    }

    /// New backup codes; the old ones stop working.
    func newBackupCodes(_ application: ApplicationRecord, userId: String) async throws -> [String] {
        let codes = try await backup.generate(applicationId: application.id, userId: userId, actor: "user")
        await notices.send(
            application, userId: userId, subject: "New backup codes",
            what: "New backup codes were made, and the previous ones stopped working")
        return codes
    }

    /// Removes one of the person's factors, keeping at least one that is not a backup code when the application
    /// requires a second factor (backup codes alone would be the only way in).
    func removeFactor(_ application: ApplicationRecord, userId: String, factorId: String) async throws {
        let factors = try await store.tfaFactors(applicationId: application.id, userId: userId)
            .filter { $0.state == .active }
        guard let factor = factors.first(where: { $0.id == factorId }) else {
            throw AssentServerError.notFound("You have no such factor.")
        }
        // A browser approves with a passkey: it is no second factor of its own.
        let remaining = factors.filter {
            $0.id != factorId && $0.provider != .backup && !BrowserApprovers.isBrowser($0)
        }
        if factor.provider != .backup, remaining.isEmpty,
            try await flows.policy(application.id).required
        {
            throw AssentServerError(
                .conflict, "This is your last second factor: add another one before you remove it.", status: 409)
        }
        try await accounts.removeFactor(id: factorId, userId: userId, in: application, actor: "user")
        let (what, values): (String, [String: String]) =
            switch factor.provider {
            case .passkey: ("The passkey “{{name}}” was removed", ["name": factor.destination ?? "Passkey"])
            case .push where BrowserApprovers.isBrowser(factor):
                (
                    "A browser ({{browser}}) no longer gets your sign-in requests",
                    ["browser": BrowserApprovers.subscription(of: factor)?.label ?? "browser"]
                )
            case .totp: ("The authenticator app was removed as a second factor", [:])
            case .backup: ("Your backup codes were removed", [:])
            default: ("A second factor ({{provider}}) was removed", ["provider": factor.provider.rawValue])
            }
        await notices.send(
            application, userId: userId, subject: "A second factor was removed", what: what, values: values)
    }

    /// Revokes one of the person's own remembered browsers.
    func revokeBrowser(_ application: ApplicationRecord, userId: String, deviceId: String) async throws {
        let mine = try await accounts.rememberedDevices(userId: userId, in: application)
        guard mine.contains(where: { $0.id == deviceId }) else {
            throw AssentServerError.notFound("You have no such remembered browser.")
        }
        try await accounts.revokeDevice(id: deviceId, in: application, actor: "user")
        await notices.send(
            application, userId: userId, subject: "A remembered browser was forgotten",
            what: "A remembered browser was forgotten: it will ask for a second factor again")
    }

    /// "I lost this phone": the activation is blocked with reason `LOST`, the operations waiting for it are
    /// canceled, it no longer approves sign-ins, and its push registration is dropped, so nothing more reaches it;
    /// whatever the phone may have signed in to ends too (``GrantRevocation``), but the page session `keeping`.
    func lostPhone(_ application: ApplicationRecord, userId: String, activationId: String, keeping: Data? = nil)
        async throws -> ActivationRecord
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
        // It approves no sign-ins any more either.
        for factor in try await store.tfaFactors(applicationId: application.id, userId: userId)
        where factor.provider == .push && factor.destination == activationId {
            _ = try await store.deleteTFAFactor(id: factor.id, applicationId: application.id, userId: userId)
        }
        if let registration = try await store.pushRegistration(activationId: activationId) {
            _ = try await store.deletePushRegistration(
                activationId: activationId, registeredAt: registration.registeredAt)
        }
        await audit(
            .activationLost, activation: blocked, actor: "user",
            "Reported lost: blocked, its waiting operations canceled, its push registration dropped.")
        try await grants.revokeAll(
            applicationId: application.id, userId: userId, because: .phoneLost, actor: "user:\(userId)",
            keeping: keeping)
        await notices.send(
            application, userId: userId, subject: "Your phone was blocked",
            what: "Your phone {{device}} was reported lost and blocked: it can no longer approve anything",
            values: ["device": blocked.deviceLabel])
        return blocked
    }

    /// "Add a new phone": an activation for the person, committed as soon as the phone completes it (the person
    /// just passed two factors, so no operator compares fingerprints), opted in to approve sign-ins where the
    /// application takes push approval; its QR code is shown on the page.
    func newPhone(_ application: ApplicationRecord, userId: String) async throws -> ActivationRecord {
        let created = try await activations.create(
            application: application, userId: userId, commitMode: .auto, actor: "user")
        // It approves sign-ins too, where the application takes push approval.
        if try await flows.policy(application.id).providers.contains(.push) {
            let now = clock.millis
            try await store.insertTFAFactor(
                TFAFactorRecord(
                    id: TFATokens.id(), applicationId: application.id, userId: userId, provider: .push, state: .active,
                    destination: created.activation.id, createdAt: now, lastVerifiedAt: now))
        }
        await notices.send(
            application, userId: userId, subject: "A new phone is being added",
            what: "An activation code for a new phone was made on your account's security page")
        return created.activation
    }

    /// The QR text of the new phone's activation while no phone has used it.
    func newPhoneQR(_ activationId: String, userId: String) async throws -> String? {
        guard let activation = try await activations.find(id: activationId), activation.userId == userId else {
            return nil
        }
        return try await activations.pendingQRText(id: activation.id)
    }

    /// Changes the password after checking the current one (a wrong one counts like a failed login), and ends every
    /// grant of the old one (``GrantRevocation``) but the page session `keeping`.
    func changePassword(
        _ application: ApplicationRecord, userId: String, current: String, new: String, address: String?,
        keeping: Data? = nil
    ) async throws {
        guard (8...PasswordHasher.maxLength).contains(new.unicodeScalars.count) else {
            throw AssentServerError.invalidRequest("A new password is 8 to 1024 characters.")
        }
        let hasher = tfa.passwordHasher
        let rules = try await applicationLimits.rules(application.id)
        let key = "\(application.id):\(userId)"
        try await limiter.checkAccount(
            rules.loginFailuresPerUser, rules.loginFailuresPerUserAndAddress, TFAAccountService.failureScope,
            account: key,
            address: address)
        guard let stored = try await store.tfaAccount(applicationId: application.id, userId: userId)?.passwordHash,
            try await hasher.verify(current, against: stored)
        else {
            await limiter.recordAccountFailure(
                rules.loginFailuresPerUser, rules.loginFailuresPerUserAndAddress, TFAAccountService.failureScope,
                account: key,
                address: address)
            throw AssentServerError(.authenticationFailed, "The current password is wrong.", status: 400)
        }
        guard
            try await store.setTFAPassword(
                applicationId: application.id, userId: userId, hash: try await hasher.hash(new))
        else { throw AssentServerError.notFound("The account is gone.") }
        await audit(
            .tfaPasswordChanged, userId: userId, application: application.id, actor: "user", "Password changed.")
        try await grants.revokeAll(
            applicationId: application.id, userId: userId, because: .passwordChanged, actor: "user:\(userId)",
            keeping: keeping)
        await notices.send(
            application, userId: userId, subject: "Your password was changed", what: "Your password was changed")
    }
}
