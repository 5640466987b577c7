import AssentCrypto
import AssentModel
import Foundation

/// Reads the push delivery trace, and the Web Push key subscribers need.
public struct PushDeliveryService: Sendable {
    /// The part of the store this sees.
    let store: any ActivationStore & OperationStore & PushDeliveryStore & ApplicationStore
    let clock: WallClock
    /// The server's push settings (whether it sends Web Push).
    let push: PushSettings?
    let applications: ApplicationService

    /// How many attempts a trace shows.
    public static let limit = 50

    /// The activation's newest attempts, newest first.
    /// - Throws: `ACTIVATION_NOT_FOUND`.
    public func deliveries(activationId: String) async throws -> [PushDeliveryRecord] {
        guard try await store.activation(id: activationId) != nil else { throw AssentServerError.activationNotFound() }
        return try await store.pushDeliveries(activationId: activationId, limit: Self.limit)
    }

    /// The operation's newest attempts, newest first.
    /// - Throws: `OPERATION_NOT_FOUND`.
    public func deliveries(operationId: String) async throws -> [PushDeliveryRecord] {
        guard try await store.operation(id: operationId) != nil else { throw AssentServerError.operationNotFound() }
        return try await store.pushDeliveries(operationId: operationId, limit: Self.limit)
    }

    /// The VAPID public key (`applicationServerKey`) of the application named by id or key (default: the first
    /// application), made on first use.
    /// - Throws: `NOT_FOUND` when this server does not send Web Push or no application has that id or key.
    public func applicationServerKey(application name: String? = nil) async throws -> ECPublicKey {
        guard push?.webPush != nil else {
            throw AssentServerError.notFound("This server does not send Web Push (serve --vapid-subject).")
        }
        let application: ApplicationRecord
        if let name {
            if let byId = try await store.application(id: name) {
                application = byId
            } else if let byKey = try await store.application(key: name) {
                application = byKey
            } else {
                throw AssentServerError.notFound("No application has the id or key \(name.prefix(64)).")
            }
        } else {
            application = try await applications.defaultApplication()
        }
        return try await VAPIDKey.load(store, clock: clock, applicationId: application.id).publicKey
    }

    /// The operator's view of an attempt.
    static func info(_ record: PushDeliveryRecord) -> PushDeliveryInfo {
        PushDeliveryInfo(
            activationId: record.activationId, operationId: record.operationId, event: record.event,
            service: record.service, outcome: record.outcome.rawValue, httpStatus: record.httpStatus,
            reason: record.reason, latencyMillis: record.latencyMillis, at: Date(millis: record.at))
    }
}
