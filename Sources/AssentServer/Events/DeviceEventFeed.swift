import AssentModel
import Foundation

/// A device's view of its user's device event log: where a new stream starts, the events after a position as this
/// device may see them (operations of its application it may see, in its language), and whether its token still
/// works.
struct DeviceEventFeed: Sendable {
    /// The part of the store this sees.
    let store: any ActivationStore & OperationStore & DeviceEventStore
    let device: DevicePrincipal
    let tokenId: String
    let language: String?

    /// The newest event's id (0 when there is none): where a new stream starts.
    func position() async throws -> Int64 { try await store.latestDeviceEventId() }

    /// Up to `limit` events of the log after `after`, as the stream sends them; `position` is the last one read
    /// (also of those this device may not see), `read` how many were read.
    func events(after: Int64, limit: Int) async throws -> (events: [ServerSentEvent], position: Int64?, read: Int) {
        let records = try await store.deviceEvents(userId: device.userId, after: after, limit: limit)
        var events: [ServerSentEvent] = []
        for record in records {
            if let data = try await payload(record) {
                events.append(ServerSentEvent(id: "\(record.id)", event: record.type, data: data))
            }
        }
        return (events, records.last?.id, records.count)
    }

    /// Whether the stream's token still exists and its activation is active.
    func tokenStillWorks() async throws -> Bool {
        guard let (_, _, state) = try await store.tokenWithActivation(id: tokenId) else { return false }
        return state == .active
    }

    /// The event's JSON, or `nil` when the device may not see the operation.
    private func payload(_ event: DeviceEventRecord) async throws -> String? {
        guard event.applicationId == device.applicationId,
            let operation = try await store.operation(id: event.operationId),
            OperationService.isVisible(operation, to: device)
        else { return nil }
        let body =
            event.type == OperationEvent.created
            ? OperationEvent(
                operationId: operation.id, name: operation.name, status: event.status,
                operation: MobileTokenController.view(operation, language: language))
            : OperationEvent(
                operationId: operation.id, name: operation.name, status: event.status,
                statusReason: operation.statusReason)
        return String(decoding: try JSONEncoder().encode(body), as: UTF8.self)
    }
}
