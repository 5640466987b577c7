import ArgumentParser
import AssentModel
import Foundation

/// `assent admin operation …`.
struct OperationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operation", abstract: "Create, inspect and cancel operations; offline QR codes; templates.",
        subcommands: [
            Create.self, Show.self, List.self, Cancel.self, OfflineQR.self, OfflineVerify.self, Proximity.self,
            ApprovalLink.self, Deliveries.self, TemplateCommand.self,
        ])

    static func table(_ info: OperationInfo) -> [[String]] {
        let form = info.formData[info.defaultLanguage]
        return TextTable.fields([
            ("id", info.id), ("userId", info.userId ?? "(not claimed)"), ("name", info.name), ("data", info.data),
            ("status", info.status.rawValue), ("statusReason", info.statusReason),
            ("title", form?.title),
            (
                "signature",
                "\(info.allowedSignatureType.type.rawValue) \(info.allowedSignatureType.variants.joined(separator: ","))"
            ),
            ("failedAttempts", "\(info.failedAttempts)/\(info.maxFailedAttempts)"),
            ("proximityCheck", info.proximityCheck ? "yes" : "no"), ("template", info.template),
            ("activationId", info.activationId), ("createdAt", info.createdAt.formatted(.iso8601)),
            ("expiresAt", info.expiresAt.formatted(.iso8601)), ("finishedAt", info.finishedAt?.formatted(.iso8601)),
        ])
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an operation for a user to approve.",
            discussion: """
                Give the texts with --title/--message, a whole request with --file (the JSON of POST \
                /api/v1/operations), or a template with --template and --param name=value. Flags override the file.

                Example: assent admin operation create --user alice --data 'A1*A100CZK*ICZ2730300000001165254011' \
                --title 'Confirm payment' --message 'Pay 100 CZK to Nela?'
                """)
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The user; omit for an operation the first device claims.") var user: String?
        @Option(help: "JSON file with the whole request.") var file: String?
        @Option(help: "System name, e.g. authorize_payment or login.") var name: String?
        @Option(help: "Operation data, e.g. A1*A100CZK*ICZ2730300000001165254011.") var data: String?
        @Option(help: "Title shown on the device.") var title: String?
        @Option(help: "Message shown on the device.") var message: String?
        @Option(help: "Language of --title and --message.") var language = "en"
        @Option(help: "Template name.") var template: String?
        @Option(name: .customLong("param"), help: "Template parameter name=value (repeatable).") var params: [String] =
            []
        @Option(help: "Seconds until it expires (default: the server's, 300).") var expiresIn: Int?
        @Flag(help: "Approve with one factor (possession) instead of PIN or biometry.") var oneFactor = false
        @Flag(help: "Require the proximity check TOTP on approval.") var proximityCheck = false

        func run() async throws {
            try await CLIFailure.reporting {
                var request = CreateOperationRequest()
                if let file {
                    guard let contents = FileManager.default.contents(atPath: file) else {
                        throw ValidationError("Cannot read \(file).")
                    }
                    request = try JSONDecoder().decode(CreateOperationRequest.self, from: contents)
                }
                request.userId = user ?? request.userId
                request.name = name ?? request.name ?? (template == nil && request.template == nil ? "authorize" : nil)
                request.data = data ?? request.data
                if let title {
                    var forms = request.formData ?? [:]
                    forms[language] = FormData(title: title, message: message ?? "")
                    request.formData = forms
                }
                request.template = template ?? request.template
                if !params.isEmpty {
                    var values = request.params ?? [:]
                    for param in params {
                        let parts = param.split(separator: "=", maxSplits: 1).map(String.init)
                        guard parts.count == 2 else { throw ValidationError("--param is name=value, found \(param).") }
                        values[parts[0]] = .string(parts[1])
                    }
                    request.params = values
                }
                request.expiresIn = expiresIn ?? request.expiresIn
                if oneFactor { request.allowedSignatureType = .oneFactor }
                if proximityCheck { request.proximityCheck = true }
                let info = try await connection.client().post(
                    "api/v1/operations", body: request, as: OperationInfo.self)
                try connection.output(info) { OperationCommand.table(info) }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one operation.", discussion: "Example: assent admin operation show <id>")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The operation id.") var id: String

        func run() async throws {
            try await CLIFailure.reporting {
                let info = try await connection.client().get("api/v1/operations/\(id)", as: OperationInfo.self)
                try connection.output(info) { OperationCommand.table(info) }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a user's operations, newest first.",
            discussion: "Example: assent admin operation list --user alice --status PENDING")
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The user.") var user: String
        @Option(help: "Only this status: PENDING, APPROVED, REJECTED, CANCELED, EXPIRED, FAILED.") var status: String?

        func run() async throws {
            try await CLIFailure.reporting {
                let list = try await connection.client().get(
                    "api/v1/users/\(user)/operations",
                    query: status.map { [URLQueryItem(name: "status", value: $0)] } ?? [],
                    as: OperationList.self)
                try connection.output(list) {
                    [["OPERATION", "NAME", "STATUS", "REASON", "CREATED"]]
                        + list.operations.map {
                            [
                                $0.id, $0.name, $0.status.rawValue, $0.statusReason ?? "-",
                                $0.createdAt.formatted(.iso8601),
                            ]
                        }
                }
            }
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel a pending operation.", discussion: "Example: assent admin operation cancel <id>")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The operation id.") var id: String
        @Option(help: "Why (at most 32 characters).") var reason: String?

        func run() async throws {
            try await CLIFailure.reporting {
                let info = try await connection.client().post(
                    "api/v1/operations/\(id)/cancel", body: CancelOperationRequest(reason: reason),
                    as: OperationInfo.self)
                try connection.output(info) { OperationCommand.table(info) }
            }
        }
    }

    struct ApprovalLink: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "approval-link",
            abstract: "Print a signed link to the waiting-for-approval page of a pending operation.",
            discussion: """
                The page shows the operation as the phone does and, once it is finished, goes on to --return with \
                operation_id and status added to its query.

                Example: assent admin operation approval-link <id> --return https://bank.example/payments/42
                """)
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The operation id.") var id: String
        @Option(name: .customLong("return"), help: "The absolute http(s) URL the page goes on to.") var returnURL:
            String
        @Option(help: "Seconds the link works (60-86400; default: until 10 minutes after the operation expires).")
        var expiresIn: Int?
        @Flag(help: "The page also offers approving without a connection: an offline QR code and the code it yields.")
        var offline = false

        func run() async throws {
            try await CLIFailure.reporting {
                let response = try await connection.client().post(
                    "api/v1/operations/\(id)/approval-link",
                    body: ApprovalLinkRequest(
                        returnUrl: returnURL, expiresIn: expiresIn, offline: offline ? true : nil),
                    as: ApprovalLinkResponse.self)
                if connection.json {
                    try connection.output(response) { [] }
                } else {
                    print(response.url)
                }
            }
        }
    }

    struct OfflineQR: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "offline-qr",
            abstract: "Print the offline QR code of a pending operation: its text, and on a terminal the code.",
            discussion: """
                Signed with the master server key, or with --activation's personal key (--key-type personal). \
                The user scans the QR code (drawn below the text on a terminal; --qr / --no-qr decide) and types \
                the approval code into offline-verify.

                Example: assent admin operation offline-qr <id> --key-type personal --activation <activation id>
                """)
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var qr: QROptions
        @Argument(help: "The operation id.") var id: String
        @Option(help: "master or personal.") var keyType: OfflineQRRequest.Key = .master
        @Option(help: "The activation whose personal key signs.") var activation: String?

        func run() async throws {
            try await CLIFailure.reporting {
                let response = try await connection.client().post(
                    "api/v1/operations/\(id)/offline-qr",
                    body: OfflineQRRequest(keyType: keyType, activationId: activation), as: OfflineQRResponse.self)
                if connection.json {
                    try connection.output(response) { [] }
                } else {
                    print(response.qr)
                }
                try qr.draw(response.qr, json: connection.json)
            }
        }
    }

    struct OfflineVerify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "offline-verify",
            abstract: "Check the approval code a user typed after scanning the offline QR code.",
            discussion: """
                Exits 0 and approves the operation when the code matches; exits 4 when it does not (counting a \
                failed attempt).

                Example: assent admin operation offline-verify <id> --activation <activation id> --code 12345678-87654321
                """)
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The operation id.") var id: String
        @Option(help: "The activation of the device that computed the code.") var activation: String
        @Option(help: "The typed code, NNNNNNNN-NNNNNNNN.") var code: String

        func run() async throws {
            try await CLIFailure.reporting {
                let response = try await connection.client().post(
                    "api/v1/operations/\(id)/offline-verify",
                    body: OfflineVerifyRequest(activationId: activation, code: code), as: OfflineVerifyResponse.self)
                try connection.output(response) {
                    [["valid", response.valid ? "yes" : "no"]] + OperationCommand.table(response.operation)
                }
                if !response.valid { throw ExitCode(4) }
            }
        }
    }

    struct Proximity: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Print the current proximity-check code of an operation as a deeplink and a QR JWT (drawn on a terminal).",
            discussion: "Example: assent admin operation proximity <id> --scheme mybank")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var qr: QROptions
        @Argument(help: "The operation id.") var id: String
        @Option(help: "The deeplink's URL scheme.") var scheme = "assent"

        func run() async throws {
            try await CLIFailure.reporting {
                let code = try await connection.client().get(
                    "api/v1/operations/\(id)/proximity", query: [URLQueryItem(name: "scheme", value: scheme)],
                    as: ProximityCodeResponse.self)
                try connection.output(code) {
                    TextTable.fields([
                        ("otp", code.otp), ("deeplink", code.deeplink), ("jwt", code.jwt),
                        ("validUntil", code.validUntil.formatted(.iso8601)),
                    ])
                }
                try qr.draw(code.jwt, json: connection.json)
            }
        }
    }
}

/// `assent admin operation template …`.
struct TemplateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "template", abstract: "Save, list and delete operation templates.",
        subcommands: [Put.self, List.self, Delete.self])

    struct Put: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create or replace a template from a JSON file.",
            discussion: """
                The file holds the fields of an operation (name, data, formData, ui, allowedSignatureType, \
                expiresIn, maxFailedAttempts, proximityCheck) with {placeholders} in any string.

                Example: assent admin operation template put payment --file payment.json
                """)
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The template name.") var name: String
        @Option(help: "The JSON file.") var file: String

        func run() async throws {
            try await CLIFailure.reporting {
                guard let contents = FileManager.default.contents(atPath: file),
                    let body = try? JSONDecoder().decode([String: JSONValue].self, from: contents)
                else { throw ValidationError("\(file) is not a readable JSON object.") }
                let saved = try await connection.client().send(
                    "PUT", "api/v1/operation-templates/\(name)", body: body, as: OperationTemplateInfo.self)
                if connection.json {
                    try connection.output(saved) { [] }
                } else {
                    print("Saved template \(saved.name).")
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the templates.")
        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            try await CLIFailure.reporting {
                let list = try await connection.client().get(
                    "api/v1/operation-templates", as: OperationTemplateList.self)
                try connection.output(list) {
                    [["TEMPLATE", "FIELDS", "UPDATED"]]
                        + list.templates.map {
                            [$0.name, $0.body.keys.sorted().joined(separator: ","), $0.updatedAt.formatted(.iso8601)]
                        }
                }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a template.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The template name.") var name: String

        func run() async throws {
            try await CLIFailure.reporting {
                _ = try await connection.client().delete(
                    "api/v1/operation-templates/\(name)", as: OperatorClient.Empty.self)
                try printDone("Deleted template \(name).", json: connection.json, fields: ["deleted": name])
            }
        }
    }
}
extension OfflineQRRequest.Key: ExpressibleByArgument {}
