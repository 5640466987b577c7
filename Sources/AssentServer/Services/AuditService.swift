import Foundation

/// Reading the audit trail (writing it is ``ServerEnvironment/audit(_:activation:userId:actor:_:)``).
public struct AuditService: Sendable {
    let environment: ServerEnvironment

    public init(environment: ServerEnvironment) { self.environment = environment }

    /// Events matching `filter`, newest first.
    public func events(_ filter: AuditFilter, limit: Int) async throws -> [AuditEvent] {
        try await environment.store.auditEvents(filter, limit: limit)
    }
}
