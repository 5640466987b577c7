import AssentCrypto
import Foundation
import SQLKit

/// What an operator account may do: a named set of the operator API's scopes.
public enum OperatorRole: String, Sendable, Codable, CaseIterable {
    /// Everything, operator accounts included.
    case admin
    /// The day's work: activations, operations, login accounts; reads the application and clients.
    case `operator`
    /// Reads everything, the audit trail included; changes nothing.
    case auditor
    /// Helps people: reads their activations, operations and login accounts, blocks and unblocks phones, revokes
    /// remembered browsers.
    case support

    public var scopes: Set<APIScope> {
        switch self {
        case .admin: [.all]
        case .operator:
            [
                .applicationRead, .activationsRead, .activationsWrite, .operationsRead, .operationsWrite, .tfaRead,
                .tfaWrite, .clientsRead,
            ]
        case .auditor: [.applicationRead, .activationsRead, .operationsRead, .clientsRead, .tfaRead, .auditRead]
        case .support: [.applicationRead, .activationsRead, .activationsWrite, .operationsRead, .tfaRead, .tfaWrite]
        }
    }
}

/// A named person who signs in to the console with a password and Assent's own TOTP; set up through a one-time link.
public struct OperatorRecord: Sendable, Equatable {
    public var id: String
    public var name: String
    public var role: OperatorRole
    /// The applications the operator may work with; `nil`: every one.
    public var applications: [String]?
    /// The password's hash once set up.
    public var passwordHash: String?
    /// The TOTP secret (sealed at rest): issued with the set-up link, confirmed by a code at set-up.
    public var totpSecret: Data?
    /// The newest TOTP time step accepted (a code of it or an older one is a replay).
    public var totpLastStep: Int64?
    /// The SHA-256 of the one-time set-up token while the link is open.
    public var setupTokenHash: Data?
    public var setupExpiresAt: Millis?
    public var disabledAt: Millis?
    public var createdAt: Millis
    public var lastSignInAt: Millis?

    /// Whether the operator has set a password and confirmed the second factor.
    public var isSetUp: Bool { passwordHash != nil && setupTokenHash == nil }
}

/// Operator accounts.
public protocol OperatorStore: Sendable {
    /// Stores a new operator; `false` when the name is taken.
    func insertOperator(_ record: OperatorRecord) async throws -> Bool
    func operators() async throws -> [OperatorRecord]
    func operatorRecord(id: String) async throws -> OperatorRecord?
    func operatorRecord(name: String) async throws -> OperatorRecord?
    func operatorRecord(setupTokenHash: Data) async throws -> OperatorRecord?
    /// Sets the password and closes the set-up link, if the link is still `tokenHash`; the TOTP step the code used is
    /// the newest accepted. Returns whether it was.
    func completeOperatorSetup(id: String, tokenHash: Data, passwordHash: String, step: Int64, at now: Millis)
        async throws -> Bool
    /// Opens a new set-up link with a new TOTP secret and clears the password and the linked phone; `false` when
    /// the operator does not exist or is the last enabled admin for every application who can sign in.
    func resetOperator(id: String, tokenHash: Data, expiresAt: Millis, totpSecret: Data) async throws -> Bool
    /// Replaces the password's hash of an operator that is set up.
    func setOperatorPassword(id: String, hash: String) async throws -> Bool
    /// Disables (`at`) or enables (`nil`) the operator; `false` when it does not exist or is the last enabled admin
    /// for every application who can sign in (never disabled).
    func setOperatorDisabled(id: String, at: Millis?) async throws -> Bool
    /// Accepts TOTP step `step` for a sign-in at `now` if it is newer than every step accepted before.
    func claimOperatorSignIn(id: String, step: Int64, at now: Millis) async throws -> Bool
}

extension Migrations {
    /// Version 24: operator accounts (named people with a role, a password and TOTP; a one-time set-up link).
    static func operatorsV24(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS operators (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                role TEXT NOT NULL,
                applications TEXT,
                password_hash TEXT,
                totp_secret \(dialect.blob),
                totp_last_step \(dialect.bigint),
                setup_token_hash \(dialect.blob) UNIQUE,
                setup_expires_at \(dialect.bigint),
                disabled_at \(dialect.bigint),
                created_at \(dialect.bigint) NOT NULL,
                last_sign_in_at \(dialect.bigint)
            )
            """
        ]
    }
}

extension Migrations {
    /// Version 25: an API key may be limited to some applications.
    static func apiKeyApplicationsV25(_ dialect: Dialect) -> [String] {
        [
            dialect == .sqlite
                ? "ALTER TABLE api_keys ADD COLUMN applications TEXT"
                : "ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS applications TEXT"
        ]
    }
}

extension SQLStore {
    public func insertOperator(_ o: OperatorRecord) async throws -> Bool {
        let secret = try o.totpSecret.map { try box.seal($0, context: SealedColumn.operatorTOTP.context(o.id)) }
        return
            !(try await database.raw(
                """
                INSERT INTO operators (id, name, role, applications, password_hash, totp_secret, totp_last_step, \
                setup_token_hash, setup_expires_at, disabled_at, created_at, last_sign_in_at)
                VALUES (\(bind: o.id), \(bind: o.name), \(bind: o.role.rawValue), \
                \(bind: o.applications?.joined(separator: " ")), \(bind: o.passwordHash), \(bind: secret), \
                \(bind: o.totpLastStep), \(bind: o.setupTokenHash), \(bind: o.setupExpiresAt), \(bind: o.disabledAt), \
                \(bind: o.createdAt), \(bind: o.lastSignInAt))
                ON CONFLICT (name) DO NOTHING RETURNING id
                """
            ).all()).isEmpty
    }

    public func operators() async throws -> [OperatorRecord] {
        try await database.raw("SELECT * FROM operators ORDER BY created_at, name").all().map(decodeOperator)
    }

    public func operatorRecord(id: String) async throws -> OperatorRecord? {
        try await database.raw("SELECT * FROM operators WHERE id = \(bind: id)").first().map(decodeOperator)
    }

    public func operatorRecord(name: String) async throws -> OperatorRecord? {
        try await database.raw("SELECT * FROM operators WHERE name = \(bind: name)").first().map(decodeOperator)
    }

    public func operatorRecord(setupTokenHash: Data) async throws -> OperatorRecord? {
        try await database.raw("SELECT * FROM operators WHERE setup_token_hash = \(bind: setupTokenHash)").first()
            .map(decodeOperator)
    }

    public func completeOperatorSetup(
        id: String, tokenHash: Data, passwordHash: String, step: Int64, at now: Millis
    ) async throws -> Bool {
        !(try await database.raw(
            """
            UPDATE operators SET password_hash = \(bind: passwordHash), totp_last_step = \(bind: step), \
            setup_token_hash = NULL, setup_expires_at = NULL, last_sign_in_at = \(bind: now)
            WHERE id = \(bind: id) AND setup_token_hash = \(bind: tokenHash) RETURNING id
            """
        ).all()).isEmpty
    }

    public func resetOperator(id: String, tokenHash: Data, expiresAt: Millis, totpSecret: Data) async throws -> Bool {
        let secret = try box.seal(totpSecret, context: SealedColumn.operatorTOTP.context(id))
        return try await changingOperator(
            id: id,
            set: """
                password_hash = NULL, totp_secret = \(bind: secret), totp_last_step = NULL, \
                setup_token_hash = \(bind: tokenHash), setup_expires_at = \(bind: expiresAt), phone_activation_id = NULL
                """)
    }

    /// Sets `set` on the operator `id` unless that leaves no admin who can sign in: the update is guarded by "this
    /// operator is no admin who can sign in (enabled, for every application, set up), or another one is"; `false`
    /// when the operator does not exist or the guard holds it back. Two such changes never both pass the guard:
    /// SQLite runs a statement under the database's one write lock; on PostgreSQL the statement runs in a
    /// transaction after locking every admin's row, so its guard sees every change committed before it.
    private func changingOperator(id: String, set: SQLQueryString) async throws -> Bool {
        let statement: SQLQueryString = """
            UPDATE operators SET \(set) WHERE id = \(bind: id) AND NOT (role = 'admin' AND applications IS NULL \
            AND disabled_at IS NULL AND password_hash IS NOT NULL AND setup_token_hash IS NULL AND NOT EXISTS (\
            SELECT 1 FROM operators other WHERE other.id <> \(bind: id) AND other.role = 'admin' \
            AND other.applications IS NULL AND other.disabled_at IS NULL AND other.password_hash IS NOT NULL \
            AND other.setup_token_hash IS NULL)) RETURNING id
            """
        guard backend == .postgres else { return !(try await database.raw(statement).all()).isEmpty }
        return try await inOneCommit { store in
            guard let bound = store as? SQLStore else { throw AssentServerError.internalError("No SQL store.") }
            try await bound.database.raw("SELECT id FROM operators WHERE role = 'admin' ORDER BY id FOR UPDATE")
                .run()
            return !(try await bound.database.raw(statement).all()).isEmpty
        }
    }

    public func setOperatorPassword(id: String, hash: String) async throws -> Bool {
        !(try await database.raw(
            """
            UPDATE operators SET password_hash = \(bind: hash)
            WHERE id = \(bind: id) AND password_hash IS NOT NULL AND setup_token_hash IS NULL RETURNING id
            """
        ).all()).isEmpty
    }

    public func setOperatorDisabled(id: String, at: Millis?) async throws -> Bool {
        guard at != nil else {
            return
                !(try await database.raw(
                    "UPDATE operators SET disabled_at = NULL WHERE id = \(bind: id) RETURNING id"
                ).all()).isEmpty
        }
        return try await changingOperator(id: id, set: "disabled_at = \(bind: at)")
    }

    public func claimOperatorSignIn(id: String, step: Int64, at now: Millis) async throws -> Bool {
        !(try await database.raw(
            """
            UPDATE operators SET totp_last_step = \(bind: step), last_sign_in_at = \(bind: now)
            WHERE id = \(bind: id) AND (totp_last_step IS NULL OR totp_last_step < \(bind: step)) RETURNING id
            """
        ).all()).isEmpty
    }

    private func decodeOperator(_ row: any SQLRow) throws -> OperatorRecord {
        let id = try row.decode(column: "id", as: String.self)
        let roleName = try row.decode(column: "role", as: String.self)
        guard let role = OperatorRole(rawValue: roleName) else {
            throw AssentServerError.internalError("Operator \(id) has an unknown role \(roleName).")
        }
        return OperatorRecord(
            id: id, name: try row.decode(column: "name", as: String.self), role: role,
            applications: try row.decode(column: "applications", as: String?.self).map {
                $0.split(separator: " ").map(String.init)
            },
            passwordHash: try row.decode(column: "password_hash", as: String?.self),
            totpSecret: try row.decode(column: "totp_secret", as: Data?.self).map {
                try box.open($0, context: SealedColumn.operatorTOTP.context(id))
            },
            totpLastStep: try row.decode(column: "totp_last_step", as: Int64?.self),
            setupTokenHash: try row.decode(column: "setup_token_hash", as: Data?.self),
            setupExpiresAt: try row.decode(column: "setup_expires_at", as: Int64?.self),
            disabledAt: try row.decode(column: "disabled_at", as: Int64?.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            lastSignInAt: try row.decode(column: "last_sign_in_at", as: Int64?.self))
    }
}
