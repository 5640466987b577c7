import AssentCrypto
import Foundation
import SQLKit

extension SQLStore {
    public func insertWebSession(_ s: WebSessionRecord) async throws {
        let sealed = try box.seal(
            s.state, context: SealedColumn.webSessionState.context(s.idHash.base64EncodedString()))
        try await database.raw(
            """
            INSERT INTO web_sessions (id_hash, kind, csrf_token, state, created_at, expires_at, owner)
            VALUES (\(bind: s.idHash), \(bind: s.kind), \(bind: s.csrfToken), \(bind: sealed), \(bind: s.createdAt), \
            \(bind: s.expiresAt), \(bind: s.owner))
            """
        ).run()
    }

    public func webSession(idHash: Data, at now: Millis) async throws -> WebSessionRecord? {
        guard
            let row = try await database.raw(
                "SELECT * FROM web_sessions WHERE id_hash = \(bind: idHash) AND expires_at > \(bind: now)"
            ).first()
        else { return nil }
        return WebSessionRecord(
            idHash: try row.decode(column: "id_hash", as: Data.self),
            kind: try row.decode(column: "kind", as: String.self),
            csrfToken: try row.decode(column: "csrf_token", as: String.self),
            state: try box.open(
                try row.decode(column: "state", as: Data.self),
                context: SealedColumn.webSessionState.context(idHash.base64EncodedString())),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            expiresAt: try row.decode(column: "expires_at", as: Int64.self),
            owner: try row.decode(column: "owner", as: String?.self))
    }

    public func updateWebSession(idHash: Data, state: Data, expiresAt: Millis, owner: String?) async throws -> Bool {
        let sealed = try box.seal(state, context: SealedColumn.webSessionState.context(idHash.base64EncodedString()))
        return
            !(try await database.raw(
                """
                UPDATE web_sessions SET state = \(bind: sealed), expires_at = \(bind: expiresAt), owner = \(bind: owner) \
                WHERE id_hash = \(bind: idHash) RETURNING kind
                """
            ).all()).isEmpty
    }

    public func extendWebSession(idHash: Data, expiresAt: Millis) async throws {
        try await database.raw(
            """
            UPDATE web_sessions SET expires_at = \(bind: expiresAt) \
            WHERE id_hash = \(bind: idHash) AND expires_at < \(bind: expiresAt)
            """
        ).run()
    }

    public func deleteWebSession(idHash: Data) async throws {
        try await database.raw("DELETE FROM web_sessions WHERE id_hash = \(bind: idHash)").run()
    }

    public func deleteWebSessions(owner: String, except: Data?) async throws -> Int {
        try await database.raw(
            """
            DELETE FROM web_sessions WHERE owner = \(bind: owner) AND id_hash <> \(bind: except ?? Data()) RETURNING kind
            """
        ).all().count
    }

    public func purgeWebSessions(before: Millis) async throws {
        try await database.raw("DELETE FROM web_sessions WHERE expires_at < \(bind: before)").run()
    }
}
