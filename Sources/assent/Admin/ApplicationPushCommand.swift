import ArgumentParser
import AssentModel
import Foundation

extension ApplicationCommand {
    /// `assent admin application push [show]|apns|fcm|hms|remove`.
    struct PushCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "push",
            abstract: "The APNs, FCM and HMS credentials the application's devices are reached with.",
            discussion: """
                An application without its own credentials for a service reaches its devices on it only if it is \
                the first application and assent serve has that service's (--apns-*, --fcm-*, --hms-*). Secrets come \
                from files or the environment, never from the command line; the server keeps them sealed.
                """,
            subcommands: [Show.self, APNs.self, FCM.self, HMS.self, Remove.self], defaultSubcommand: Show.self)

        static func table(_ info: ApplicationPushInfo) -> [[String]] {
            func source(_ source: ApplicationPushInfo.Source, _ updatedAt: Date?) -> String {
                source == .server
                    ? "server" : "application" + (updatedAt.map { ", set \($0.formatted(.iso8601))" } ?? "")
            }
            return [["SERVICE", "CREDENTIALS", "FROM"]]
                + [
                    info.apns.map {
                        [
                            "apns", "topic \($0.topic), team \($0.teamId), key \($0.keyId)",
                            source($0.source, $0.updatedAt),
                        ]
                    } ?? ["apns", "-", "-"],
                    info.fcm.map {
                        ["fcm", "project \($0.projectId), \($0.clientEmail)", source($0.source, $0.updatedAt)]
                    } ?? ["fcm", "-", "-"],
                    info.hms.map { ["hms", "app \($0.appId)", source($0.source, $0.updatedAt)] } ?? ["hms", "-", "-"],
                ]
        }

        static func put<B: Encodable>(_ service: String, _ body: B, _ connection: ConnectionOptions) async throws {
            try await CLIFailure.reporting {
                let client = try connection.client()
                let info = try await client.send(
                    "PUT", "api/v1/applications/\(try await connection.applicationId(client))/push/\(service)",
                    body: body, as: ApplicationPushInfo.self)
                try connection.output(info) { table(info) }
            }
        }

        static func read(_ path: String, _ what: String) throws -> String {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("Cannot read the \(what) file \(path).")
            }
            return String(decoding: data, as: UTF8.self)
        }
    }
}

extension ApplicationCommand.PushCommand {
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show which credentials each service uses for the application (the default).",
            discussion: "Example: assent admin application push --application <id>")
        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            try await CLIFailure.reporting {
                let client = try connection.client()
                let info = try await client.get(
                    "api/v1/applications/\(try await connection.applicationId(client))/push",
                    as: ApplicationPushInfo.self)
                try connection.output(info) { ApplicationCommand.PushCommand.table(info) }
            }
        }
    }

    struct APNs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "apns", abstract: "Set the application's APNs key, team and topic.",
            discussion: """
                Example: assent admin application push apns --application <id> --key-file AuthKey_ABC123DEFG.p8 \
                --key-id ABC123DEFG --team-id DEF123GHIJ --topic com.example.business
                """)
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The APNs signing key (.p8) file.") var keyFile: String
        @Option(help: "Its Key ID (10 characters).") var keyId: String
        @Option(help: "The Apple Team ID (10 characters).") var teamId: String
        @Option(help: "The app's bundle id, the APNs topic.") var topic: String

        func run() async throws {
            let request = APNsCredentialsRequest(
                teamId: teamId, keyId: keyId, privateKey: try ApplicationCommand.PushCommand.read(keyFile, "APNs key"),
                topic: topic)
            try await ApplicationCommand.PushCommand.put("apns", request, connection)
        }
    }

    struct FCM: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "fcm", abstract: "Set the application's Firebase project (a service-account JSON file).",
            discussion: """
                Example: assent admin application push fcm --application <id> --service-account business-fcm.json
                """)
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Google's service-account JSON file of the Firebase project.") var serviceAccount: String

        func run() async throws {
            let request = FCMCredentialsRequest(
                serviceAccount: try ApplicationCommand.PushCommand.read(serviceAccount, "FCM service account"))
            try await ApplicationCommand.PushCommand.put("fcm", request, connection)
        }
    }

    struct HMS: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "hms",
            abstract: "Set the application's Huawei Push Kit app; its secret from ASSENT_HMS_APP_SECRET.",
            discussion: """
                Example: ASSENT_HMS_APP_SECRET=… assent admin application push hms --application <id> --app-id 10123456
                """)
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The Huawei app id.") var appId: String

        func run() async throws {
            guard let secret = ProcessInfo.processInfo.environment["ASSENT_HMS_APP_SECRET"], !secret.isEmpty else {
                throw ValidationError("Set ASSENT_HMS_APP_SECRET to the Huawei app secret.")
            }
            try await ApplicationCommand.PushCommand.put(
                "hms", HMSCredentialsRequest(appId: appId, appSecret: secret), connection)
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove the application's own credentials of a service (apns, fcm or hms).",
            discussion: "Example: assent admin application push remove fcm --application <id>")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "apns, fcm or hms.") var service: String

        func run() async throws {
            try await CLIFailure.reporting {
                let client = try connection.client()
                _ = try await client.delete(
                    "api/v1/applications/\(try await connection.applicationId(client))/push/\(service)",
                    as: OperatorClient.Empty.self)
                try printDone(
                    "Removed the application's own \(service) credentials.", json: connection.json,
                    fields: ["removed": service])
            }
        }
    }
}
