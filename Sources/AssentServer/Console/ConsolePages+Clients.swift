import AssentModel
import Foundation
import Hummingbird

/// The console's view of the OpenID provider's clients: what each may do and where it may send people.
extension ConsolePages {
    func addClientRoutes(to console: RouterGroup<ConsoleRequestContext>) {
        console.requiring(.clientsRead).get("clients", use: clients)
    }

    /// `GET /console/clients`: the application's OpenID clients.
    @Sendable func clients(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        let clients = try await clients.all().filter {
            $0.applicationId == visit.application.id
        }
        let page = ConsoleClientsPage(
            empty: clients.isEmpty,
            clients: clients.map { client in
                ConsoleClientsPage.Client(
                    id: client.id, name: client.name,
                    kind: client.isPublic ? "public" : "confidential",
                    party: client.thirdParty ? "third-party" : "first-party",
                    grants: client.grantTypes.joined(separator: ", "),
                    redirectUris: client.redirectUris,
                    logout: client.backchannelLogoutUri,
                    delivery: client.grantTypes.contains(OpenIDClientRecord.cibaGrant) ? client.deliveryMode : nil,
                    created: Self.time(client.createdAt), createdIso: Self.iso(client.createdAt))
            })
        return try await show(page, title: "OpenID clients", visit)
    }
}

/// The OpenID clients (registered with `assent admin client create` or the operator API).
struct ConsoleClientsPage: PageContext {
    static let template = PageTemplate.consoleClients
    struct Client: Sendable {
        var id: String
        var name: String
        var kind: String
        var party: String
        var grants: String
        var redirectUris: [String]
        /// Where back-channel logout tokens go.
        var logout: String?
        /// How a CIBA client receives its answer.
        var delivery: String?
        var created: String
        var createdIso: String
    }
    var empty: Bool
    var clients: [Client]
}
