import ArgumentParser
import AssentModel
import Foundation

/// `assent admin …`: the operator API from the command line.
struct AdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract:
            "Manage a running Assent server: applications, activations, operations, API keys, operator accounts, audit, clients, two-factor login, the key-encryption key.",
        discussion: """
            Commands talk to the operator API at --url with --api-key (or ASSENT_URL / ASSENT_API_KEY). \
            `api-key create` works on the store directly, so it can bootstrap a server's first key; so do `kek` \
            and `backup`, \
            so key material never crosses HTTP.
            """,
        subcommands: [
            ApplicationCommand.self, ActivationCommand.self, OperationCommand.self, APIKeyCommand.self,
            AuditCommand.self, ClientCommand.self, TFACommand.self, OperatorCommand.self, KEKCommand.self,
            BackupCommand.self, RADIUSClientCommand.self,
        ]
    )
}

/// `--url`, `--api-key` and `--json`, shared by every command that talks to the server.
struct ConnectionOptions: ParsableArguments {
    @Option(help: "Server URL. Env: ASSENT_URL. Default: http://127.0.0.1:8080.") var url: String?
    @Option(help: "Operator API key. Env: ASSENT_API_KEY.") var apiKey: String?
    @Option(
        help: "The application to work with: its id (default: the first application). Env: ASSENT_APPLICATION.")
    var application: String?
    @Flag(help: "Print JSON instead of a table.") var json = false

    /// The application named by `--application` or `ASSENT_APPLICATION`, if any.
    var selectedApplication: String? {
        (application ?? ProcessInfo.processInfo.environment["ASSENT_APPLICATION"]).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The id of the application the command works with: the one named, else the server's first.
    func applicationId(_ client: OperatorClient) async throws -> String {
        if let selectedApplication { return selectedApplication }
        return try await client.get("api/v1/application", as: ApplicationInfo.self).applicationId
    }

    func client() throws -> OperatorClient {
        let environment = ProcessInfo.processInfo.environment
        let text = url ?? environment["ASSENT_URL"] ?? "http://127.0.0.1:8080"
        guard let baseURL = URL(string: text), baseURL.scheme == "http" || baseURL.scheme == "https" else {
            throw ValidationError("--url must be an http(s) URL.")
        }
        guard let key = apiKey ?? environment["ASSENT_API_KEY"], !key.isEmpty else {
            // Not authorised (4), as the exit-code table says for a missing key: not a usage error.
            throw OperatorClient.Failure(
                code: "ERR_NO_API_KEY", message: "No operator API key: pass --api-key or set ASSENT_API_KEY.",
                exitCode: 4)
        }
        return OperatorClient(baseURL: baseURL, apiKey: key, application: selectedApplication)
    }

    /// Prints `value` as JSON, or as the table `rows` make.
    func output<T: Encodable>(_ value: T, table: () -> [[String]]) throws {
        try printOutput(value, json: json, table: table)
    }
}

/// Prints `value` as pretty JSON (ISO 8601 dates, sorted keys) when `json`, else the table `rows` make.
func printOutput<T: Encodable>(_ value: T, json: Bool, table: () -> [[String]]) throws {
    if json {
        let encoder = OperatorJSON.encoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    } else {
        print(TextTable.render(table()))
    }
}

/// What a command that changes something prints when it is done: one sentence, verb first in the past tense
/// ("Removed client c-1."), or with `--json` the object `fields`.
func printDone(_ sentence: String, json: Bool, fields: [String: String]) throws {
    if json {
        try printOutput(fields, json: true) { [] }
    } else {
        print(sentence)
    }
}

/// Left-aligned columns separated by two spaces; the first row is the header.
enum TextTable {
    static func render(_ rows: [[String]]) -> String {
        guard let columns = rows.map(\.count).max(), columns > 0 else { return "" }
        let widths = (0..<columns).map { column in
            rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0
        }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// A two-column field/value table.
    static func fields(_ pairs: [(String, String?)]) -> [[String]] {
        [["FIELD", "VALUE"]] + pairs.map { [$0.0, $0.1 ?? "-"] }
    }
}

struct ApplicationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "application",
        abstract: "Applications: their name, versions, push credentials, branding, webhook and limits.",
        discussion: """
            Every admin command works with the first application unless --application ID (or ASSENT_APPLICATION) \
            names another.
            """,
        subcommands: [
            Show.self, List.self, Create.self, Update.self, VersionCommand.self, PushCommand.self, BrandingCommand.self,
            WebhookCommand.self, RateLimitsCommand.self,
        ],
        defaultSubcommand: Show.self)

    static func table(_ info: ApplicationInfo) -> [[String]] {
        TextTable.fields([
            ("applicationId", info.applicationId), ("name", info.name), ("applicationKey", info.applicationKey),
            ("masterServerPublicKey", info.masterServerPublicKey), ("sdkConfiguration", info.sdkConfiguration),
        ])
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the application's name, keys and SDK configuration string (the default).",
            discussion: """
                The first application's, or the one the id (or --application) names.
                Example: assent admin application show 0b6f…  (or: assent admin application --json)
                """)
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The application's id (as --application).") var id: String?

        func validate() throws {
            if let id, let chosen = connection.application, chosen != id {
                throw ValidationError("The id and --application name two applications: give one of them.")
            }
        }

        func run() async throws {
            try await CLIFailure.reporting {
                var connection = connection
                if let id { connection.application = id }
                let info = try await connection.client().get("api/v1/application", as: ApplicationInfo.self)
                try connection.output(info) { ApplicationCommand.table(info) }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the applications, the first (the default) first.",
            discussion: "Example: assent admin application list")
        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            try await CLIFailure.reporting {
                let list = try await connection.client().get("api/v1/applications", as: ApplicationList.self)
                try connection.output(list) {
                    [["APPLICATION", "NAME", "APPLICATION KEY"]]
                        + list.applications.map { [$0.applicationId, $0.name, $0.applicationKey] }
                }
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an application with its own master key pair, key and secret.",
            discussion: """
                Prints its id and SDK configuration string: configure the app with the string, and pass \
                --application ID to the other admin commands to work with it.
                Example: assent admin application create --name "Example Bank Business"
                """)
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The display name (1 to 100 characters, unique).") var name: String

        func run() async throws {
            try await CLIFailure.reporting {
                let info = try await connection.client().post(
                    "api/v1/applications", body: CreateApplicationRequest(name: name), as: ApplicationInfo.self)
                try connection.output(info) { ApplicationCommand.table(info) }
            }
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set the application's display name.",
            discussion: """
                The name people see on the sign-in and approval pages, in the sign-in requests on their phones and as \
                the issuer in their authenticator app. Other server processes show it within 30 seconds.
                Example: assent admin application update --name "Example Bank"
                """)
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The display name (1 to 100 characters).") var name: String

        func run() async throws {
            try await CLIFailure.reporting {
                let info = try await connection.client().send(
                    "PATCH", "api/v1/application", body: UpdateApplicationRequest(name: name), as: ApplicationInfo.self)
                try connection.output(info) { ApplicationCommand.table(info) }
            }
        }
    }
}

struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit", abstract: "Show security events; export and check the tamper-evident audit chain.",
        subcommands: [AuditListCommand.self, AuditExport.self, AuditKey.self, AuditChainState.self],
        defaultSubcommand: AuditListCommand.self)
}

/// `assent admin audit [list]`.
struct AuditListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Show security events, newest first.",
        discussion: """
            Every application's events and the organisation's own; with --application (or a key limited to \
            applications), that application's only. The next page: --before the last ID shown.
            Example: assent admin audit --user alice --limit 20
            Example: assent admin audit --type console. --from 2026-11-01
            """)
    @OptionGroup var connection: ConnectionOptions
    @Option(help: "Only events of this activation.") var activation: String?
    @Option(help: "Only events of this user.") var user: String?
    @Option(help: "Only events of this type, or whose type starts with it (console.).") var type: String?
    @Option(help: "Only events at or after this time (RFC 3339, or a date: midnight UTC).") var from: String?
    @Option(help: "Only events before this time (RFC 3339, or a date).") var to: String?
    @Option(help: "Only events older than this event id (the next page).") var before: Int64?
    @Option(help: "At most this many events (1-1000).") var limit = 50

    func run() async throws {
        try await CLIFailure.reporting {
            let filters: [(String, String?)] = [
                ("limit", String(limit)), ("activationId", activation), ("userId", user), ("type", type),
                ("from", from), ("to", to), ("before", before.map(String.init)),
            ]
            let query = filters.compactMap { name, value in value.map { URLQueryItem(name: name, value: $0) } }
            let list = try await connection.client().get("api/v1/audit", query: query, as: AuditList.self)
            try connection.output(list) {
                [["ID", "AT", "TYPE", "APPLICATION", "ACTIVATION", "USER", "ACTOR", "DETAIL"]]
                    + list.events.map {
                        [
                            String($0.id), $0.at.formatted(.iso8601), $0.type, $0.applicationId ?? "-",
                            $0.activationId ?? "-", $0.userId ?? "-", $0.actor, $0.detail,
                        ]
                    }
            }
        }
    }
}
