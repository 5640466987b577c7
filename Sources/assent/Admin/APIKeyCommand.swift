import ArgumentParser
import AssentModel
import AssentServer
import Foundation
import Logging

/// `assent admin api-key …`.
struct APIKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api-key", abstract: "Create, list and revoke operator API keys.",
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an API key directly in the server's store (no running server needed).",
            discussion: """
                Run it on the server's machine with the same --data-dir / --database as `assent serve`.
                Example: assent admin api-key create --name ci --scope activations:read --scope audit:read
                """)
        @Option(help: "A name to recognise the key by.") var name: String
        @Option(help: "A scope (repeatable): \(APIScope.allCases.map(\.rawValue).joined(separator: ", ")). Default: *.")
        var scope: [String] = []
        @Option(help: "Limit the key to these application ids (comma-separated; default: every one).")
        var applications: String?
        @OptionGroup var storage: StorageOptions
        @Flag(help: "Print {\"apiKey\": …} as JSON.") var json = false

        func run() async throws {
            var logger = Logger(label: "assent.admin")
            logger.logLevel = .warning
            try await CLIFailure.reporting {
                let scopes: Set<APIScope> = try Set(
                    (scope.isEmpty ? ["*"] : scope).map {
                        guard let scope = APIScope(rawValue: $0) else { throw ValidationError("Unknown scope \($0).") }
                        return scope
                    })
                let store = try await ServerBootstrap.openStore(storage.location, logger: logger)
                do {
                    let environment = ServerEnvironment(store: store, logger: logger)
                    let (record, key) = try await Services(environment).apiKeys.create(
                        name: name, scopes: scopes,
                        applications: applications.map {
                            $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                        }, actor: "cli")
                    try await store.shutdown()
                    if json {
                        print(#"{"apiKey":"\#(key)","id":"\#(record.id)"}"#)
                    } else {
                        print("API key \(record.name) (\(record.id)), shown once:\n\(key)")
                    }
                } catch {
                    try? await store.shutdown()
                    throw error
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List API keys (names and scopes, never the keys).",
            discussion: "Example: assent admin api-key list")
        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            try await CLIFailure.reporting {
                let list = try await connection.client().get("api/v1/api-keys", as: APIKeyList.self)
                try connection.output(list) {
                    [["ID", "NAME", "SCOPES", "CREATED"]]
                        + list.apiKeys.map {
                            [$0.id, $0.name, $0.scopes.joined(separator: " "), $0.createdAt.formatted(.iso8601)]
                        }
                }
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke an API key.", discussion: "Example: assent admin api-key revoke <id>")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The key's id (from `api-key list`).") var id: String

        func run() async throws {
            try await CLIFailure.reporting {
                _ = try await connection.client().delete("api/v1/api-keys/\(id)", as: OperatorClient.Empty.self)
                try printDone("Revoked API key \(id).", json: connection.json, fields: ["revoked": id])
            }
        }
    }
}
