import AssentCrypto
import AssentModel
import Foundation

/// Each application's own push credentials: the APNs key and topic, the Firebase project and the Huawei app its
/// devices are reached with. An application without its own credentials for a service reaches its devices on that
/// service only if it is the first application and the server has the service's credentials (`assent serve
/// --apns-*`, `--fcm-*`, `--hms-*`): a device token belongs to one app, and sending it another app's push would only
/// make the service declare it dead.
public struct ApplicationPushService: Sendable {
    /// The part of the store this sees.
    let store: any ApplicationStore & ApplicationPushStore
    let clock: WallClock
    let audit: Auditor
    /// The server's own push settings, which stand in for the default application's.
    let push: PushSettings?
    /// Applications read so far (whether any has push credentials).
    let cache: ApplicationCache
    let applications: ApplicationService

    /// The credentials each service uses for `application`'s devices, without their secrets.
    public func info(_ application: ApplicationRecord) async throws -> ApplicationPushInfo {
        let resolved = try await settings(application.id)
        var info = ApplicationPushInfo(applicationId: application.id)
        if let (apns, updatedAt) = resolved.apns {
            info.apns = .init(
                source: updatedAt == nil ? .server : .application, teamId: apns.teamId, keyId: apns.keyId,
                topic: apns.topic, updatedAt: updatedAt.map(Date.init(millis:)))
        }
        if let (fcm, updatedAt) = resolved.fcm {
            info.fcm = .init(
                source: updatedAt == nil ? .server : .application, projectId: fcm.projectId,
                clientEmail: fcm.clientEmail, updatedAt: updatedAt.map(Date.init(millis:)))
        }
        if let (hms, updatedAt) = resolved.hms {
            info.hms = .init(
                source: updatedAt == nil ? .server : .application, appId: hms.appId,
                updatedAt: updatedAt.map(Date.init(millis:)))
        }
        return info
    }

    /// Sets the application's APNs credentials.
    /// - Throws: `ERR_REQUEST` naming what is wrong with them.
    public func setAPNs(_ request: APNsCredentialsRequest, for application: ApplicationRecord, actor: String)
        async throws
    {
        _ = try Self.checked { try Self.apns(request) }
        try await put(request, .apns, application, actor: actor, "topic \(request.topic), key \(request.keyId)")
    }

    /// Sets the application's FCM service account.
    /// - Throws: `ERR_REQUEST` naming what is wrong with it.
    public func setFCM(_ request: FCMCredentialsRequest, for application: ApplicationRecord, actor: String)
        async throws
    {
        let settings = try Self.checked { try Self.fcm(request) }
        try await put(
            request, .fcm, application, actor: actor,
            "project \(settings.projectId), account \(settings.clientEmail)")
    }

    /// Sets the application's Huawei app.
    /// - Throws: `ERR_REQUEST` naming what is wrong with it.
    public func setHMS(_ request: HMSCredentialsRequest, for application: ApplicationRecord, actor: String)
        async throws
    {
        _ = try Self.checked { try Self.hms(request) }
        try await put(request, .hms, application, actor: actor, "app \(request.appId)")
    }

    /// Removes the application's own credentials for `service`.
    /// - Throws: `NOT_FOUND` when it has none; `ERR_REQUEST` for a service other than apns, fcm and hms.
    public func remove(_ service: PushPlatform, for application: ApplicationRecord, actor: String) async throws {
        guard service != .webpush else {
            throw AssentServerError.invalidRequest(
                "Web Push has no credentials per application: it is set up with assent serve --vapid-subject.")
        }
        guard try await store.deleteApplicationPushCredential(applicationId: application.id, service: service) else {
            throw AssentServerError.notFound("The application has no \(service.rawValue) credentials of its own.")
        }
        cache.forget(.pushCredentials)
        await audit(
            .applicationPushRemoved, application: application.id, actor: actor,
            "The \(service.rawValue) credentials of application \(application.name) (\(application.id)) were removed.")
    }

    private func put<Request: Encodable>(
        _ request: Request, _ service: PushPlatform, _ application: ApplicationRecord, actor: String,
        _ summary: String
    ) async throws {
        try await store.putApplicationPushCredential(
            ApplicationPushCredentialRecord(
                applicationId: application.id, service: service, settings: try JSONEncoder().encode(request),
                updatedAt: clock.millis))
        cache.forget(.pushCredentials)
        await audit(
            .applicationPushSet, application: application.id, actor: actor,
            "Application \(application.name) (\(application.id)) reaches its \(service.rawValue) devices with "
                + "\(summary).")
    }

    /// What each service uses for the application's devices, with when the application's own were set (`nil`: the
    /// server's). Not routed through the server's gateways.
    struct Resolved: Sendable {
        var apns: (APNsSettings, Millis?)?
        var fcm: (FCMSettings, Millis?)?
        var hms: (HMSSettings, Millis?)?
    }

    func settings(_ applicationId: String) async throws -> Resolved {
        let (own, serverStandsIn) = try await credentials(applicationId)
        let server = serverStandsIn ? push : nil
        return Resolved(
            apns: try own[.apns].map { (try Self.apns($0), $0.updatedAt) } ?? server?.apns.map { ($0, nil) },
            fcm: try own[.fcm].map { (try Self.fcm($0), $0.updatedAt) } ?? server?.fcm.map { ($0, nil) },
            hms: try own[.hms].map { (try Self.hms($0), $0.updatedAt) } ?? server?.hms.map { ($0, nil) })
    }

    /// The rule of whose credentials reach an application's devices: its own by service, and whether the server's
    /// stand in for a service it has none of (for the first application only).
    func credentials(_ applicationId: String) async throws
        -> (own: [PushPlatform: ApplicationPushCredentialRecord], serverStandsIn: Bool)
    {
        let records = try await store.applicationPushCredentials(applicationId: applicationId)
        let own = Dictionary(records.map { ($0.service, $0) }) { first, _ in first }
        return (own, try await isFirst(applicationId))
    }

    /// Whether any application has push credentials of its own. Read at most every 5 seconds per process.
    func anyApplicationHasCredentials() async throws -> Bool {
        try await cache.presence(.pushCredentials) {
            try await store.anyApplicationPushCredentials()
        }
    }

    /// Whether `applicationId` is the first application, the one the server's own credentials belong to.
    func isFirst(_ applicationId: String) async throws -> Bool {
        try await applications.defaultApplication().id == applicationId
    }

    /// Turns a configuration error of the settings into a request error with the same sentence.
    private static func checked<T>(_ make: () throws -> T) throws -> T {
        do {
            return try make()
        } catch let error as AssentServerError where error.code == .configuration {
            throw AssentServerError.invalidRequest(error.message)
        }
    }

    static func apns(_ request: APNsCredentialsRequest) throws -> APNsSettings {
        try APNsSettings(
            teamId: request.teamId, keyId: request.keyId, privateKeyPEM: request.privateKey, topic: request.topic)
    }

    static func fcm(_ request: FCMCredentialsRequest) throws -> FCMSettings {
        try FCMSettings(serviceAccountJSON: Data(request.serviceAccount.utf8))
    }

    static func hms(_ request: HMSCredentialsRequest) throws -> HMSSettings {
        try HMSSettings(appId: request.appId, appSecret: request.appSecret)
    }

    static func apns(_ record: ApplicationPushCredentialRecord) throws -> APNsSettings {
        try apns(try JSONDecoder().decode(APNsCredentialsRequest.self, from: record.settings))
    }

    static func fcm(_ record: ApplicationPushCredentialRecord) throws -> FCMSettings {
        try fcm(try JSONDecoder().decode(FCMCredentialsRequest.self, from: record.settings))
    }

    static func hms(_ record: ApplicationPushCredentialRecord) throws -> HMSSettings {
        try hms(try JSONDecoder().decode(HMSCredentialsRequest.self, from: record.settings))
    }
}
