import ArgumentParser
import AssentCrypto
import AssentModel
import Foundation

/// `assent admin client …`: relying parties of the OpenID provider (the authorization code flow and CIBA).
struct ClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client", abstract: "Register, list, show and remove OpenID clients.",
        subcommands: [Create.self, List.self, Show.self, Remove.self, RotateKeys.self])

    static func rows(_ clients: [ClientInfo]) -> [[String]] {
        [["CLIENT ID", "NAME", "TYPE", "GRANTS", "MODE", "AUTH", "ALG", "ENDPOINT", "REDIRECT URIS"]]
            + clients.map {
                [
                    $0.clientId, $0.name, $0.type, $0.grantTypes.joined(separator: ","), $0.deliveryMode,
                    $0.tokenEndpointAuthMethod, $0.idTokenSignedResponseAlg, $0.notificationEndpoint ?? "-",
                    $0.redirectUris.isEmpty ? "-" : $0.redirectUris.joined(separator: " "),
                ]
            }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a client; its secret is printed once.",
            discussion: """
                A website's sign-in (authorization code flow):
                  assent admin client create --name shop --redirect-uri https://shop.example/callback
                A native or single-page app (no secret, PKCE):
                  assent admin client create --name app --public --redirect-uri com.example.app:/callback
                Backchannel authentication (CIBA):
                  assent admin client create --name bank --mode ping --endpoint https://bank.example/ciba
                """)
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "A name to recognise the client by.") var name: String
        @Option(help: "Delivery mode: poll, ping or push.") var mode = "poll"
        @Option(help: "The notification endpoint of a ping or push client (https; http only to loopback).")
        var endpoint: String?
        @Option(help: "Token endpoint authentication: client_secret_basic, client_secret_post or private_key_jwt.")
        var auth = "client_secret_basic"
        @Option(help: "A JWK Set file with the public keys of a private_key_jwt client.") var jwksFile: String?
        @Option(help: "ID token signature: RS256 or ES256.") var alg = "RS256"
        @Option(help: "A scope besides openid (repeatable): profile. Default: profile.") var scope: [String] = []
        @Option(help: "A redirect URI of the authorization code flow (repeatable, compared exactly).")
        var redirectUri: [String] = []
        @Flag(help: "A public client (a native or browser app): no secret, PKCE required.") var `public` = false
        @Option(
            help: """
                A grant type (repeatable): authorization_code or ciba. Default: authorization_code with \
                --redirect-uri, else ciba.
                """)
        var grant: [String] = []
        @Option(help: "Where logout may send the browser afterwards (repeatable, compared exactly).")
        var postLogoutRedirectUri: [String] = []
        @Option(help: "Where a logout token goes when a session ends (https; http only to loopback).")
        var backchannelLogoutUri: String?
        @Flag(help: "A client of another party: people are asked to allow it (consent).") var thirdParty = false

        func run() async throws {
            var jwks: JWKSet?
            if let jwksFile {
                guard let data = FileManager.default.contents(atPath: jwksFile),
                    let keys = try? JSONDecoder().decode(JWKSet.self, from: data)
                else { throw ValidationError("\(jwksFile) is not a readable JWK Set ({\"keys\": [...]}).") }
                jwks = keys
            }
            try await CLIFailure.reporting {
                let created = try await connection.client().post(
                    "api/v1/clients",
                    body: CreateClientRequest(
                        name: name, deliveryMode: mode, notificationEndpoint: endpoint,
                        scopes: scope.isEmpty ? nil : scope, tokenEndpointAuthMethod: `public` ? nil : auth,
                        idTokenSignedResponseAlg: alg, jwks: jwks,
                        redirectUris: redirectUri.isEmpty ? nil : redirectUri,
                        type: `public` ? "public" : nil, grantTypes: grant.isEmpty ? nil : grant,
                        postLogoutRedirectUris: postLogoutRedirectUri.isEmpty ? nil : postLogoutRedirectUri,
                        backchannelLogoutUri: backchannelLogoutUri, thirdParty: thirdParty ? true : nil),
                    as: CreateClientResponse.self)
                if connection.json {
                    try printOutput(created, json: true) { [] }
                } else {
                    print("Client \(created.client.name): \(created.client.clientId)")
                    if let secret = created.clientSecret { print("Secret (shown once): \(secret)") }
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List clients (never their secrets).", discussion: "Example: assent admin client list")
        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            try await CLIFailure.reporting {
                let list = try await connection.client().get("api/v1/clients", as: ClientList.self)
                try connection.output(list) { ClientCommand.rows(list.clients) }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one client.", discussion: "Example: assent admin client show <client id>")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The client id.") var id: String

        func run() async throws {
            try await CLIFailure.reporting {
                let client = try await connection.client().get("api/v1/clients/\(id)", as: ClientInfo.self)
                try connection.output(client) { ClientCommand.rows([client]) }
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a client; its outstanding requests can no longer be redeemed.",
            discussion: "Example: assent admin client remove <client id>")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The client id.") var id: String

        func run() async throws {
            try await CLIFailure.reporting {
                _ = try await connection.client().delete("api/v1/clients/\(id)", as: OperatorClient.Empty.self)
                try printDone("Removed client \(id).", json: connection.json, fields: ["removed": id])
            }
        }
    }

    struct RotateKeys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-keys",
            abstract: "Rotate the provider's ID-token signing keys (old keys stay published while their tokens live).",
            discussion: "Example: assent admin client rotate-keys")
        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            try await CLIFailure.reporting {
                let result = try await connection.client().post(
                    "api/v1/openid/keys/rotate", body: Optional<String>.none, as: [String: [String]].self)
                try connection.output(result) { [["NEW KEY ID"]] + (result["keyIds"] ?? []).map { [$0] } }
            }
        }
    }
}
