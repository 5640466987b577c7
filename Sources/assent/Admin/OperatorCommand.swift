import ArgumentParser
import AssentModel
import Foundation

/// `assent admin operator create|list|disable|enable|reset`: operator accounts (the console's people).
struct OperatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operator",
        abstract: "Operator accounts: the people who sign in to the console with a password and a second factor.",
        discussion: """
            Roles: admin (everything), operator (activations, operations, login accounts), auditor (reads \
            everything, the audit trail included, changes nothing), support (reads, blocks and unblocks phones, \
            revokes remembered browsers). A new or reset account gets a one-time set-up link (24 hours) where its \
            person scans the TOTP key and sets a password; passkeys and a phone that approves sign-ins are added on \
            the console's Your account page. Needs the scope operators:write.
            """,
        subcommands: [List.self, Create.self, Disable.self, Enable.self, Reset.self], defaultSubcommand: List.self)

    static func table(_ info: OperatorInfo, link: String? = nil) -> [[String]] {
        TextTable.fields([
            ("name", info.name), ("role", info.role), ("state", info.state),
            ("applications", info.applications?.joined(separator: ", ") ?? "every one"),
            ("scopes", info.scopes.joined(separator: " ")), ("createdAt", info.createdAt.formatted(.iso8601)),
            ("lastSignInAt", info.lastSignInAt?.formatted(.iso8601)), ("setupLink", link),
        ])
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the operator accounts.", discussion: "Example: assent admin operator list")
        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            try await CLIFailure.reporting {
                let list = try await connection.client().get("api/v1/operators", as: OperatorList.self)
                try connection.output(list) {
                    [["NAME", "ROLE", "STATE", "APPLICATIONS", "LAST SIGN-IN"]]
                        + list.operators.map {
                            [
                                $0.name, $0.role, $0.state, $0.applications?.joined(separator: ",") ?? "every one",
                                $0.lastSignInAt?.formatted(.iso8601) ?? "-",
                            ]
                        }
                }
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an operator account and print its one-time set-up link.",
            discussion: "Example: assent admin operator create audrey --role auditor")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The name the person signs in with (letters, digits, . _ - @).") var name: String
        @Option(help: "admin, operator, auditor or support.") var role: String
        @Option(help: "Limit the account to these application ids (comma-separated; default: every one).")
        var applications: String?

        func run() async throws {
            try await CLIFailure.reporting {
                let limited = applications.map {
                    $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                }
                let setup = try await connection.client().post(
                    "api/v1/operators", body: CreateOperatorRequest(name: name, role: role, applications: limited),
                    as: OperatorSetup.self)
                try connection.output(setup) { OperatorCommand.table(setup.operator, link: setup.setupLink) }
            }
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable an operator account: it cannot sign in, and its console sessions end.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The operator's name.") var name: String

        func run() async throws { try await OperatorCommand.change(name, "disable", connection) }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable a disabled operator account again.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The operator's name.") var name: String

        func run() async throws { try await OperatorCommand.change(name, "enable", connection) }
    }

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A new set-up link for an operator who lost the password or the authenticator.",
            discussion: """
                The old password, TOTP key and passkeys stop working at once.
                Example: assent admin operator reset olga
                """)
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The operator's name.") var name: String

        func run() async throws {
            try await CLIFailure.reporting {
                let setup = try await connection.client().post(
                    "api/v1/operators/\(name)/reset", body: Optional<String>.none, as: OperatorSetup.self)
                try connection.output(setup) { OperatorCommand.table(setup.operator, link: setup.setupLink) }
            }
        }
    }

    static func change(_ name: String, _ verb: String, _ connection: ConnectionOptions) async throws {
        try await CLIFailure.reporting {
            let info = try await connection.client().post(
                "api/v1/operators/\(name)/\(verb)", body: Optional<String>.none, as: OperatorInfo.self)
            try connection.output(info) { OperatorCommand.table(info) }
        }
    }
}
