import AssentCrypto
import AssentModel
import Foundation
import SQLKit

/// The audit trail in SQL: rows appended (the chain seals them after their commit) and read back.
extension SQLStore {
    // MARK: Audit

    public func appendAudit(_ event: AuditEvent) async throws {
        try await database.raw(
            """
            INSERT INTO audit_events (at, type, activation_id, user_id, actor, detail, application_id)
            VALUES (\(bind: event.at), \(bind: event.type), \(bind: event.activationId), \(bind: event.userId), \
            \(bind: event.actor), \(bind: event.detail), \(bind: event.applicationId))
            """
        ).run()
    }

    public func audit(activationId: String?, userId: String?, limit: Int) async throws -> [AuditEvent] {
        try await auditEvents(AuditFilter(activationId: activationId, userId: userId), limit: limit)
    }
}
