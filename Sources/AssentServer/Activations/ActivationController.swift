import AssentModel
import Foundation
import Hummingbird

/// `/api/v1/activations` and a user's activations: create, read, commit, block, unblock, remove.
struct ActivationController {
    let applications: ApplicationService
    let activations: ActivationService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.activationsRead)
            .get("activations/{id}", use: show)
            .get("users/{userId}/activations", use: list)
        api.requiring(.activationsWrite)
            .post("activations", use: create)
            .post("activations/{id}/commit", use: commit)
            .post("activations/{id}/block", use: block)
            .post("activations/{id}/unblock", use: unblock)
            .delete("activations/{id}", use: remove)
    }

    @Sendable func create(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(CreateActivationRequest.self, from: request)
        guard let mode = CommitMode(rawValue: body.commitMode ?? CommitMode.auto.rawValue) else {
            throw AssentServerError.invalidRequest("commitMode is auto or manual.")
        }
        let created = try await activations.create(
            application: try await applications.selected(context), userId: body.userId, commitMode: mode,
            actor: context.actor)
        let signature = created.codeSignature.base64EncodedString()
        return try HTTPSupport.operatorJSON(
            CreateActivationResponse(
                activationId: created.activation.id, activationCode: created.code.value,
                activationSignature: signature, activationQRCode: "\(created.code.value)#\(signature)",
                expiresAt: Date(millis: created.activation.codeExpiresAt)),
            status: .created)
    }

    @Sendable func show(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let activation = try await activation(context)
        return try HTTPSupport.operatorJSON(
            try Self.info(activation, push: try await activations.pushRegistration(of: activation.id)))
    }

    @Sendable func list(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let application = try await applications.selected(context)
        let list = try await activations.list(userId: try context.parameter("userId"))
            .filter { $0.0.applicationId == application.id }
        return try HTTPSupport.operatorJSON(ActivationList(activations: try list.map { try Self.info($0, push: $1) }))
    }

    @Sendable func commit(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(try await activations.commit(id: try activation(context).id, actor: context.actor))
    }

    @Sendable func block(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.optionalBody(
            BlockActivationRequest.self, from: request, expected: "{\"reason\": \"…\"}")
        return try await answer(
            try await activations.block(id: try activation(context).id, reason: body?.reason, actor: context.actor))
    }

    @Sendable func unblock(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(try await activations.unblock(id: try activation(context).id, actor: context.actor))
    }

    @Sendable func remove(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(try await activations.remove(id: try activation(context).id, actor: context.actor))
    }

    /// The activation the path names, when it belongs to the request's application.
    private func activation(_ context: AssentRequestContext) async throws -> ActivationRecord {
        let activation = try await activations.get(id: try context.parameter("id"))
        try await applications.require(
            activation.applicationId, in: context, else: AssentServerError.activationNotFound())
        return activation
    }

    /// The activation after a change, with its push registration.
    private func answer(_ activation: ActivationRecord) async throws -> Response {
        try HTTPSupport.operatorJSON(
            try Self.info(activation, push: try await activations.pushRegistration(of: activation.id)))
    }

    /// The operator's view of an activation with its push registration (platform and time, never the token).
    static func info(_ activation: ActivationRecord, push: PushRegistrationRecord?) throws -> ActivationInfo {
        var info = ActivationInfo(
            activationId: activation.id, userId: activation.userId, status: activation.state.name,
            commitMode: activation.commitMode.rawValue, failedAttempts: activation.failedAttempts,
            maxFailedAttempts: activation.maxFailedAttempts, blockedReason: activation.blockedReason,
            platform: activation.platform, deviceInfo: activation.deviceInfo,
            activationName: activation.activationName, fingerprint: try activation.fingerprint(),
            createdAt: Date(millis: activation.createdAt), lastUsedAt: activation.lastUsedAt.map(Date.init(millis:)))
        if let push {
            info.push = PushRegistrationInfo(
                platform: push.platform.rawValue, environment: push.environment?.rawValue,
                registeredAt: Date(millis: push.registeredAt))
        }
        return info
    }
}
