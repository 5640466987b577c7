import AssentCrypto
import AssentModel
import Foundation
import SQLKit

/// Operations and their templates in SQL, with the cache of their decoded presentational parts.
extension SQLStore {
    // MARK: Operations

    public func insertOperation(_ o: OperationRecord) async throws {
        let seed = try o.proximitySeed.map {
            try box.seal($0, context: SealedColumn.operationProximitySeed.context(o.id))
        }
        try await database.raw(
            """
            INSERT INTO operations (id, application_id, user_id, name, data, status, status_reason, content,
            signature_type, failed_attempts, max_failed_attempts, proximity_seed, offline_nonce, offline_totp,
            activation_id, template, created_at, expires_at, updated_at, finished_at, version, number_matching,
            matching_number, number_choices, devices)
            VALUES (\(bind: o.id), \(bind: o.applicationId), \(bind: o.userId), \(bind: o.name), \(bind: o.data), \
            \(bind: o.status.rawValue), \(bind: o.statusReason), \(bind: try Self.json(o.content)), \
            \(bind: try Self.json(o.allowedSignatureType)), \(bind: Int64(o.failedAttempts)), \
            \(bind: Int64(o.maxFailedAttempts)), \(bind: seed), \(bind: o.offlineNonce), \(bind: o.offlineTOTP), \
            \(bind: o.activationId), \(bind: o.template), \(bind: o.createdAt), \(bind: o.expiresAt), \
            \(bind: o.updatedAt), \(bind: o.finishedAt), \(bind: o.version), \(bind: o.numberMatching), \
            \(bind: o.matchingNumber.map(Int64.init)), \(bind: o.numberChoices.map(String.init).joined(separator: " ")), \
            \(bind: o.devices?.joined(separator: " ")))
            """
        ).run()
    }

    public func operation(id: String) async throws -> OperationRecord? {
        try await database.raw("SELECT * FROM operations WHERE " + Self.operationKey(id)).first().map(decodeOperation)
    }

    /// `id = <id>`, and for an id that carries its creation time (``OperationId``) also `created_at = <that time>`,
    /// which on PostgreSQL names the one partition the row can be in. `prefix` qualifies the columns (`o.`).
    static func operationKey(_ id: String, prefix: String = "") -> SQLQueryString {
        var key: SQLQueryString = "\(unsafeRaw: prefix)id = \(bind: id)"
        if let createdAt = OperationId.createdAt(id) {
            key += " AND \(unsafeRaw: prefix)created_at = \(bind: createdAt)"
        }
        return key
    }

    /// A user's operations (of one status, or all), newest first, up to `limit` (at most 1,000).
    static func operationsQuery(userId: String, status: OperationStatus?, limit: Int) -> SQLQueryString {
        var query: SQLQueryString = "SELECT * FROM operations WHERE user_id = \(bind: userId)"
        if let status { query += " AND status = \(bind: status.rawValue)" }
        return query + " ORDER BY created_at DESC LIMIT \(literal: max(1, min(limit, 1000)))"
    }

    public func operations(userId: String, status: OperationStatus?, limit: Int) async throws -> [OperationRecord] {
        try await database.raw(Self.operationsQuery(userId: userId, status: status, limit: limit)).all()
            .map(decodeOperation)
    }

    public func updateOperation(_ o: OperationRecord, expectedVersion: Int64) async throws -> Bool {
        !(try await database.raw(Self.operationUpdate(o, expectedVersion: expectedVersion)).all()).isEmpty
    }

    /// The conditional update of an operation: it writes `o` only while the stored version is `expectedVersion` (and
    /// `condition` holds), and returns the id of the row it wrote.
    static func operationUpdate(_ o: OperationRecord, expectedVersion: Int64, and condition: SQLQueryString? = nil)
        -> SQLQueryString
    {
        var query: SQLQueryString = """
            UPDATE operations SET user_id = \(bind: o.userId), status = \(bind: o.status.rawValue),
            status_reason = \(bind: o.statusReason), failed_attempts = \(bind: Int64(o.failedAttempts)),
            offline_nonce = \(bind: o.offlineNonce), offline_totp = \(bind: o.offlineTOTP),
            activation_id = \(bind: o.activationId), approved_with = \(bind: o.approvedWith),
            mobile_context = \(bind: o.mobileContext), status_actor = \(bind: o.statusActor),
            updated_at = \(bind: o.updatedAt),
            finished_at = \(bind: o.finishedAt), version = \(bind: expectedVersion + 1)
            WHERE
            """
        query += " " + operationKey(o.id) + " AND version = \(bind: expectedVersion)"
        if let condition { query += " AND " + condition }
        return query + " RETURNING id"
    }

    // MARK: An approval's two statements

    /// Every column of `activations` and of `operations`, as the combined read selects them (a test holds these
    /// lists to the tables).
    static let activationColumns = """
        id application_id user_id state activation_code code_expires_at commit_mode activation_name platform \
        device_info extras device_public_key server_private_key master_secret counter_data counter failed_attempts \
        max_failed_attempts blocked_reason version created_at updated_at last_used_at used_counters pin_changed_at
        """.split(separator: " ").map(String.init)
    static let operationColumns = """
        id application_id user_id name data status status_reason content signature_type failed_attempts \
        max_failed_attempts proximity_seed offline_nonce offline_totp activation_id template created_at expires_at \
        updated_at finished_at version approved_with mobile_context number_matching matching_number number_choices \
        devices status_actor
        """.split(separator: " ").map(String.init)

    /// One row holding the activation's columns as `a_…` and the operation's as `o_…`, either side null when absent.
    private static let approvalRead =
        "SELECT "
        + (activationColumns.map { "a.\($0) AS a_\($0)" } + operationColumns.map { "o.\($0) AS o_\($0)" })
        .joined(separator: ", ")
        + " FROM (SELECT 1) one LEFT JOIN activations a ON a.id = "

    public func activationAndOperation(activationId: String, operationId: String) async throws -> (
        ActivationRecord?, OperationRecord?
    ) {
        let query: SQLQueryString =
            "\(unsafeRaw: Self.approvalRead)\(bind: activationId) LEFT JOIN operations o ON "
            + Self.operationKey(operationId, prefix: "o.")
        guard let row = try await spanned("db approval read", { try await database.raw(query).first() }) else {
            return (nil, nil)
        }
        let (a, o) = (PrefixedRow(base: row, prefix: "a_"), PrefixedRow(base: row, prefix: "o_"))
        return (
            try a.decodeNil(column: "id") ? nil : try decodeActivation(a),
            try o.decodeNil(column: "id") ? nil : try decodeOperation(o)
        )
    }

    public func updateActivation(
        _ activation: ActivationRecord, expectedVersion: Int64, then operation: OperationRecord,
        expectedVersion operationVersion: Int64
    ) async throws -> (activation: Bool, operation: Bool) {
        let activationUpdate = try activationUpdate(activation, expectedVersion: expectedVersion)
        guard backend == .postgres else {
            // SQLite: one process, one writer, each write durable when it returns; two statements in turn.
            guard !(try await database.raw(activationUpdate).all()).isEmpty else { return (false, false) }
            return (true, try await updateOperation(operation, expectedVersion: operationVersion))
        }
        // PostgreSQL: one statement; the operation's update sees the activation's through its RETURNING.
        let operationUpdate = Self.operationUpdate(
            operation, expectedVersion: operationVersion, and: "EXISTS (SELECT 1 FROM a)")
        let row = try await spanned("db approval write") {
            try await database.raw(
                "WITH a AS (" + activationUpdate + "), o AS (" + operationUpdate + ") "
                    + "SELECT (SELECT count(*) FROM a) AS a, (SELECT count(*) FROM o) AS o"
            ).first()
        }
        return (
            try row?.decode(column: "a", as: Int64.self) == 1, try row?.decode(column: "o", as: Int64.self) == 1
        )
    }

    public func overdueOperationIds(now: Millis, limit: Int) async throws -> [String] {
        try await database.raw(
            """
            SELECT id FROM operations WHERE status = \(bind: OperationStatus.pending.rawValue) \
            AND expires_at <= \(bind: now) ORDER BY expires_at LIMIT \(unsafeRaw: String(max(1, limit)))
            """
        ).all().map { try $0.decode(column: "id", as: String.self) }
    }

    public func keepOperations(now: Millis, removingCreatedBefore cutoff: Millis?) async throws -> OperationUpkeep {
        switch backend {
        case .postgres:
            let row = try await database.raw(
                "SELECT made, dropped FROM assent_operation_partitions(\(bind: now), \(bind: cutoff)::bigint)"
            ).first()
            return OperationUpkeep(
                partitionsMade: try row?.decode(column: "made", as: Int.self) ?? 0,
                partitionsDropped: try row?.decode(column: "dropped", as: Int.self) ?? 0)
        case .sqlite:
            guard let cutoff else { return OperationUpkeep() }
            // In batches, so that no single write holds the database long (by the creation-time index).
            var upkeep = OperationUpkeep()
            while true {
                let deleted = try await database.raw(
                    """
                    DELETE FROM operations WHERE rowid IN (SELECT rowid FROM operations \
                    WHERE created_at < \(bind: cutoff) AND status <> \(bind: OperationStatus.pending.rawValue) \
                    LIMIT \(literal: Self.operationDeletionBatch)) RETURNING id
                    """
                ).all().count
                upkeep.rowsDeleted += deleted
                if deleted < Self.operationDeletionBatch { return upkeep }
            }
        }
    }

    /// Rows one retention delete removes on SQLite.
    static let operationDeletionBatch = 1000

    func decodeOperation(_ row: any SQLRow) throws -> OperationRecord {
        let id = try row.decode(column: "id", as: String.self)
        guard let status = OperationStatus(rawValue: try row.decode(column: "status", as: String.self)) else {
            throw AssentServerError.internalError("Operation \(id) has an invalid stored status.")
        }
        let (content, allowed) = try cachedContent(id: id, row: row)
        return OperationRecord(
            id: id,
            applicationId: try row.decode(column: "application_id", as: String.self),
            userId: try row.decode(column: "user_id", as: String?.self),
            name: try row.decode(column: "name", as: String.self),
            data: try row.decode(column: "data", as: String.self),
            status: status,
            statusReason: try row.decode(column: "status_reason", as: String?.self),
            content: content,
            allowedSignatureType: allowed,
            failedAttempts: Int(try row.decode(column: "failed_attempts", as: Int64.self)),
            maxFailedAttempts: Int(try row.decode(column: "max_failed_attempts", as: Int64.self)),
            proximitySeed: try row.decode(column: "proximity_seed", as: Data?.self).map {
                try box.open($0, context: SealedColumn.operationProximitySeed.context(id))
            },
            offlineNonce: try row.decode(column: "offline_nonce", as: String?.self),
            offlineTOTP: try row.decode(column: "offline_totp", as: String?.self),
            activationId: try row.decode(column: "activation_id", as: String?.self),
            approvedWith: try row.decode(column: "approved_with", as: String?.self),
            mobileContext: try row.decode(column: "mobile_context", as: String?.self),
            numberMatching: try row.decode(column: "number_matching", as: String?.self),
            matchingNumber: try row.decode(column: "matching_number", as: Int64?.self).map { Int($0) },
            numberChoices: (try row.decode(column: "number_choices", as: String?.self) ?? "").split(separator: " ")
                .compactMap { Int($0) },
            devices: try row.decode(column: "devices", as: String?.self).map {
                $0.split(separator: " ").map(String.init)
            },
            template: try row.decode(column: "template", as: String?.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            expiresAt: try row.decode(column: "expires_at", as: Int64.self),
            updatedAt: try row.decode(column: "updated_at", as: Int64.self),
            finishedAt: try row.decode(column: "finished_at", as: Int64?.self),
            statusActor: try row.decode(column: "status_actor", as: String?.self),
            version: try row.decode(column: "version", as: Int64.self)
        )
    }

    private func cachedContent(id: String, row: any SQLRow) throws -> (OperationContent, AllowedSignatureType) {
        if let cached = contentCache.entries.withLock({ $0[id] }) { return cached }
        let decoded = (
            try Self.decodeJSON(OperationContent.self, try row.decode(column: "content", as: String.self)),
            try Self.decodeJSON(AllowedSignatureType.self, try row.decode(column: "signature_type", as: String.self))
        )
        contentCache.entries.withLock {
            if $0.count >= Self.contentCacheLimit { $0.removeAll(keepingCapacity: true) }
            $0[id] = decoded
        }
        return decoded
    }

    private static func json<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    private static func decodeJSON<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }

    // MARK: Operation templates

    public func putTemplate(applicationId: String, name: String, body: String, at: Millis) async throws {
        try await database.raw(
            """
            INSERT INTO operation_templates (application_id, name, body, updated_at)
            VALUES (\(bind: applicationId), \(bind: name), \(bind: body), \(bind: at))
            ON CONFLICT (application_id, name) DO UPDATE SET body = EXCLUDED.body, updated_at = EXCLUDED.updated_at
            """
        ).run()
    }

    public func template(applicationId: String, name: String) async throws -> (body: String, updatedAt: Millis)? {
        guard
            let row = try await database.raw(
                """
                SELECT * FROM operation_templates WHERE application_id = \(bind: applicationId) AND name = \(bind: name)
                """
            ).first()
        else { return nil }
        return (try row.decode(column: "body", as: String.self), try row.decode(column: "updated_at", as: Int64.self))
    }

    public func templates(applicationId: String) async throws -> [(name: String, body: String, updatedAt: Millis)] {
        try await database.raw(
            "SELECT * FROM operation_templates WHERE application_id = \(bind: applicationId) ORDER BY name"
        ).all().map {
            (
                try $0.decode(column: "name", as: String.self), try $0.decode(column: "body", as: String.self),
                try $0.decode(column: "updated_at", as: Int64.self)
            )
        }
    }

    public func deleteTemplate(applicationId: String, name: String) async throws -> Bool {
        !(try await database.raw(
            """
            DELETE FROM operation_templates WHERE application_id = \(bind: applicationId) AND name = \(bind: name) \
            RETURNING name
            """
        ).all()).isEmpty
    }
}
