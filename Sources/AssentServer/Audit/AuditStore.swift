import AssentCrypto
import AssentModel
import Foundation

/// The audit trail.
public protocol AuditStore: Sendable {
    func appendAudit(_ event: AuditEvent) async throws
    func audit(activationId: String?, userId: String?, limit: Int) async throws -> [AuditEvent]
    /// Audit events matching `filter`, newest first.
    func auditEvents(_ filter: AuditFilter, limit: Int) async throws -> [AuditEvent]
}

/// Which audit events a reader wants: of an activation or a user, of a kind, in a time range, page by page.
public struct AuditFilter: Sendable, Equatable {
    public var activationId: String?
    public var userId: String?
    /// Events whose type starts with this (`activation.`, `signature.failed`).
    public var typePrefix: String?
    /// Only events older than this id (the next page).
    public var beforeId: Int64?
    /// Only events at or after this time.
    public var from: Millis?
    /// Only events before this time.
    public var until: Millis?
    /// Only events about these applications (none of the organisation's own); `nil`: every event.
    public var applications: [String]?

    public init(
        activationId: String? = nil, userId: String? = nil, typePrefix: String? = nil, beforeId: Int64? = nil,
        from: Millis? = nil, until: Millis? = nil, applications: [String]? = nil
    ) {
        self.applications = applications
        self.from = from
        self.until = until
        self.activationId = activationId
        self.userId = userId
        self.typePrefix = typePrefix
        self.beforeId = beforeId
    }
}
