import AssentModel
import Foundation
import Synchronization

/// The client of one push service with one set of credentials.
enum PushServiceClient: Sendable {
    case apns(APNsClient)
    case fcm(FCMClient)
    case hms(HMSClient)
}

/// The clients of applications' own credentials, made once per change of them, so that a client's provider or access
/// token is reused across pushes; a change made by any server process shows in the next push (the credentials are
/// read with every push, and a client is made again when their `updatedAt` moved).
final class ApplicationPushClients: Sendable {
    private let made = Mutex<[String: (updatedAt: Millis, client: PushServiceClient)]>([:])
    let transport: PushTransport
    let gateways: PushGateways

    init(transport: PushTransport, gateways: PushGateways) {
        self.transport = transport
        self.gateways = gateways
    }

    /// The client of `record`'s credentials.
    /// - Throws: when the stored credentials no longer make settings (they were checked when set).
    func client(for record: ApplicationPushCredentialRecord) throws -> PushServiceClient {
        let key = "\(record.applicationId):\(record.service.rawValue)"
        if let existing = made.withLock({ $0[key] }), existing.updatedAt == record.updatedAt {
            return existing.client
        }
        let client: PushServiceClient
        switch record.service {
        case .apns:
            client = .apns(
                APNsClient(settings: gateways.routing(try ApplicationPushService.apns(record)), transport: transport))
        case .fcm:
            client = .fcm(
                FCMClient(settings: gateways.routing(try ApplicationPushService.fcm(record)), transport: transport))
        case .hms:
            client = .hms(
                HMSClient(settings: gateways.routing(try ApplicationPushService.hms(record)), transport: transport))
        case .webpush:
            throw AssentServerError.invalidRequest("Web Push has no credentials per application.")
        }
        made.withLock { $0[key] = (record.updatedAt, client) }
        return client
    }
}
