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

extension ApplicationCommand {
    /// `assent admin application branding`: shows, or with options sets, the hosted pages' accent colour, logo and
    /// default language.
    struct BrandingCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "branding",
            abstract:
                "Show or set the accent colour, logo and default language of the application's sign-in, account and "
                + "approval pages.",
            discussion: """
                Without options it shows them. The colour must keep white text readable (contrast 4.5:1); the logo \
                is a PNG or JPEG of at most 100 KB. The default language (en, cs or de) is for people who chose none \
                on /account and whose browser asks for none the pages are written in.
                Example: assent admin application branding --application <id> --accent '#0a6e4f' --logo-file logo.png
                """)
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The accent colour, #rrggbb.") var accent: String?
        @Option(help: "A PNG or JPEG logo file.") var logoFile: String?
        @Flag(help: "Back to the default accent colour.") var defaultAccent = false
        @Flag(help: "Remove the logo.") var noLogo = false
        @Option(help: "The pages' default language: en, cs or de.") var language: String?

        func run() async throws {
            var request = UpdateApplicationBrandingRequest()
            if defaultAccent { request.accentColor = "" } else { request.accentColor = accent }
            if noLogo {
                request.logo = ""
            } else if let logoFile {
                guard let data = FileManager.default.contents(atPath: logoFile) else {
                    throw ValidationError("Cannot read the logo file \(logoFile).")
                }
                request.logo = data.base64EncodedString()
            }
            request.language = language
            let change = request.accentColor != nil || request.logo != nil || request.language != nil
            try await CLIFailure.reporting {
                let client = try connection.client()
                let path = "api/v1/applications/\(try await connection.applicationId(client))/branding"
                let info =
                    change
                    ? try await client.send("PATCH", path, body: request, as: ApplicationBrandingInfo.self)
                    : try await client.get(path, as: ApplicationBrandingInfo.self)
                try connection.output(info) {
                    TextTable.fields([
                        ("name", info.name), ("accentColor", info.accentColor ?? "default"),
                        (
                            "logo",
                            info.logo.map {
                                "\(info.logoType ?? "image"), \(Data(base64Encoded: $0)?.count ?? 0) bytes"
                            }
                        ),
                        ("language", info.language ?? "en"),
                        ("updatedAt", info.updatedAt?.formatted(.iso8601)),
                    ])
                }
            }
        }
    }
}

extension ApplicationCommand {
    /// `assent admin application webhook`: shows, sets or removes the application's own webhook.
    struct WebhookCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "webhook",
            abstract: "Show, set or remove the webhook the application's operation status changes go to.",
            discussion: """
                Without options it shows it. --url sets it, signed with ASSENT_WEBHOOK_SECRET when that is set (16 \
                characters or more), else with a new key printed once. An application without its own webhook uses \
                the server's (serve --webhook-url).
                Example: assent admin application webhook --application <id> --url https://business.example/assent
                """)
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The receiver's http(s) URL.") var url: String?
        @Flag(help: "Remove the application's own webhook.") var remove = false

        func run() async throws {
            try await CLIFailure.reporting {
                let client = try connection.client()
                let path = "api/v1/applications/\(try await connection.applicationId(client))/webhook"
                if remove {
                    _ = try await client.delete(path, as: OperatorClient.Empty.self)
                    try printDone(
                        "Removed the application's own webhook.", json: connection.json, fields: ["removed": "webhook"])
                    return
                }
                let info: ApplicationWebhookInfo
                if let url {
                    let secret = ProcessInfo.processInfo.environment["ASSENT_WEBHOOK_SECRET"].flatMap {
                        $0.isEmpty ? nil : $0
                    }
                    info = try await client.send(
                        "PUT", path, body: SetApplicationWebhookRequest(url: url, secret: secret),
                        as: ApplicationWebhookInfo.self)
                } else {
                    info = try await client.get(path, as: ApplicationWebhookInfo.self)
                }
                try connection.output(info) {
                    TextTable.fields([
                        ("url", info.url), ("secret", info.secret.map { "\($0)  (shown once: keep it)" }),
                        ("updatedAt", info.updatedAt.formatted(.iso8601)),
                    ])
                }
            }
        }
    }
}

extension ApplicationCommand {
    /// `assent admin application rate-limits`: shows or sets the application's own limits.
    struct RateLimitsCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rate-limits",
            abstract: "Show or set the limits of what the application's people and devices do (logins, codes, …).",
            discussion: """
                Without arguments it shows every limit, its own or the server's. NAME=LIMIT/SECONDS sets one; \
                NAME= goes back to the server's (serve --rate-limit). Names: login-user, login-address, tfa-user, \
                code-destination, code-user, offline-operation, offline-activation, proximity-operation, \
                passkey-address.
                Example: assent admin application rate-limits --application <id> login-user=5/300 code-user=
                """)
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "NAME=LIMIT/SECONDS to set, NAME= to go back to the server's.") var changes: [String] = []

        func run() async throws {
            var limits: [String: String] = [:]
            for change in changes {
                let parts = change.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, !parts[0].isEmpty else {
                    throw ValidationError("Write NAME=LIMIT/SECONDS, or NAME= for the server's; \(change) is neither.")
                }
                limits[String(parts[0])] = String(parts[1])
            }
            try await CLIFailure.reporting {
                let client = try connection.client()
                let path = "api/v1/applications/\(try await connection.applicationId(client))/rate-limits"
                let info =
                    limits.isEmpty
                    ? try await client.get(path, as: ApplicationRateLimitsInfo.self)
                    : try await client.send(
                        "PATCH", path, body: UpdateApplicationRateLimitsRequest(limits: limits),
                        as: ApplicationRateLimitsInfo.self)
                try connection.output(info) {
                    [["LIMIT", "EVENTS", "SECONDS", "FROM"]]
                        + info.limits.map { [$0.name, String($0.limit), String($0.window), $0.source] }
                }
            }
        }
    }
}
