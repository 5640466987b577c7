import AssentModel
import Foundation
import Logging
import PostgresNIO
import SQLKit

extension SQLStore {
    /// The PostgreSQL channel the event triggers announce users on.
    static let eventChannel = "assent_events"

    public func deviceEvents(userId: String, after: Int64, limit: Int) async throws -> [DeviceEventRecord] {
        try await database.raw(
            """
            SELECT * FROM device_events WHERE user_id = \(bind: userId) AND id > \(bind: after) \
            ORDER BY id LIMIT \(unsafeRaw: String(max(1, min(limit, 1000))))
            """
        ).all().compactMap { row in
            guard let status = OperationStatus(rawValue: try row.decode(column: "status", as: String.self)) else {
                return nil
            }
            return DeviceEventRecord(
                id: try row.decode(column: "id", as: Int64.self),
                applicationId: try row.decode(column: "application_id", as: String.self),
                userId: try row.decode(column: "user_id", as: String.self),
                type: try row.decode(column: "type", as: String.self),
                operationId: try row.decode(column: "operation_id", as: String.self), status: status,
                at: try row.decode(column: "at", as: Int64.self))
        }
    }

    public func latestDeviceEventId() async throws -> Int64 {
        try await database.raw("SELECT COALESCE(MAX(id), 0) AS latest FROM device_events").first()?
            .decode(column: "latest", as: Int64.self) ?? 0
    }

    public func purgeDeviceEvents(before: Millis) async throws {
        try await database.raw("DELETE FROM device_events WHERE at < \(bind: before)").run()
    }

    public var announcesDeviceEvents: Bool { backend == .postgres }

    public func listenForDeviceEvents(_ onUser: @escaping @Sendable (String) -> Void) async throws {
        guard let postgres = database as? PostgresClientDatabase else { return }
        try await postgres.client.withConnection { connection in
            try await connection.listen(on: Self.eventChannel) { notifications in
                for try await notification in notifications { onUser(notification.payload) }
            }
        }
    }
}
