import AssentModel
import Foundation
import Hummingbird

/// `/api/v1/clients`: the OpenID provider's relying parties; `/api/v1/openid/keys/rotate`: its signing keys.
struct ClientController {
    let applications: ApplicationService
    let clients: ClientService
    let signingKeys: SigningKeyService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.clientsRead)
            .get("clients", use: list)
            .get("clients/{id}", use: show)
        api.requiring(.clientsWrite)
            .post("clients", use: create)
            .delete("clients/{id}", use: remove)
            .post("openid/keys/rotate", use: rotateKeys)
    }

    @Sendable func create(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(CreateClientRequest.self, from: request)
        let (client, secret) = try await clients.create(
            body, application: try await applications.selected(context), actor: context.actor)
        return try HTTPSupport.operatorJSON(
            CreateClientResponse(client: ClientService.info(client), clientSecret: secret), status: .created)
    }

    @Sendable func list(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let application = try await applications.selected(context)
        return try HTTPSupport.operatorJSON(
            ClientList(
                clients: try await clients.all().filter { $0.applicationId == application.id }.map(ClientService.info)))
    }

    @Sendable func show(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try HTTPSupport.operatorJSON(ClientService.info(try await client(context)))
    }

    @Sendable func remove(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await clients.remove(try client(context), actor: context.actor)
        return Response(status: .noContent)
    }

    @Sendable func rotateKeys(_ request: Request, context: AssentRequestContext) async throws -> Response {
        // The signing keys sign for every application: a key limited to some may not replace them (or grow the JWKS).
        try context.requireEveryApplication("the OpenID signing keys sign for every application")
        return try HTTPSupport.operatorJSON(["keyIds": try await signingKeys.rotate(actor: context.actor)])
    }

    /// The client the path names, when it belongs to the request's application.
    private func client(_ context: AssentRequestContext) async throws -> OpenIDClientRecord {
        let client = try await clients.get(id: try context.parameter("id"))
        try await applications.require(
            client.applicationId, in: context, else: AssentServerError.notFound("No client has this id."))
        return client
    }
}
