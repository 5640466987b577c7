import AssentModel
import Foundation
import Hummingbird

extension OperatorRoutes {
    /// `/api/v1/clients`: the OpenID provider's relying parties; `/api/v1/openid/keys/rotate`.
    func registerClients(on api: RouterGroup<AssentRequestContext>) {
        let clients = ClientService(environment: environment)
        api.post("clients") { request, context in
            try require(.clientsWrite, context)
            let body = try await HTTPSupport.decode(CreateClientRequest.self, from: request)
            let (client, secret) = try await clients.create(
                body, application: try await defaultApplication(), actor: actor(context))
            return try json(
                CreateClientResponse(client: ClientService.info(client), clientSecret: secret), status: .created)
        }
        api.get("clients") { _, context in
            try require(.clientsRead, context)
            return try json(ClientList(clients: try await environment.store.clients().map(ClientService.info)))
        }
        api.get("clients/:id") { _, context in
            try require(.clientsRead, context)
            let id = try context.parameters.require("id")
            guard let client = try await environment.store.client(id: id) else {
                throw AssentServerError.notFound("No OpenID client has id \(id).")
            }
            return try json(ClientService.info(client))
        }
        api.delete("clients/:id") { _, context in
            try require(.clientsWrite, context)
            try await clients.remove(id: try context.parameters.require("id"), actor: actor(context))
            return Response(status: .noContent)
        }
        api.post("openid/keys/rotate") { _, context in
            try require(.clientsWrite, context)
            let kids = try await SigningKeyService(environment: environment).rotate(actor: actor(context))
            return try json(["keyIds": kids])
        }
    }
}
