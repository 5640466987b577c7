import AssentModel
import Foundation
import Hummingbird

/// `GET /api/v1/applications/{id}/push`, `PUT|DELETE /api/v1/applications/{id}/push/apns|fcm|hms`: the credentials
/// an application's devices are reached with; `GET|PATCH /api/v1/applications/{id}/branding`: how its hosted pages
/// look; `GET|PUT|DELETE /api/v1/applications/{id}/webhook`: where its operations' status changes go;
/// `GET|PATCH /api/v1/applications/{id}/rate-limits`: the limits of what its people and devices do.
struct ApplicationSettingsController {
    let applications: ApplicationService
    let push: ApplicationPushService
    let branding: ApplicationBrandingService
    let webhooks: ApplicationWebhookService
    let rateLimits: ApplicationRateLimitService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.applicationRead)
            .get("applications/{id}/push", use: show)
            .get("applications/{id}/branding", use: showBranding)
            .get("applications/{id}/webhook", use: showWebhook)
            .get("applications/{id}/rate-limits", use: showRateLimits)
        api.requiring(.applicationWrite)
            .patch("applications/{id}/branding", use: updateBranding)
            .put("applications/{id}/webhook", use: setWebhook)
            .delete("applications/{id}/webhook", use: removeWebhook)
            .patch("applications/{id}/rate-limits", use: updateRateLimits)
            .put("applications/{id}/push/apns", use: setAPNs)
            .put("applications/{id}/push/fcm", use: setFCM)
            .put("applications/{id}/push/hms", use: setHMS)
            .delete("applications/{id}/push/apns", use: remove)
            .delete("applications/{id}/push/fcm", use: remove)
            .delete("applications/{id}/push/hms", use: remove)
    }

    @Sendable func show(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try HTTPSupport.operatorJSON(try await push.info(try await applications.named(in: context)))
    }

    @Sendable func showBranding(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try HTTPSupport.operatorJSON(try await branding.info(try await applications.named(in: context)))
    }

    @Sendable func updateBranding(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let application = try await applications.named(in: context)
        let body = try await HTTPSupport.decode(UpdateApplicationBrandingRequest.self, from: request)
        return try HTTPSupport.operatorJSON(try await branding.update(body, for: application, actor: context.actor))
    }

    @Sendable func showWebhook(_ request: Request, context: AssentRequestContext) async throws -> Response {
        guard let info = try await webhooks.info(try await applications.named(in: context)) else {
            throw AssentServerError.notFound("The application has no webhook of its own.")
        }
        return try HTTPSupport.operatorJSON(info)
    }

    @Sendable func setWebhook(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let application = try await applications.named(in: context)
        let body = try await HTTPSupport.decode(SetApplicationWebhookRequest.self, from: request)
        return try HTTPSupport.operatorJSON(try await webhooks.set(body, for: application, actor: context.actor))
    }

    @Sendable func removeWebhook(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await webhooks.remove(try await applications.named(in: context), actor: context.actor)
        return Response(status: .noContent)
    }

    @Sendable func showRateLimits(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try HTTPSupport.operatorJSON(try await rateLimits.info(try await applications.named(in: context)))
    }

    @Sendable func updateRateLimits(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let application = try await applications.named(in: context)
        let body = try await HTTPSupport.decode(UpdateApplicationRateLimitsRequest.self, from: request)
        return try HTTPSupport.operatorJSON(
            try await rateLimits.update(body.limits, for: application, actor: context.actor))
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
