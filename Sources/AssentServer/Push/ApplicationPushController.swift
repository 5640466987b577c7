import AssentModel
import Foundation
import Hummingbird

/// `GET /api/v1/applications/{id}/push`, `PUT|DELETE /api/v1/applications/{id}/push/apns|fcm|hms`: the credentials
/// an application's devices are reached with.
struct ApplicationPushController {
    let applications: ApplicationService
    let push: ApplicationPushService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.applicationRead)
            .get("applications/:id/push", use: show)
        api.requiring(.applicationWrite)
            .put("applications/:id/push/apns", use: setAPNs)
            .put("applications/:id/push/fcm", use: setFCM)
            .put("applications/:id/push/hms", use: setHMS)
            .delete("applications/:id/push/apns", use: remove)
            .delete("applications/:id/push/fcm", use: remove)
            .delete("applications/:id/push/hms", use: remove)
    }

    @Sendable func show(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try HTTPSupport.operatorJSON(try await push.info(try await applications.named(in: context)))
    }

    @Sendable func setAPNs(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let application = try await applications.named(in: context)
        let body = try await HTTPSupport.decode(APNsCredentialsRequest.self, from: request)
        try await push.setAPNs(body, for: application, actor: context.actor)
        return try HTTPSupport.operatorJSON(try await push.info(application))
    }

    @Sendable func setFCM(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let application = try await applications.named(in: context)
        let body = try await HTTPSupport.decode(FCMCredentialsRequest.self, from: request)
        try await push.setFCM(body, for: application, actor: context.actor)
        return try HTTPSupport.operatorJSON(try await push.info(application))
    }

    @Sendable func setHMS(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let application = try await applications.named(in: context)
        let body = try await HTTPSupport.decode(HMSCredentialsRequest.self, from: request)
        try await push.setHMS(body, for: application, actor: context.actor)
        return try HTTPSupport.operatorJSON(try await push.info(application))
    }

    @Sendable func remove(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let application = try await applications.named(in: context)
        // The route's last word: apns, fcm or hms.
        let name = String(request.uri.path.split(separator: "/").last ?? "")
        guard let service = PushPlatform(rawValue: name) else {
            throw AssentServerError.notFound("There is no push service \(name): apns, fcm or hms.")
        }
        try await push.remove(service, for: application, actor: context.actor)
        return Response(status: .noContent)
    }
}
