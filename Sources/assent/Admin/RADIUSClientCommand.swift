import ArgumentParser
import AssentServer
import Foundation
import Logging

/// `assent admin radius-client …`: the VPN gateways FreeRADIUS answers, each with its shared secret, registered in
/// the server's store (run on the server's machine with serve's --data-dir / --database).
struct RADIUSClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "radius-client",
        abstract: "Register, list and remove the VPN gateways (RADIUS clients) FreeRADIUS answers.",
        discussion: """
            FreeRADIUS learns a gateway's shared secret from Assent at its first packet \
            (integrations/freeradius/sites-available/assent-clients); its people sign in to the gateway's \
            application. docs/INTEGRATIONS.md.
            """,
        subcommands: [Add.self, List.self, Remove.self])

    /// Opens the store, runs `body` with the services, closes the store.
    static func withServices<T>(_ storage: StorageOptions, _ body: (Services) async throws -> T) async throws -> T {
        var logger = Logger(label: "assent.admin")
        logger.logLevel = .warning
        let store = try await ServerBootstrap.openStore(storage.location, logger: logger)
        do {
            let value = try await body(Services(ServerEnvironment(store: store, logger: logger)))
            try await store.shutdown()
            return value
        } catch {
            try? await store.shutdown()
            throw error
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a gateway; its new shared secret is printed (set it on the gateway).",
            discussion: "Example: assent admin radius-client add --name vpn-gw-1 --network 192.0.2.10")
        @Option(help: "A short name: 1 to 32 letters, digits, '-', '_' or '.'.") var name: String
        @Option(help: "The address or network its packets come from (192.0.2.10, 10.8.0.0/24).") var network: String
        @Option(help: "The application whose accounts sign in through it (id; default: the default application).")
        var application: String?
        @OptionGroup var storage: StorageOptions
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            try await CLIFailure.reporting {
                let client = try await RADIUSClientCommand.withServices(storage) {
                    try await $0.radiusClients.add(
                        name: name, network: network, applicationId: application, actor: "cli")
                }
                if json {
                    say(
                        #"{"name":"\#(client.name)","network":"\#(client.network)","applicationId":"\#(client.applicationId)","secret":"\#(client.secret)"}"#
                    )
                } else {
                    say("RADIUS client \(client.name) (\(client.network)); its shared secret:\n\(client.secret)")
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the gateways (never their secrets).", discussion: "Example: assent admin radius-client list"
        )
        @OptionGroup var storage: StorageOptions

        func run() async throws {
            try await CLIFailure.reporting {
                let clients = try await RADIUSClientCommand.withServices(storage) { try await $0.radiusClients.list() }
                say("NAME\tNETWORK\tAPPLICATION")
                for client in clients { say("\(client.name)\t\(client.network)\t\(client.applicationId)") }
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a gateway: FreeRADIUS stops answering it once its cached entry expires.",
            discussion: "Example: assent admin radius-client remove --name vpn-gw-1")
        @Option(help: "The gateway's name.") var name: String
        @OptionGroup var storage: StorageOptions

        func run() async throws {
            try await CLIFailure.reporting {
                try await RADIUSClientCommand.withServices(storage) {
                    try await $0.radiusClients.remove(name: name, actor: "cli")
                }
                say("RADIUS client \(name) removed.")
            }
        }
    }
}
