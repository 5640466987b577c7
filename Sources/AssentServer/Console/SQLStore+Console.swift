import AssentCrypto
import AssentModel
import Foundation
import SQLKit

extension SQLStore {
    public func activationCounts(applicationId: String) async throws -> [ActivationState: Int] {
        var counts: [ActivationState: Int] = [:]
        for row in try await database.raw(
            """
            SELECT state, COUNT(*) AS n FROM activations WHERE application_id = \(bind: applicationId) GROUP BY state
            """
        ).all() {
            if let state = ActivationState(rawValue: UInt8(clamping: try row.decode(column: "state", as: Int64.self))) {
                counts[state] = Int(try row.decode(column: "n", as: Int64.self))
            }
        }
        return counts
    }

    public func finishedOperationsPerHour(applicationId: String, since: Millis) async throws -> [(
        hour: Int64, status: OperationStatus, count: Int
    )] {
        try await database.raw(Self.finishedPerHourQuery(applicationId: applicationId, since: since)).all().compactMap {
            row in
            guard let status = OperationStatus(rawValue: try row.decode(column: "status", as: String.self)) else {
                return nil
            }
            return (
                try row.decode(column: "hour", as: Int64.self), status,
                Int(try row.decode(column: "n", as: Int64.self))
            )
        }
    }

    /// The query of ``finishedOperationsPerHour(applicationId:since:)``; it reads the finished-time index, which
    /// holds finished operations only (migration 12).
    static func finishedPerHourQuery(applicationId: String, since: Millis) -> SQLQueryString {
        """
        SELECT finished_at / 3600000 AS hour, status, COUNT(*) AS n FROM operations \
        WHERE finished_at >= \(bind: since) AND application_id = \(bind: applicationId) \
        GROUP BY finished_at / 3600000, status
        """
    }

    public func consoleUsers(applicationId: String, prefix: String?, limit: Int) async throws -> [ConsoleUser] {
        // Users with activations and users with a login account only (support helps both).
        let active = Int64(ActivationState.active.rawValue)
        var matching: SQLQueryString = ""
        if let prefix, !prefix.isEmpty {
            matching.appendInterpolation(unsafeRaw: " AND user_id LIKE ")
            matching.appendInterpolation(bind: Self.likePrefix(prefix))
            matching.appendInterpolation(unsafeRaw: " ESCAPE '\\'")
        }
        var query: SQLQueryString = """
            SELECT user_id, SUM(n) AS n, SUM(active) AS active, MAX(latest) AS latest, MAX(login) AS login FROM (\
            SELECT user_id, 1 AS n, CASE WHEN state = \(bind: active) THEN 1 ELSE 0 END AS active, \
            created_at AS latest, 0 AS login FROM activations WHERE application_id = \(bind: applicationId)
            """
        query.appendInterpolation(matching)
        query.appendInterpolation(
            unsafeRaw: " UNION ALL SELECT user_id, 0, 0, created_at, 1 FROM tfa_accounts WHERE application_id = ")
        query.appendInterpolation(bind: applicationId)
        query.appendInterpolation(matching)
        query.appendInterpolation(
            unsafeRaw: ") users GROUP BY user_id ORDER BY MAX(latest) DESC, user_id LIMIT \(max(1, min(limit, 1000)))")
        return try await database.raw(query).all().map { row in
            ConsoleUser(
                userId: try row.decode(column: "user_id", as: String.self),
                activations: Int(try row.decode(column: "n", as: Int64.self)),
                active: Int(try row.decode(column: "active", as: Int64.self)),
                latest: try row.decode(column: "latest", as: Int64.self),
                loginAccount: try row.decode(column: "login", as: Int64.self) == 1)
        }
    }

    public func recentOperations(
        applicationId: String, userId: String?, status: OperationStatus?, before: OperationCursor?, limit: Int
    ) async throws -> [OperationRecord] {
        var query: SQLQueryString = "SELECT * FROM operations WHERE application_id = \(bind: applicationId)"
        if let userId {
            query.appendInterpolation(unsafeRaw: " AND user_id = ")
            query.appendInterpolation(bind: userId)
        }
        if let status {
            query.appendInterpolation(unsafeRaw: " AND status = ")
            query.appendInterpolation(bind: status.rawValue)
        }
        if let before {
            query.appendInterpolation(unsafeRaw: " AND (created_at < ")
            query.appendInterpolation(bind: before.createdAt)
            query.appendInterpolation(unsafeRaw: " OR (created_at = ")
            query.appendInterpolation(bind: before.createdAt)
            query.appendInterpolation(unsafeRaw: " AND id < ")
            query.appendInterpolation(bind: before.id)
            query.appendInterpolation(unsafeRaw: "))")
        }
        query.appendInterpolation(
            unsafeRaw: " ORDER BY created_at DESC, id DESC LIMIT \(max(1, min(limit, 1000)))")
        return try await database.raw(query).all().map(decodeOperation)
    }

    public func auditEvents(_ filter: AuditFilter, limit: Int) async throws -> [AuditEvent] {
        var query = SQLQueryString("SELECT * FROM audit_events WHERE 1 = 1")
        if let activationId = filter.activationId {
            query.appendInterpolation(unsafeRaw: " AND activation_id = ")
            query.appendInterpolation(bind: activationId)
        }
        if let userId = filter.userId {
            query.appendInterpolation(unsafeRaw: " AND user_id = ")
            query.appendInterpolation(bind: userId)
        }
        if let applications = filter.applications {
            query.appendInterpolation(unsafeRaw: " AND application_id IN (")
            // No application: no row (an empty IN list is not SQL).
            query.appendInterpolation(unsafeRaw: applications.isEmpty ? "NULL" : "")
            for (index, id) in applications.enumerated() {
                query.appendInterpolation(unsafeRaw: index == 0 ? "" : ", ")
                query.appendInterpolation(bind: id)
            }
            query.appendInterpolation(unsafeRaw: ")")
        }
        if let prefix = filter.typePrefix, !prefix.isEmpty {
            query.appendInterpolation(unsafeRaw: " AND type LIKE ")
            query.appendInterpolation(bind: Self.likePrefix(prefix))
            query.appendInterpolation(unsafeRaw: " ESCAPE '\\'")
        }
        if let beforeId = filter.beforeId {
            query.appendInterpolation(unsafeRaw: " AND id < ")
            query.appendInterpolation(bind: beforeId)
        }
        if let from = filter.from {
            query.appendInterpolation(unsafeRaw: " AND at >= ")
            query.appendInterpolation(bind: from)
        }
        if let until = filter.until {
            query.appendInterpolation(unsafeRaw: " AND at < ")
            query.appendInterpolation(bind: until)
        }
        query.appendInterpolation(unsafeRaw: " ORDER BY id DESC LIMIT \(max(1, min(limit, 1000)))")
        return try await database.raw(query).all().map(Self.auditEvent)
    }

    /// A `LIKE` pattern for values starting with `prefix`, its wildcards escaped with `\`.
    static func likePrefix(_ prefix: String) -> String {
        prefix.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_") + "%"
    }
}
