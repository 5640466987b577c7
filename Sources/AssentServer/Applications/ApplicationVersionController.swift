import AssentModel
import Foundation
import Hummingbird

/// `GET|POST /api/v1/applications`, `GET /api/v1/applications/{id}` and its versions: `GET|POST
/// /api/v1/applications/{id}/versions`, `POST /api/v1/applications/{id}/versions/{versionId}/support|unsupport`.
/// `GET|PATCH /api/v1/application` stays for the first application.
struct ApplicationVersionController {
    let applications: ApplicationService
    let versions: ApplicationVersionService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.applicationRead)
            .get("applications", use: list)
            .get("applications/{id}", use: show)
            .get("applications/{id}/versions", use: listVersions)
        api.requiring(.applicationWrite)
            .post("applications", use: createApplication)
            .post("applications/{id}/versions", use: create)
            .post("applications/{id}/versions/{versionId}/support", use: support)
            .post("applications/{id}/versions/{versionId}/unsupport", use: unsupport)
    }

    @Sendable func list(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try HTTPSupport.operatorJSON(
            ApplicationList(
                applications: try await applications.all().filter { context.permits($0.id) }
                    .map(ApplicationController.info)))
    }

    @Sendable func createApplication(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try context.requireEveryApplication()
        let body = try await HTTPSupport.decode(CreateApplicationRequest.self, from: request)
        let application = try await applications.create(named: body.name, actor: context.actor)
        return try HTTPSupport.operatorJSON(try ApplicationController.info(application), status: .created)
    }

    @Sendable func show(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try HTTPSupport.operatorJSON(try ApplicationController.info(try await application(context)))
    }

    @Sendable func listVersions(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let application = try await application(context)
        let list = try await versions.versions(applicationId: application.id)
        return try HTTPSupport.operatorJSON(
            ApplicationVersionList(versions: try list.map { try Self.info($0, application: application) }))
    }

    @Sendable func create(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let application = try await application(context)
        let body = try await HTTPSupport.decode(CreateApplicationVersionRequest.self, from: request)
        let version = try await versions.create(applicationId: application.id, name: body.name, actor: context.actor)
        return try HTTPSupport.operatorJSON(try Self.info(version, application: application), status: .created)
    }

    @Sendable func support(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await setSupported(true, context)
    }

    @Sendable func unsupport(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await setSupported(false, context)
    }

    private func setSupported(_ supported: Bool, _ context: AssentRequestContext) async throws -> Response {
        let application = try await application(context)
        let version = try await versions.setSupported(
            applicationId: application.id, versionId: try context.parameter("versionId"), supported: supported,
            actor: context.actor)
        return try HTTPSupport.operatorJSON(try Self.info(version, application: application))
    }

    private func application(_ context: AssentRequestContext) async throws -> ApplicationRecord {
        try await applications.named(in: context)
    }

    static func info(_ version: ApplicationVersionRecord, application: ApplicationRecord) throws
        -> ApplicationVersionInfo
    {
        ApplicationVersionInfo(
            versionId: version.id, applicationId: version.applicationId, name: version.name,
            applicationKey: version.applicationKey, applicationSecret: version.applicationSecret,
            supported: version.supported, createdAt: Date(millis: version.createdAt),
            sdkConfiguration: try ApplicationVersionService.sdkConfiguration(of: version, application: application))
    }
}
