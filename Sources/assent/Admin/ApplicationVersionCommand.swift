import ArgumentParser
import AssentModel
import Foundation

extension ApplicationCommand {
    /// `assent admin application version create|list|support|unsupport`.
    struct VersionCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "version",
            abstract: "Application versions: a key and secret per app build, each supported or not.",
            discussion: """
                A device whose app uses an unsupported version is refused with APPLICATION_VERSION_UNSUPPORTED \
                until the version is supported again (other server processes follow within 30 seconds).
                """,
            subcommands: [List.self, Create.self, Support.self, Unsupport.self], defaultSubcommand: List.self)

        static func table(_ version: ApplicationVersionInfo) -> [[String]] {
            TextTable.fields([
                ("versionId", version.versionId), ("name", version.name),
                ("supported", version.supported ? "yes" : "no"),
                ("applicationKey", version.applicationKey), ("createdAt", version.createdAt.formatted(.iso8601)),
                ("sdkConfiguration", version.sdkConfiguration),
            ])
        }
    }
}

extension ApplicationCommand.VersionCommand {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the application's versions.", discussion: "Example: assent admin application version list")
        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            try await CLIFailure.reporting {
                let client = try connection.client()
                let list = try await client.get(
                    "api/v1/applications/\(try await connection.applicationId(client))/versions",
                    as: ApplicationVersionList.self)
                try connection.output(list) {
                    [["VERSION", "NAME", "SUPPORTED", "APPLICATION KEY", "CREATED"]]
                        + list.versions.map {
                            [
                                $0.versionId, $0.name, $0.supported ? "yes" : "no", $0.applicationKey,
                                $0.createdAt.formatted(.iso8601),
                            ]
                        }
                }
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a version with its own key and secret; prints its SDK configuration string.",
            discussion: "Example: assent admin application version create --name 2026.11")
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The version's name (letters, digits, dots, dashes, underscores).") var name: String

        func run() async throws {
            try await CLIFailure.reporting {
                let client = try connection.client()
                let version = try await client.post(
                    "api/v1/applications/\(try await connection.applicationId(client))/versions",
                    body: CreateApplicationVersionRequest(name: name), as: ApplicationVersionInfo.self)
                try connection.output(version) { ApplicationCommand.VersionCommand.table(version) }
            }
        }
    }

    struct Support: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve the version's devices again.",
            discussion: "Example: assent admin application version support 2026.11")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The version's id or name.") var id: String

        func run() async throws {
            try await ApplicationCommand.VersionCommand.set(id, supported: true, connection)
        }
    }

    struct Unsupport: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop serving the version's devices (they get APPLICATION_VERSION_UNSUPPORTED).",
            discussion: "Example: assent admin application version unsupport 2026.11")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The version's id or name.") var id: String

        func run() async throws {
            try await ApplicationCommand.VersionCommand.set(id, supported: false, connection)
        }
    }

    static func set(_ id: String, supported: Bool, _ connection: ConnectionOptions)
        async throws
    {
        try await CLIFailure.reporting {
            let client = try connection.client()
            let version = try await client.post(
                "api/v1/applications/\(try await connection.applicationId(client))/versions/\(id)/\(supported ? "support" : "unsupport")",
                body: Optional<String>.none, as: ApplicationVersionInfo.self)
            try connection.output(version) { table(version) }
        }
    }
}
