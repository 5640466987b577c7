import ArgumentParser
import AssentModel
import Foundation

/// `assent admin tfa …`: login accounts, their second factors, remembered devices and the policy (docs/TFA.md).
struct TFACommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tfa", abstract: "Manage two-factor login: accounts, e-mail factors, remembered devices, policy.",
        subcommands: [
            CreateAccount.self, Account.self, RenameAccount.self, RemoveAccount.self, DisableAccount.self,
            EnableAccount.self, SignOut.self, AddEmail.self, RemoveFactor.self, Devices.self, RevokeDevice.self,
            Policy.self,
        ])

    static func rows(_ account: TFAAccountInfo) -> [[String]] {
        [["USER", "NAME", "PASSWORD", "FACTOR ID", "PROVIDER", "DESTINATION", "LAST VERIFIED"]]
            + (account.factors.isEmpty
                ? [[account.userId, account.name ?? "-", account.hasPassword ? "yes" : "no", "-", "-", "-", "-"]]
                : account.factors.map {
                    [
                        account.userId, account.name ?? "-", account.hasPassword ? "yes" : "no", $0.id,
                        $0.provider.rawValue,
                        $0.obfuscated ?? "-",
                        $0.lastVerification.map { ISO8601DateFormatter().string(from: $0) } ?? "-",
                    ]
                })
    }

    struct CreateAccount: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create-account", abstract: "Create a login account (password from standard input).",
            discussion: """
                Example: echo 'correct horse battery' | assent admin tfa create-account --user alice --password-stdin \
                --email alice@example.com
                Without --password-stdin the account has no password: the relying party checks the first factor \
                and starts second factors with POST /api/v1/tfa/logins.
                """)
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The user id.") var user: String
        @Flag(help: "Read the password (8 to 1024 bytes) from the first line of standard input.") var passwordStdin =
            false
        @Option(help: "An e-mail address the operator vouches for (repeatable).") var email: [String] = []
        @Option(help: "The name people know the user by (the name claim of Sign in with Assent).") var name: String?

        func run() async throws {
            var password: String?
            if passwordStdin {
                guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                    throw ValidationError("--password-stdin found no password on standard input.")
                }
                password = line
            }
            try await CLIFailure.reporting {
                let account = try await connection.client().post(
                    "api/v1/tfa/accounts",
                    body: CreateTFAAccountRequest(
                        userId: user, password: password, emails: email.isEmpty ? nil : email, name: name),
                    as: TFAAccountInfo.self)
                try connection.output(account) { TFACommand.rows(account) }
            }
        }
    }

    struct Account: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show an account and its second factors.", discussion: "Example: assent admin tfa account alice")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The user id.") var user: String

        func run() async throws {
            try await CLIFailure.reporting {
                let account = try await connection.client().get(
                    "api/v1/tfa/accounts/\(user)", as: TFAAccountInfo.self)
                try connection.output(account) { TFACommand.rows(account) }
            }
        }
    }

    struct RenameAccount: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rename-account", abstract: "Set or remove an account's display name.",
            discussion: "Example: assent admin tfa rename-account alice --name 'Alice Novak' (--name '' removes it)")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The user id.") var user: String
        @Option(help: "The display name; an empty one removes it.") var name: String

        func run() async throws {
            try await CLIFailure.reporting {
                let account = try await connection.client().send(
                    "PATCH", "api/v1/tfa/accounts/\(user)", body: UpdateTFAAccountRequest(name: name),
                    as: TFAAccountInfo.self)
                try connection.output(account) { TFACommand.rows(account) }
            }
        }
    }

    struct RemoveAccount: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-account", abstract: "Remove an account with its factors and remembered devices.",
            discussion: "Example: assent admin tfa remove-account alice")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The user id.") var user: String

        func run() async throws {
            try await CLIFailure.reporting {
                _ = try await connection.client().delete("api/v1/tfa/accounts/\(user)", as: OperatorClient.Empty.self)
                try printDone("Removed account \(user).", json: connection.json, fields: ["removed": user])
            }
        }
    }

    struct DisableAccount: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "disable-account",
            abstract: "Disable an account: no sign-in until enabled; every token and session ends now.",
            discussion: "Example: assent admin tfa disable-account alice")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The user id.") var user: String

        func run() async throws {
            try await TFACommand.setDisabled(true, user: user, connection: connection)
        }
    }

    struct EnableAccount: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "enable-account", abstract: "Enable a disabled account again.",
            discussion: "Example: assent admin tfa enable-account alice")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The user id.") var user: String

        func run() async throws {
            try await TFACommand.setDisabled(false, user: user, connection: connection)
        }
    }

    static func setDisabled(_ disabled: Bool, user: String, connection: ConnectionOptions) async throws {
        try await CLIFailure.reporting {
            let account = try await connection.client().send(
                "PATCH", "api/v1/tfa/accounts/\(user)", body: UpdateTFAAccountRequest(disabled: disabled),
                as: TFAAccountInfo.self)
            try printDone(
                disabled ? "Disabled account \(user): its tokens and sessions ended." : "Enabled account \(user).",
                json: connection.json,
                fields: ["userId": account.userId, "disabled": account.disabledAt == nil ? "false" : "true"])
        }
    }

    struct SignOut: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign-out",
            abstract: "Sign a person out everywhere: tokens at every client, single sign-on and browser sessions.",
            discussion: "Example: assent admin tfa sign-out alice")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The user id.") var user: String

        func run() async throws {
            try await CLIFailure.reporting {
                let ended = try await connection.client().post(
                    "api/v1/tfa/accounts/\(user)/sign-out", body: Optional<String>.none, as: TFASignOutResponse.self)
                try printDone(
                    "Signed \(user) out everywhere: \(ended.refreshTokensRevoked) refresh token(s) revoked, "
                        + "\(ended.sessionsEnded) browser session(s) ended.", json: connection.json,
                    fields: [
                        "userId": user, "refreshTokensRevoked": "\(ended.refreshTokensRevoked)",
                        "sessionsEnded": "\(ended.sessionsEnded)",
                    ])
            }
        }
    }

    struct AddEmail: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-email", abstract: "Add an e-mail second factor to an account.",
            discussion: "Example: assent admin tfa add-email --user alice alice@example.com")
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The user id.") var user: String
        @Argument(help: "The address.") var email: String

        func run() async throws {
            try await CLIFailure.reporting {
                let factor = try await connection.client().post(
                    "api/v1/tfa/accounts/\(user)/emails", body: AddTFAEmailRequest(email: email),
                    as: TFAFactorInfo.self)
                try connection.output(factor) {
                    [
                        ["FACTOR ID", "PROVIDER", "DESTINATION"],
                        [factor.id, factor.provider.rawValue, factor.obfuscated ?? "-"],
                    ]
                }
            }
        }
    }

    struct RemoveFactor: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-factor", abstract: "Remove one second factor of an account.",
            discussion: "Example: assent admin tfa remove-factor --user alice <factor id>")
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The user id.") var user: String
        @Argument(help: "The factor id (assent admin tfa account USER lists them).") var id: String

        func run() async throws {
            try await CLIFailure.reporting {
                _ = try await connection.client().delete(
                    "api/v1/tfa/accounts/\(user)/factors/\(id)", as: OperatorClient.Empty.self)
                try printDone("Removed factor \(id).", json: connection.json, fields: ["removed": id])
            }
        }
    }

    struct Devices: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a user's remembered devices.", discussion: "Example: assent admin tfa devices alice")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The user id.") var user: String

        func run() async throws {
            try await CLIFailure.reporting {
                let list = try await connection.client().get(
                    "api/v1/tfa/accounts/\(user)/devices", as: RememberedDeviceList.self)
                let format = ISO8601DateFormatter()
                try connection.output(list) {
                    [["DEVICE ID", "CREATED", "EXPIRES", "LAST USED", "REVOKED"]]
                        + list.devices.map {
                            [
                                $0.id, format.string(from: $0.createdAt), format.string(from: $0.expiresAt),
                                $0.lastUsedAt.map(format.string(from:)) ?? "-",
                                $0.revokedAt.map(format.string(from:)) ?? "-",
                            ]
                        }
                }
            }
        }
    }

    struct RevokeDevice: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-device", abstract: "Revoke a remembered device: its next login asks again.",
            discussion: "Example: assent admin tfa revoke-device <device id>")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The device id.") var id: String

        func run() async throws {
            try await CLIFailure.reporting {
                _ = try await connection.client().delete("api/v1/tfa/devices/\(id)", as: OperatorClient.Empty.self)
                try printDone("Revoked device \(id).", json: connection.json, fields: ["revoked": id])
            }
        }
    }

    struct Policy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show or set the second-factor policy.",
            discussion: """
                Example: assent admin tfa policy --required false --provider totp --provider push
                With no option it shows the policy.
                """)
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Whether every login needs a second factor: true or false.") var required: Bool?
        @Option(help: "An allowed provider (repeatable): totp, email, phone, push.") var provider: [TFAProvider] = []

        func run() async throws {
            try await CLIFailure.reporting {
                let client = try connection.client()
                var policy = try await client.get("api/v1/tfa/policy", as: TFAPolicy.self)
                if required != nil || !provider.isEmpty {
                    if let required { policy.required = required }
                    if !provider.isEmpty { policy.providers = provider }
                    policy = try await client.send("PUT", "api/v1/tfa/policy", body: policy, as: TFAPolicy.self)
                }
                try connection.output(policy) {
                    [
                        ["REQUIRED", "PROVIDERS"],
                        [policy.required ? "yes" : "no", policy.providers.map(\.rawValue).joined(separator: ", ")],
                    ]
                }
            }
        }
    }
}

extension TFAProvider: ExpressibleByArgument {}
