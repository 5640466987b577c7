import AssentCrypto
import Foundation
import SQLKit

/// One attempt to hand a notification to a push service: what the service answered and what became of it. Never
/// the token or endpoint.
public struct PushDeliveryRecord: Sendable, Equatable, Codable {
    /// How an attempt ended.
    public enum Outcome: String, Sendable, Codable, CaseIterable {
        /// The service accepted the notification.
        case delivered
        /// The service said the token is dead: the registration was removed.
        case unregistered
        /// It will be tried again.
        case retry
        /// Given up: it will not be tried again.
        case failed
    }

    public var id: Int64
    public var activationId: String
    public var operationId: String
    /// `operation.created` or `operation.finished`.
    public var event: String
    /// The push service: `apns`, `fcm`, `hms` or `webpush`.
    public var service: String
    public var outcome: Outcome
    /// The HTTP status the service answered; `nil` when no answer came.
    public var httpStatus: Int?
    /// The service's reason and what was done, as a sentence.
    public var reason: String?
    /// From the request to the answer, in milliseconds.
    public var latencyMillis: Int64
    public var at: Millis

    public init(
        id: Int64 = 0, activationId: String, operationId: String, event: String, service: String, outcome: Outcome,
        httpStatus: Int?, reason: String?, latencyMillis: Int64, at: Millis
    ) {
        self.id = id
        self.activationId = activationId
        self.operationId = operationId
        self.event = event
        self.service = service
        self.outcome = outcome
        self.httpStatus = httpStatus
        self.reason = reason
        self.latencyMillis = latencyMillis
        self.at = at
    }
}

/// The push delivery trace and the server's Web Push (VAPID) key.
public protocol PushDeliveryStore: Sendable {
    func insertPushDelivery(_ delivery: PushDeliveryRecord) async throws
    /// The newest attempts for an activation, newest first.
    func pushDeliveries(activationId: String, limit: Int) async throws -> [PushDeliveryRecord]
    /// The newest attempts for an operation, newest first.
    func pushDeliveries(operationId: String, limit: Int) async throws -> [PushDeliveryRecord]
    /// Deletes attempts made before `before`.
    func purgePushDeliveries(before: Millis) async throws
    /// The VAPID key of application `applicationId`, made by the first caller (several processes agree on one: the
    /// first insert wins). Applications that existed when the server had one key for all keep that one.
    func vapidKey(applicationId: String, creating candidate: ECPrivateKey, at now: Millis) async throws
        -> ECPrivateKey
}

extension SQLStore {
    public func insertPushDelivery(_ d: PushDeliveryRecord) async throws {
        try await database.raw(
            """
            INSERT INTO push_deliveries (activation_id, operation_id, event, service, outcome, http_status, reason, \
            latency_ms, at)
            VALUES (\(bind: d.activationId), \(bind: d.operationId), \(bind: d.event), \(bind: d.service), \
            \(bind: d.outcome.rawValue), \(bind: d.httpStatus.map(Int64.init)), \(bind: d.reason), \
            \(bind: d.latencyMillis), \(bind: d.at))
            """
        ).run()
    }

    public func pushDeliveries(activationId: String, limit: Int) async throws -> [PushDeliveryRecord] {
        try await database.raw(
            """
            SELECT * FROM push_deliveries WHERE activation_id = \(bind: activationId) \
            ORDER BY at DESC, id DESC LIMIT \(bind: Int64(limit))
            """
        ).all().map(Self.pushDelivery)
    }

    public func pushDeliveries(operationId: String, limit: Int) async throws -> [PushDeliveryRecord] {
        try await database.raw(
            """
            SELECT * FROM push_deliveries WHERE operation_id = \(bind: operationId) \
            ORDER BY at DESC, id DESC LIMIT \(bind: Int64(limit))
            """
        ).all().map(Self.pushDelivery)
    }

    public func purgePushDeliveries(before: Millis) async throws {
        try await database.raw("DELETE FROM push_deliveries WHERE at < \(bind: before)").run()
    }

    public func vapidKey(applicationId: String, creating candidate: ECPrivateKey, at now: Millis) async throws
        -> ECPrivateKey
    {
        let owned = try await database.raw(
            "SELECT key_id FROM push_vapid_key_owners WHERE application_id = \(bind: applicationId)"
        ).first()?.decode(column: "key_id", as: String.self)
        func stored(_ id: String) async throws -> ECPrivateKey? {
            try await database.raw("SELECT private_key FROM push_vapid_keys WHERE id = \(bind: id)").first().map {
                try ECPrivateKey(
                    scalar: try box.open(
                        try $0.decode(column: "private_key", as: Data.self),
                        context: SealedColumn.vapidKey.context(id)))
            }
        }
        // Read first: the key is served to anyone who asks, and a read must not become a write.
        if let owned, let key = try await stored(owned) { return key }
        if let key = try await stored(applicationId) { return key }
        let sealed = try box.seal(candidate.scalar, context: SealedColumn.vapidKey.context(applicationId))
        try await database.raw(
            """
            INSERT INTO push_vapid_keys (id, private_key, created_at) VALUES (\(bind: applicationId), \(bind: sealed), \
            \(bind: now)) ON CONFLICT (id) DO NOTHING
            """
        ).run()
        guard let key = try await stored(applicationId) else {
            throw AssentServerError.internalError("The VAPID key was not stored.")
        }
        return key
    }

    static func pushDelivery(_ row: any SQLRow) throws -> PushDeliveryRecord {
        let outcome = try row.decode(column: "outcome", as: String.self)
        return PushDeliveryRecord(
            id: try row.decode(column: "id", as: Int64.self),
            activationId: try row.decode(column: "activation_id", as: String.self),
            operationId: try row.decode(column: "operation_id", as: String.self),
            event: try row.decode(column: "event", as: String.self),
            service: try row.decode(column: "service", as: String.self),
            outcome: PushDeliveryRecord.Outcome(rawValue: outcome) ?? .failed,
            httpStatus: try row.decode(column: "http_status", as: Int64?.self).map { Int($0) },
            reason: try row.decode(column: "reason", as: String?.self),
            latencyMillis: try row.decode(column: "latency_ms", as: Int64.self),
            at: try row.decode(column: "at", as: Int64.self))
    }
}
