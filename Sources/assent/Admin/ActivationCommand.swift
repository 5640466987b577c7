import ArgumentParser
import AssentModel
import Foundation

/// `assent admin activation …`.
struct ActivationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "activation", abstract: "Create, inspect and change activations.",
        subcommands: [
            Create.self, Show.self, List.self, Commit.self, Block.self, Unblock.self, Remove.self, Deliveries.self,
        ])

    static func table(_ info: ActivationInfo) -> [[String]] {
        TextTable.fields([
            ("activationId", info.activationId), ("userId", info.userId), ("status", info.status),
            ("commitMode", info.commitMode), ("failedAttempts", "\(info.failedAttempts)/\(info.maxFailedAttempts)"),
            ("blockedReason", info.blockedReason), ("fingerprint", info.fingerprint),
            ("activationName", info.activationName), ("platform", info.platform), ("deviceInfo", info.deviceInfo),
            ("createdAt", info.createdAt.formatted(.iso8601)), ("lastUsedAt", info.lastUsedAt?.formatted(.iso8601)),
        ])
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an activation and print its one-time code and QR code.",
            discussion: """
                On a terminal the activation QR code is drawn below the table for the phone to scan (--no-qr to \
                leave it out, --qr to draw it into a pipe or file).

                Example: assent admin activation create --user alice --commit-mode manual
                """)
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var qr: QROptions
        @Option(help: "The user the activation belongs to.") var user: String
        @Option(help: "auto: active once the device finishes; manual: an operator commits.") var commitMode = "auto"

        func run() async throws {
            try await CLIFailure.reporting {
                let created = try await connection.client().post(
                    "api/v1/activations", body: CreateActivationRequest(userId: user, commitMode: commitMode),
                    as: CreateActivationResponse.self)
                try connection.output(created) {
                    TextTable.fields([
                        ("activationId", created.activationId), ("activationCode", created.activationCode),
                        ("activationQRCode", created.activationQRCode),
                        ("expiresAt", created.expiresAt.formatted(.iso8601)),
                    ])
                }
                try qr.draw(created.activationQRCode, json: connection.json)
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one activation.", discussion: "Example: assent admin activation show <id>")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The activation id.") var id: String

        func run() async throws {
            try await CLIFailure.reporting {
                let info = try await connection.client().get("api/v1/activations/\(id)", as: ActivationInfo.self)
                try connection.output(info) { ActivationCommand.table(info) }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a user's activations.", discussion: "Example: assent admin activation list --user alice")
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The user.") var user: String

        func run() async throws {
            try await CLIFailure.reporting {
                let list = try await connection.client().get(
                    "api/v1/users/\(user)/activations", as: ActivationList.self)
                try connection.output(list) {
                    [["ACTIVATION", "STATUS", "NAME", "FAILED", "CREATED"]]
                        + list.activations.map {
                            [
                                $0.activationId, $0.status, $0.activationName ?? "-",
                                "\($0.failedAttempts)/\($0.maxFailedAttempts)", $0.createdAt.formatted(.iso8601),
                            ]
                        }
                }
            }
        }
    }

    /// Commit, block, unblock and remove differ only in method, path and an optional body.
    static func change(
        _ method: String, _ path: String, body: (some Encodable)? = Optional<String>.none,
        _ connection: ConnectionOptions
    ) async throws {
        try await CLIFailure.reporting {
            let info = try await connection.client().send(method, path, body: body, as: ActivationInfo.self)
            try connection.output(info) { ActivationCommand.table(info) }
        }
    }

    struct Commit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Commit an activation in PENDING_COMMIT (compare the fingerprint with the user first).",
            discussion: "Example: assent admin activation commit <id>")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The activation id.") var id: String
        func run() async throws {
            try await ActivationCommand.change("POST", "api/v1/activations/\(id)/commit", connection)
        }
    }

    struct Block: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Block an ACTIVE activation.",
            discussion: "Example: assent admin activation block <id> --reason LOST")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The activation id.") var id: String
        @Option(help: "Why (kept in the activation and the audit trail).") var reason: String?

        func run() async throws {
            try await ActivationCommand.change(
                "POST", "api/v1/activations/\(id)/block", body: BlockActivationRequest(reason: reason), connection)
        }
    }

    struct Unblock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Unblock a BLOCKED activation and reset its failed attempts.",
            discussion: "Example: assent admin activation unblock <id>")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The activation id.") var id: String
        func run() async throws {
            try await ActivationCommand.change("POST", "api/v1/activations/\(id)/unblock", connection)
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove an activation for good.", discussion: "Example: assent admin activation remove <id>")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The activation id.") var id: String
        func run() async throws { try await ActivationCommand.change("DELETE", "api/v1/activations/\(id)", connection) }
    }
}
