import AssentCrypto
import AssentModel
import Crypto
import Foundation

/// Operator accounts: named people who sign in to the console with a password and Assent's own TOTP, each with a
/// role (``OperatorRole``: a set of the operator API's scopes), optionally limited to some applications. An operator
/// is made with a one-time set-up link (24 hours) that shows the TOTP secret and takes the password and a first code;
/// `reset` opens a new link (new secret, no password) for one who lost either. The first start makes the admin
/// `admin` and prints its link. Every change is audited with who made it.
struct OperatorService: Sendable {
    /// The part of the store this sees.
    let store: any OperatorStore & OperatorPasskeyStore & ApplicationStore & WebStore
    let clock: WallClock
    let audit: Auditor
    let openID: OpenIDSettings
    let tfa: TFASettings
    let limiter: RateLimiter
    var hasher: PasswordHasher { tfa.passwordHasher }

    /// How long a set-up link stays open.
    static let setupLifetime: Millis = 24 * 3_600_000
    /// What authenticator apps show as the issuer.
    static let issuer = "Assent console"

    // MARK: Managing

    /// A new operator and its set-up link.
    func create(name: String, role: OperatorRole, applications: [String]?, actor: String) async throws
        -> (OperatorRecord, link: String)
    {
        guard Self.isName(name) else {
            throw AssentServerError.invalidRequest(
                "An operator's name is 1 to 64 letters, digits, dots, dashes, underscores or @.")
        }
        if let applications {
            guard !applications.isEmpty else {
                throw AssentServerError.invalidRequest("Name at least one application, or none for every one.")
            }
            for id in applications where try await store.application(id: id) == nil {
                throw AssentServerError.notFound("No application has the id \(id).")
            }
        }
        let token = TFATokens.bearer()
        let now = clock.millis
        let record = OperatorRecord(
            id: TFATokens.id(), name: name, role: role, applications: applications, totpSecret: Bytes.random(count: 20),
            setupTokenHash: token.hash, setupExpiresAt: now + Self.setupLifetime, createdAt: now)
        guard try await store.insertOperator(record) else {
            throw AssentServerError(.conflict, "An operator is already named \(name).", status: 409)
        }
        await audit(
            .operatorCreated, actor: actor,
            "Operator \(name) created with role \(role.rawValue)"
                + (applications.map { " for applications \($0.joined(separator: ", "))" } ?? "") + ".")
        return (record, link(token.value))
    }

    func all() async throws -> [OperatorRecord] { try await store.operators() }

    /// The operator a session names by id, if it still exists.
    func record(id: String) async throws -> OperatorRecord? { try await store.operatorRecord(id: id) }

    /// The operator of this name, if there is one.
    func record(name: String) async throws -> OperatorRecord? { try await store.operatorRecord(name: name) }

    func named(_ name: String) async throws -> OperatorRecord {
        guard let record = try await store.operatorRecord(name: name) else {
            throw AssentServerError.notFound("No operator is named \(name).")
        }
        return record
    }

    /// Disables (or enables again) an operator: a disabled one cannot sign in, and its console sessions end at their
    /// next page.
    /// - Throws: `ERR_CONFLICT` for the last enabled admin who can sign in.
    func setDisabled(_ name: String, _ disabled: Bool, actor: String) async throws -> OperatorRecord {
        let record = try await named(name)
        guard try await store.setOperatorDisabled(id: record.id, at: disabled ? clock.millis : nil) else {
            throw Self.lastAdmin(name)
        }
        if disabled {
            _ = try await store.deleteWebSessions(owner: Self.sessionOwner(record.id), except: nil)
        }
        await audit(
            disabled ? .operatorDisabled : .operatorEnabled, actor: actor,
            "Operator \(name) \(disabled ? "disabled" : "enabled").")
        return try await named(name)
    }

    /// A new set-up link for an operator: a new TOTP secret, the password, passkeys and linked phone cleared (the old
    /// ones stop working now).
    /// - Throws: `ERR_CONFLICT` for one's own account (`actor` is `operator:<name>`: the session would end before the
    ///   link is seen) and for the last enabled admin who can sign in.
    func reset(_ name: String, actor: String) async throws -> (OperatorRecord, link: String) {
        guard actor != "operator:\(name)" else {
            throw AssentServerError(
                .conflict,
                "You cannot give yourself a new set-up link: it would end your session before you saw it. Change "
                    + "your password on Your account, or ask another admin.", status: 409)
        }
        let record = try await named(name)
        let token = TFATokens.bearer()
        guard
            try await store.resetOperator(
                id: record.id, tokenHash: token.hash, expiresAt: clock.millis + Self.setupLifetime,
                totpSecret: Bytes.random(count: 20))
        else { throw Self.lastAdmin(name) }
        // Its passkeys go too: the account is set up anew from nothing; and every console session of it ends (else
        // a session taken before the reset would work again once the account is set up anew).
        _ = try await store.deleteOperatorPasskeys(operatorId: record.id)
        _ = try await store.deleteWebSessions(owner: Self.sessionOwner(record.id), except: nil)
        await audit(
            .operatorReset, actor: actor,
            "Operator \(name) reset: a new set-up link, the password, TOTP, passkeys and linked phone cleared.")
        return (try await named(name), link(token.value))
    }

    /// The owner an operator's console sessions are kept under.
    static func sessionOwner(_ operatorId: String) -> String { "operator:\(operatorId)" }

    /// The refusal to disable or reset the last admin who can sign in.
    static func lastAdmin(_ name: String) -> AssentServerError {
        AssentServerError(
            .conflict,
            "\(name) is the last enabled admin for every application who can sign in: make another admin, and let "
                + "them set up their account, first.", status: 409)
    }

    /// The path of a set-up link for the first admin (printed once the server knows the address it listens at)
    /// while no admin for every application has set up: on the very first start `admin` is made; on a later one
    /// the earliest pending admin gets a new link (the one printed before stops working: it may have been lost with
    /// its terminal, or expired). `nil` once an admin has set up.
    func ensureFirstAdmin() async throws -> String? {
        let accounts = try await store.operators()
        let link: String
        if accounts.isEmpty {
            link = try await create(name: "admin", role: .admin, applications: nil, actor: "system").link
        } else {
            let admins = accounts.filter { $0.role == .admin && $0.applications == nil && $0.disabledAt == nil }
            guard !admins.contains(where: \.isSetUp),
                let pending = admins.min(by: { $0.createdAt < $1.createdAt })
            else { return nil }
            link = try await reset(pending.name, actor: "system").link
        }
        return String(link.dropFirst(openID.base.count))
    }

    // MARK: Set-up and sign-in

    /// The operator whose open set-up link `token` is, and the `otpauth://` URI of its TOTP secret.
    func setup(token: String) async throws -> (OperatorRecord, uri: String)? {
        guard token.utf8.count <= 128,
            let record = try await store.operatorRecord(setupTokenHash: TFATokens.hash(token)),
            let expires = record.setupExpiresAt, expires > clock.millis, record.disabledAt == nil,
            let secret = record.totpSecret
        else { return nil }
        let uri = OTPKeyURI(issuer: Self.issuer, account: record.name, secret: secret).text
        return (record, uri)
    }

    /// Completes a set-up: the password (the accounts' rules) and a code of the secret the link showed.
    func completeSetup(token: String, password: String, code: String) async throws -> OperatorRecord {
        guard let (record, _) = try await setup(token: token) else {
            throw AssentServerError(
                .unauthorized, "This set-up link is invalid, used or expired: ask an admin for a new one.", status: 401)
        }
        guard (12...PasswordHasher.maxLength).contains(password.unicodeScalars.count) else {
            throw AssentServerError.invalidRequest("An operator's password has 12 to 1024 characters.")
        }
        guard let step = try Self.step(of: code, secret: record.totpSecret, at: clock.now()) else {
            throw AssentServerError.invalidRequest(
                "That code is not the authenticator's current one: add the key shown and enter its code.")
        }
        let hash = try await hasher.hash(password)
        guard
            try await store.completeOperatorSetup(
                id: record.id, tokenHash: TFATokens.hash(token), passwordHash: hash, step: step,
                at: clock.millis)
        else {
            throw AssentServerError(.unauthorized, "This set-up link was used meanwhile.", status: 401)
        }
        await audit(
            .operatorSetUp, actor: "operator:\(record.name)", "Operator \(record.name) set a password and TOTP.")
        return try await named(record.name)
    }

    /// The operator `name` when the password and the TOTP code are right and it is set up and enabled; `nil`
    /// otherwise (the same answer for every reason, and the password hashed either way). A code is taken once.
    func signIn(name: String, password: String, code: String) async throws -> OperatorRecord? {
        guard let record = try await checkPassword(name: name, password: password),
            let step = try Self.step(of: code, secret: record.totpSecret, at: clock.now()),
            try await store.claimOperatorSignIn(id: record.id, step: step, at: clock.millis)
        else { return nil }
        return record
    }

    /// The operator `name` when the password is right and it is set up and enabled — the first of two steps; `nil`
    /// otherwise (the same answer for every reason, and the password hashed either way).
    func checkPassword(name: String, password: String) async throws -> OperatorRecord? {
        let record = try await store.operatorRecord(name: name)
        guard let record, let stored = record.passwordHash, record.isSetUp else {
            try await hasher.verifyNothing(password)
            return nil
        }
        guard try await hasher.verify(password, against: stored), record.disabledAt == nil else { return nil }
        return record
    }

    /// The signed-in operator's new password: the current one and a fresh code first (a session left open is not
    /// enough to change it). A wrong one counts against the account's sign-in limits from `address`
    /// (`operator-account-address-failures`, `operator-account-failures`) and is audited, as a wrong sign-in is: a
    /// session in other hands cannot guess on here.
    /// Changes an operator's own password; every other console session of theirs ends (`keeping` the one the change
    /// was made in). Returns how many ended.
    @discardableResult
    func changePassword(
        _ record: OperatorRecord, current: String, new: String, code: String, address: String?, keeping: Data? = nil
    ) async throws -> Int {
        guard (12...PasswordHasher.maxLength).contains(new.unicodeScalars.count) else {
            throw AssentServerError.invalidRequest("An operator's password has 12 to 1024 characters.")
        }
        let limits = limiter.rateLimits
        let (perAccount, pair) = (
            limits.operatorSignInFailuresPerAccount, limits.operatorSignInFailuresPerAccountAndAddress
        )
        try await limiter.checkAccount(perAccount, pair, "operator.account", account: record.name, address: address)
        guard try await signIn(name: record.name, password: current, code: code) != nil else {
            await limiter.recordAccountFailure(
                perAccount, pair, "operator.account", account: record.name, address: address)
            await audit(
                .operatorPasswordChangeRefused, actor: "operator:\(record.name)",
                "Operator \(record.name)'s password change was refused: the current password or the code is not right.")
            throw AssentServerError(
                .unauthorized, "The current password or the code is not right (a code works once).", status: 401)
        }
        _ = try await store.setOperatorPassword(id: record.id, hash: try await hasher.hash(new))
        let ended = try await store.deleteWebSessions(owner: Self.sessionOwner(record.id), except: keeping)
        await audit(
            .operatorPasswordChanged, actor: "operator:\(record.name)",
            "Operator \(record.name) changed the password; \(ended) other console session(s) ended.")
        return ended
    }

    /// The time step of a right TOTP code (one step of drift either way).
    static func step(of code: String, secret: Data?, at now: Date) throws -> Int64? {
        let digits = code.filter { !$0.isWhitespace }
        guard let secret, digits.count == 6, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else {
            return nil
        }
        return try TOTP(secret: secret).validate(digits, at: UInt64(max(0, now.timeIntervalSince1970))).map {
            Int64($0)
        }
    }

    static func isName(_ name: String) -> Bool {
        (1...64).contains(name.count)
            && name.unicodeScalars.allSatisfy {
                $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-@".unicodeScalars.contains($0))
            }
    }

    /// The set-up page's link for `token`.
    func link(_ token: String) -> String { "\(openID.base)/console/setup?t=\(token)" }
}
