import AssentCrypto
import AssentModel
import Foundation

/// The operator's side of login accounts: create and remove accounts, add e-mail factors, remove factors, list and
/// revoke remembered devices. The person's own side (registering factors, signing in) is ``TFAService``.
public struct TFAAccountService: Sendable {
    /// The part of the store this sees.
    let store: any TFAStore & RateLimitStore
    let clock: WallClock
    let audit: Auditor
    let tfa: TFASettings
    let grants: GrantRevocation

    /// An account with its active factors.
    public struct Account: Sendable {
        public var record: TFAAccountRecord
        public var factors: [TFAFactorRecord]
    }

    /// Creates the account `userId` in `application`, with an optional password and up to ten e-mail addresses.
    public func create(
        userId: String, password: String?, emails: [String], name: String? = nil, in application: ApplicationRecord,
        actor: String
    ) async throws -> Account {
        let displayName = try name.map(Self.displayName)
        // Lengths in Unicode scalars, as the OpenAPI document's JSON Schema counts them.
        guard UserID.isValid(userId) else { throw AssentServerError.invalidRequest(UserID.requirement) }
        if let password, !(8...PasswordHasher.maxLength).contains(password.unicodeScalars.count) {
            throw AssentServerError.invalidRequest("A password is 8 to \(PasswordHasher.maxLength) characters.")
        }
        guard emails.count <= 10, emails.allSatisfy(SMTPClient.isAddress) else {
            throw AssentServerError.invalidRequest("emails are at most 10 plain addresses (name@example.com).")
        }
        var hash: String?
        if let password { hash = try await tfa.passwordHasher.hash(password) }
        let account = TFAAccountRecord(
            applicationId: application.id, userId: userId, passwordHash: hash, createdAt: clock.millis,
            displayName: displayName)
        guard try await store.insertTFAAccount(account) else {
            throw AssentServerError.accountExists(userId)
        }
        // A millisecond apart, so that listings (ordered by creation) keep the order given.
        for (index, email) in emails.enumerated() {
            try await insertEmail(email, to: account, at: clock.millis + Millis(index))
        }
        await audit(
            .tfaAccountCreated, userId: userId, application: application.id, actor: actor, "Login account created.")
        return try await withFactors(account)
    }

    /// Sets the account's display name (an empty one removes it).
    public func rename(userId: String, name: String, in application: ApplicationRecord, actor: String) async throws
        -> Account
    {
        let displayName = name.isEmpty ? nil : try Self.displayName(name)
        guard try await store.setTFAAccountName(applicationId: application.id, userId: userId, name: displayName) else {
            throw AssentServerError.notFound("No login account has user id \(userId).")
        }
        await audit(
            .tfaAccountRenamed, userId: userId, application: application.id, actor: actor,
            displayName == nil ? "Display name removed." : "Display name set.")
        return try await get(userId: userId, in: application)
    }

    /// A display name as given, without surrounding spaces: 1 to 100 characters, not only spaces.
    static func displayName(_ name: String) throws -> String {
        guard let valid = InputText.displayName(name) else {
            throw AssentServerError.invalidRequest("A display name has 1 to 100 characters, not only spaces.")
        }
        return valid
    }

    /// The account `userId` of `application` with its active factors, or `nil` when there is none.
    func find(userId: String, in application: ApplicationRecord) async throws -> Account? {
        guard let record = try await store.tfaAccount(applicationId: application.id, userId: userId) else { return nil }
        return try await withFactors(record)
    }

    /// The account `userId` of `application` with its active factors, or `NOT_FOUND`.
    public func get(userId: String, in application: ApplicationRecord) async throws -> Account {
        try await withFactors(try await record(userId: userId, in: application))
    }

    /// Removes the account with its factors and remembered devices.
    /// The language the account's owner chose on `/account`; `nil` when they left it to their browser (or there is no
    /// such account).
    func language(userId: String, applicationId: String) async throws -> String? {
        try await store.tfaAccount(applicationId: applicationId, userId: userId)?.language
    }

    public func delete(userId: String, in application: ApplicationRecord, actor: String) async throws {
        let account = try await record(userId: userId, in: application)
        _ = try await store.deleteTFAAccount(applicationId: account.applicationId, userId: account.userId)
        await audit(
            .tfaAccountRemoved, userId: account.userId, application: application.id, actor: actor,
            "Login account removed with its factors and remembered devices.")
        try await grants.revokeAll(
            applicationId: application.id, userId: account.userId, because: .accountRemoved, actor: actor)
    }

    /// Signs the person out everywhere: every refresh and access token at the application's clients, every
    /// single-sign-on session (back-channel logouts queued) and every browser session signed in as them.
    /// - Throws: `NOT_FOUND` when the application has no such account.
    public func signOutEverywhere(userId: String, in application: ApplicationRecord, actor: String) async throws
        -> (refreshTokens: Int, sessions: Int)
    {
        let account = try await record(userId: userId, in: application)
        return try await grants.revokeAll(
            applicationId: application.id, userId: account.userId, because: .signedOutEverywhere, actor: actor)
    }

    /// Disables the account (no sign-in; every grant, single-sign-on and browser session ended) or enables it again.
    /// Changing nothing (disabling a disabled account) is not audited again.
    /// - Throws: `NOT_FOUND` when the application has no such account.
    public func setDisabled(_ disabled: Bool, userId: String, in application: ApplicationRecord, actor: String)
        async throws
    {
        let account = try await record(userId: userId, in: application)
        guard (account.disabledAt != nil) != disabled else { return }
        _ = try await store.setTFAAccountDisabled(
            applicationId: application.id, userId: account.userId, disabledAt: disabled ? clock.millis : nil)
        await audit(
            disabled ? .tfaAccountDisabled : .tfaAccountEnabled, userId: account.userId, application: application.id,
            actor: actor, disabled ? "Login account disabled." : "Login account enabled.")
        if disabled {
            try await grants.revokeAll(
                applicationId: application.id, userId: account.userId, because: .accountDisabled, actor: actor)
        }
    }

    /// Adds an e-mail factor, active at once (the operator vouches for the address).
    public func addEmail(_ email: String, userId: String, in application: ApplicationRecord, actor: String)
        async throws -> TFAFactorRecord
    {
        guard SMTPClient.isAddress(email) else {
            throw AssentServerError.invalidRequest("email is a plain address (name@example.com).")
        }
        let account = try await record(userId: userId, in: application)
        let factor = try await insertEmail(email, to: account, at: clock.millis)
        await audit(
            .tfaEmailAdded, userId: account.userId, application: application.id, actor: actor,
            "E-mail factor \(factor.id) added.")
        return factor
    }

    /// Removes the account's factor `id`.
    public func removeFactor(id: String, userId: String, in application: ApplicationRecord, actor: String)
        async throws
    {
        let account = try await record(userId: userId, in: application)
        guard
            try await store.deleteTFAFactor(
                id: id, applicationId: account.applicationId, userId: account.userId)
        else { throw AssentServerError.notFound("The account has no factor with id \(id).") }
        await audit(
            .tfaFactorRemoved, userId: account.userId, application: application.id, actor: actor,
            "Factor \(id) removed.")
    }

    /// The user's remembered devices, revoked ones included.
    public func rememberedDevices(userId: String, in application: ApplicationRecord) async throws
        -> [RememberedDeviceRecord]
    {
        try await store.rememberedDevices(applicationId: application.id, userId: userId)
    }

    /// Revokes a remembered device of `application`; revoking one twice is no error.
    public func revokeDevice(id: String, in application: ApplicationRecord, actor: String) async throws {
        guard let device = try await store.rememberedDevice(id: id), device.applicationId == application.id
        else { throw AssentServerError.notFound("No remembered device has id \(id).") }
        if try await store.revokeRememberedDevice(id: id, at: clock.millis) {
            await audit(
                .tfaDeviceRevoked, userId: device.userId, application: application.id, actor: actor,
                "Device \(id) revoked.")
        }
    }

    /// The wrong passwords counted against the account from every address in the open window, and when it ends;
    /// `nil` when none are counted.
    public func signInFailures(userId: String, in application: ApplicationRecord) async throws
        -> (count: Int, until: Millis)?
    {
        try await store.rateLimit(
            key: "\(Self.failureScope):\(application.id):\(userId)", now: clock.millis
        ).map { ($0.count, $0.windowEnd) }
    }

    /// Clears the account's wrong-password counters — from every address and per address — so that a person an
    /// operator has identified signs in at once; audited. Returns how many counters there were.
    @discardableResult
    public func unlock(userId: String, in application: ApplicationRecord, actor: String) async throws -> Int {
        let account = try await record(userId: userId, in: application)
        let key = "\(application.id):\(account.userId)"
        let cleared = try await store.clearRateLimits(
            key: "\(Self.failureScope):\(key)", prefix: "\(Self.failureScope)-address:\(key)|")
        await audit(
            .tfaAccountUnlocked, userId: account.userId, application: application.id, actor: actor,
            "Wrong-password counters cleared (\(cleared)).")
        return cleared
    }

    /// The rate limiter's scope of wrong passwords per login account (``RateLimiter/checkAccount``).
    static let failureScope = "login.user"

    private func record(userId: String, in application: ApplicationRecord) async throws -> TFAAccountRecord {
        guard let account = try await store.tfaAccount(applicationId: application.id, userId: userId)
        else { throw AssentServerError.notFound("No login account has user id \(userId).") }
        return account
    }

    private func withFactors(_ account: TFAAccountRecord) async throws -> Account {
        let factors = try await store.tfaFactors(
            applicationId: account.applicationId, userId: account.userId)
        return Account(record: account, factors: factors.filter { $0.state == .active })
    }

    @discardableResult
    private func insertEmail(_ email: String, to account: TFAAccountRecord, at createdAt: Millis) async throws
        -> TFAFactorRecord
    {
        let factor = TFAFactorRecord(
            id: TFATokens.id(), applicationId: account.applicationId, userId: account.userId, provider: .email,
            state: .active, destination: email, createdAt: createdAt)
        try await store.insertTFAFactor(factor)
        return factor
    }
}
