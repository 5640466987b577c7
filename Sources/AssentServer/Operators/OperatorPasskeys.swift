import AssentCrypto
import AssentModel
import Crypto
import Foundation
import SQLKit

/// A passkey of an operator account: a second factor for the console beside the password, instead of the TOTP code.
public struct OperatorPasskeyRecord: Sendable, Equatable {
    public var credentialId: Data
    public var operatorId: String
    public var name: String
    /// The COSE_Key bytes.
    public var publicKey: Data
    public var algorithm: Int
    public var signCount: Int64
    /// Synced (backup eligible) rather than bound to one device.
    public var multiDevice: Bool
    public var createdAt: Millis
    public var lastUsedAt: Millis?
}

/// Operators' passkeys.
public protocol OperatorPasskeyStore: Sendable {
    /// Stores a new passkey; `false` when the credential is registered already (to anyone).
    func insertOperatorPasskey(_ passkey: OperatorPasskeyRecord) async throws -> Bool
    func operatorPasskeys(operatorId: String) async throws -> [OperatorPasskeyRecord]
    /// Records a use: the new counter, if the stored one is still `expected`.
    func recordOperatorPasskeyUse(credentialId: Data, expected: Int64, signCount: Int64, at: Millis) async throws
        -> Bool
    /// Removes one of the operator's passkeys; returns whether it was there.
    func deleteOperatorPasskey(operatorId: String, credentialId: Data) async throws -> Bool
    /// Removes every passkey of the operator; returns how many.
    func deleteOperatorPasskeys(operatorId: String) async throws -> Int
    /// Records a sign-in of the operator at `at` (a passkey's: no TOTP step is taken).
    func recordOperatorSignIn(operatorId: String, at: Millis) async throws
}

extension Migrations {
    /// Version 28: operators' passkeys (the console's second factor beside TOTP).
    static func operatorPasskeysV28(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS operator_passkeys (
                credential_id \(dialect.blob) PRIMARY KEY,
                operator_id TEXT NOT NULL REFERENCES operators(id),
                name TEXT NOT NULL,
                public_key \(dialect.blob) NOT NULL,
                algorithm \(dialect.bigint) NOT NULL,
                sign_count \(dialect.bigint) NOT NULL,
                multi_device \(dialect.bigint) NOT NULL,
                created_at \(dialect.bigint) NOT NULL,
                last_used_at \(dialect.bigint)
            )
            """,
            "CREATE INDEX IF NOT EXISTS operator_passkeys_operator ON operator_passkeys(operator_id)",
        ]
    }
}

extension SQLStore {
    public func insertOperatorPasskey(_ p: OperatorPasskeyRecord) async throws -> Bool {
        !(try await database.raw(
            """
            INSERT INTO operator_passkeys (credential_id, operator_id, name, public_key, algorithm, sign_count, \
            multi_device, created_at)
            VALUES (\(bind: p.credentialId), \(bind: p.operatorId), \(bind: p.name), \(bind: p.publicKey), \
            \(bind: Int64(p.algorithm)), \(bind: p.signCount), \(bind: Int64(p.multiDevice ? 1 : 0)), \
            \(bind: p.createdAt))
            ON CONFLICT (credential_id) DO NOTHING RETURNING credential_id
            """
        ).all()).isEmpty
    }

    public func operatorPasskeys(operatorId: String) async throws -> [OperatorPasskeyRecord] {
        try await database.raw(
            "SELECT * FROM operator_passkeys WHERE operator_id = \(bind: operatorId) ORDER BY created_at"
        ).all().map { row in
            OperatorPasskeyRecord(
                credentialId: try row.decode(column: "credential_id", as: Data.self),
                operatorId: try row.decode(column: "operator_id", as: String.self),
                name: try row.decode(column: "name", as: String.self),
                publicKey: try row.decode(column: "public_key", as: Data.self),
                algorithm: Int(try row.decode(column: "algorithm", as: Int64.self)),
                signCount: try row.decode(column: "sign_count", as: Int64.self),
                multiDevice: try row.decode(column: "multi_device", as: Int64.self) != 0,
                createdAt: try row.decode(column: "created_at", as: Int64.self),
                lastUsedAt: try row.decode(column: "last_used_at", as: Int64?.self))
        }
    }

    public func recordOperatorPasskeyUse(credentialId: Data, expected: Int64, signCount: Int64, at: Millis)
        async throws -> Bool
    {
        !(try await database.raw(
            """
            UPDATE operator_passkeys SET sign_count = \(bind: signCount), last_used_at = \(bind: at) \
            WHERE credential_id = \(bind: credentialId) AND sign_count = \(bind: expected) RETURNING credential_id
            """
        ).all()).isEmpty
    }

    public func deleteOperatorPasskeys(operatorId: String) async throws -> Int {
        try await database.raw(
            "DELETE FROM operator_passkeys WHERE operator_id = \(bind: operatorId) RETURNING credential_id"
        ).all().count
    }

    public func recordOperatorSignIn(operatorId: String, at: Millis) async throws {
        try await database.raw("UPDATE operators SET last_sign_in_at = \(bind: at) WHERE id = \(bind: operatorId)")
            .run()
    }

    public func deleteOperatorPasskey(operatorId: String, credentialId: Data) async throws -> Bool {
        !(try await database.raw(
            """
            DELETE FROM operator_passkeys WHERE operator_id = \(bind: operatorId) \
            AND credential_id = \(bind: credentialId) RETURNING credential_id
            """
        ).all()).isEmpty
    }
}

/// The console as a relying party of passkeys for its own operators: options for the browser and both ceremonies,
/// against a challenge the console keeps in the session (32 random bytes, used once, for 5 minutes). User
/// verification is required: a passkey stands for the second factor beside the password.
struct OperatorPasskeys: Sendable {
    /// The part of the store this sees.
    let store: any OperatorPasskeyStore
    let clock: WallClock
    let audit: Auditor
    let openID: OpenIDSettings

    static let challengeLifetime: Millis = 300_000

    /// The console's relying party: the issuer URL's host (`localhost` in place of an IP address) and origin.
    var relyingParty: (id: String, origins: [String]) {
        guard let issuer = URLComponents(string: openID.base), let scheme = issuer.scheme,
            var host = issuer.host
        else { return ("localhost", []) }
        if host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) { host = "localhost" }
        return (host, ["\(scheme)://\(host)" + (issuer.port.map { ":\($0)" } ?? "")])
    }

    /// A challenge for one ceremony, Base64URL, and when it stops counting.
    func challenge() -> (value: String, expiresAt: Millis) {
        (Base64URL.encode(Bytes.random(count: 32)), clock.millis + Self.challengeLifetime)
    }

    /// Options for a new passkey of `record` (none of its existing ones again).
    func creationOptions(_ record: OperatorRecord, challenge: String) async throws -> PasskeyOptionsResponse {
        var options = PasskeyOptions(challenge: challenge, timeout: Int(Self.challengeLifetime))
        options.rp = .init(id: relyingParty.id, name: "Assent console")
        // The handle is the account's id hashed: stable per operator, never their name.
        let handle = Data(SHA256.hash(data: Data("operator:\(record.id)".utf8)))
        options.user = .init(id: Base64URL.encode(handle), name: record.name, displayName: record.name)
        options.pubKeyCredParams = COSEKey.Algorithm.defaults.map { .init(alg: $0.rawValue) }
        options.excludeCredentials = try await store.operatorPasskeys(operatorId: record.id).map(Self.descriptor)
        options.authenticatorSelection = .init(
            residentKey: "preferred", requireResidentKey: false, userVerification: "required")
        options.attestation = "none"
        return PasskeyOptionsResponse(publicKey: options)
    }

    /// Options for signing `record` in with one of its passkeys.
    func requestOptions(_ record: OperatorRecord, challenge: String) async throws -> PasskeyOptionsResponse {
        var options = PasskeyOptions(challenge: challenge, timeout: Int(Self.challengeLifetime))
        options.rpId = relyingParty.id
        options.userVerification = "required"
        options.allowCredentials = try await store.operatorPasskeys(operatorId: record.id).map(Self.descriptor)
        return PasskeyOptionsResponse(publicKey: options)
    }

    private static func descriptor(_ passkey: OperatorPasskeyRecord) -> PasskeyDescriptor {
        PasskeyDescriptor(id: Base64URL.encode(passkey.credentialId), transports: nil)
    }

    /// Verifies a new credential made for `challenge` and stores it as `record`'s passkey named `name`.
    /// - Throws: `ERR_REQUEST` when the browser's answer does not verify, or the passkey is registered already.
    func register(
        _ record: OperatorRecord, credential: RegistrationCredential, name: String?, challenge: String
    ) async throws -> OperatorPasskeyRecord {
        let (id, origins) = relyingParty
        let expected = try Base64URL.decodeLenient(challenge, field: "challenge")
        let registered: RegisteredCredential
        do {
            registered = try await WebAuthn.verifyRegistration(
                credential,
                expecting: RegistrationExpectation(
                    challenge: expected, origins: origins, relyingPartyID: id, requireUserVerification: true))
        } catch {
            throw AssentServerError.invalidRequest("The passkey was refused: \(error.message)")
        }
        let trimmed = (name ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let passkey = OperatorPasskeyRecord(
            credentialId: registered.id, operatorId: record.id,
            name: trimmed.isEmpty ? (registered.multiDevice ? "Passkey" : "Security key") : String(trimmed.prefix(64)),
            publicKey: registered.publicKey, algorithm: registered.algorithm.rawValue,
            signCount: Int64(registered.signCount), multiDevice: registered.multiDevice,
            createdAt: clock.millis)
        guard try await store.insertOperatorPasskey(passkey) else {
            throw AssentServerError(.conflict, "This passkey is registered already.", status: 409)
        }
        await audit(
            .operatorPasskeyAdded, actor: "operator:\(record.name)",
            "Operator \(record.name) added the passkey \"\(passkey.name)\" (\(registered.algorithm.name)).")
        return passkey
    }

    /// Verifies `record`'s answer to `challenge` with one of its passkeys, and records the use.
    /// - Returns: `false` when the answer is not one of its passkeys' or does not verify (a counter that went back
    ///   is audited).
    func authenticate(_ record: OperatorRecord, credential: AuthenticationCredential, challenge: String) async throws
        -> Bool
    {
        guard let rawId = try? Base64URL.decodeLenient(credential.rawId, field: "rawId"),
            let passkey = try await store.operatorPasskeys(operatorId: record.id).first(where: {
                $0.credentialId == rawId
            }),
            let expected = try? Base64URL.decodeLenient(challenge, field: "challenge")
        else { return false }
        let (id, origins) = relyingParty
        let verified: VerifiedAuthentication
        do {
            verified = try WebAuthn.verifyAuthentication(
                credential,
                expecting: AuthenticationExpectation(
                    challenge: expected, origins: origins, relyingPartyID: id, requireUserVerification: true,
                    publicKey: passkey.publicKey, signCount: UInt32(clamping: passkey.signCount)))
        } catch {
            await audit(
                .operatorPasskeyRefused, actor: "operator:\(record.name)",
                "A passkey answer of operator \(record.name) was refused (\(error.code.rawValue)).")
            return false
        }
        let now = clock.millis
        guard
            try await store.recordOperatorPasskeyUse(
                credentialId: passkey.credentialId, expected: passkey.signCount, signCount: Int64(verified.signCount),
                at: now)
        else { return false }
        try await store.recordOperatorSignIn(operatorId: record.id, at: now)
        return true
    }

    /// `record`'s passkey `id` (Base64URL), if it has one.
    /// The operator's passkeys.
    func all(operatorId: String) async throws -> [OperatorPasskeyRecord] {
        try await store.operatorPasskeys(operatorId: operatorId)
    }

    func passkey(_ record: OperatorRecord, id: String) async throws -> OperatorPasskeyRecord? {
        guard let credentialId = try? Base64URL.decodeLenient(id, field: "id") else { return nil }
        return try await store.operatorPasskeys(operatorId: record.id).first { $0.credentialId == credentialId }
    }

    /// Removes one of `record`'s passkeys (`id` Base64URL).
    func remove(_ record: OperatorRecord, id: String) async throws {
        guard let credentialId = try? Base64URL.decodeLenient(id, field: "id"),
            try await store.deleteOperatorPasskey(operatorId: record.id, credentialId: credentialId)
        else { throw AssentServerError.notFound("You have no such passkey.") }
        await audit(
            .operatorPasskeyRemoved, actor: "operator:\(record.name)", "Operator \(record.name) removed a passkey.")
    }
}
