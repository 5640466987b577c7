import AssentModel
import Foundation
import Hummingbird

/// `GET|PATCH /api/v1/application`: the request's application's (``ApplicationSelection``) keys, SDK configuration
/// and display name.
struct ApplicationController {
    let applications: ApplicationService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.applicationRead).get("application", use: show)
        api.requiring(.applicationWrite).patch("application", use: rename)
    }

    @Sendable func show(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try HTTPSupport.operatorJSON(try Self.info(try await applications.selected(context)))
    }

    @Sendable func rename(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(UpdateApplicationRequest.self, from: request)
        let renamed = try await applications.rename(
            id: try await applications.selected(context).id, to: body.name, actor: context.actor)
        return try HTTPSupport.operatorJSON(try Self.info(renamed))
    }

    static func info(_ application: ApplicationRecord) throws -> ApplicationInfo {
        ApplicationInfo(
            applicationId: application.id, name: application.name, applicationKey: application.applicationKey,
            applicationSecret: application.applicationSecret,
            masterServerPublicKey: application.masterPublicKey.x963.base64EncodedString(),
            sdkConfiguration: try ApplicationService.sdkConfiguration(of: application))
    }
}
