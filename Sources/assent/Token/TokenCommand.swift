import ArgumentParser
import AssentModel
import AssentSDK
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `assent token …`: a software token on this machine, built on AssentSDK.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "A software mobile token: activate it, then list, approve and reject operations.",
        discussion: """
            State lives in the profile directory (--profile, default ~/.assent/token): the server URL and SDK \
            configuration, and the keystore (mode 0600; the PIN-protected knowledge key never leaves it unencrypted).
            Commands that take a PIN ask for it without echo, or read one line from standard input with --pin-stdin.
            """,
        subcommands: [
            Activate.self, Status.self, List.self, Show.self, Approve.self, Reject.self, Claim.self, History.self,
            QRApprove.self, Watch.self, PushListen.self, ChangePIN.self, Remove.self,
        ])

    struct Activate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Activate this token with an activation code or activation QR text.",
            discussion: """
                Example: assent token activate --server http://127.0.0.1:8080 --config <SDK configuration> \
                XXXXX-XXXXX-XXXXX-XXXXX
                """)
        @OptionGroup var profile: ProfileOptions
        @Option(help: "The server URL.") var server: String
        @Option(help: "The SDK configuration string the server printed.") var config: String
        @Argument(help: "The activation code, or the QR text CODE#signature.") var code: String
        @Option(help: "The name the operator sees for this device.") var name = "assent token"
        @Flag(help: "Activate with this machine alone, without a PIN: only one-factor operations can be approved.")
        var deviceOnly = false

        func validate() throws {
            guard (1...255).contains(name.count) else { throw ValidationError("--name has 1 to 255 characters.") }
        }

        func run() async throws {
            try await TokenFailure.reporting {
                guard let url = URL(string: server), url.scheme == "http" || url.scheme == "https" else {
                    throw ValidationError("--server must be an http(s) URL.")
                }
                let stored = StoredProfile(serverURL: url.absoluteString, configuration: config)
                let client = try profile.client(stored)
                guard await !client.isActivatedLocally else {
                    throw AssentError(
                        .alreadyActivated, "\(profile.directory.path) already holds a token: use another --profile.")
                }
                // Everything that can fail here is checked before the code reaches the server, which spends it.
                var pin: String?
                if !deviceOnly {
                    try await client.loadConfiguration()
                    let policy = await client.pinPolicy
                    pin = try profile.readNewPIN(policy)
                }
                try profile.prepareDirectory()
                let started = try await client.startActivation(code: code, name: name)
                profile.note("Fingerprint: \(started.fingerprint) (compare it with the operator's).")
                do {
                    if let pin {
                        try await client.finishActivation(pin: pin)
                    } else {
                        try await client.finishActivation(with: .device)
                    }
                    try profile.save(stored)
                } catch {
                    // Never leave an activation on the server that this machine cannot use.
                    let removed: Bool
                    if await client.isActivatedLocally, let pin {
                        removed = (try? await client.removeActivation(pin: pin)) != nil
                    } else {
                        removed = (try? await client.abandonActivation()) != nil
                    }
                    try? await client.removeActivationLocally()
                    if removed {
                        profile.note("The activation was removed on the server again: ask for a new activation code.")
                    }
                    throw error
                }
                try profile.output(["activationId": started.activationId, "fingerprint": started.fingerprint]) {
                    TextTable.fields([("activationId", started.activationId), ("fingerprint", started.fingerprint)])
                }
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the activation's state on the server.")
        @OptionGroup var profile: ProfileOptions

        func run() async throws {
            try await TokenFailure.reporting {
                let client = try profile.client()
                let status = try await client.status()
                let activationId = await client.registrationId ?? "-"
                try profile.output(
                    [
                        "activationId": activationId, "state": status.state.name,
                        "failedAttempts": "\(status.failedAttempts)",
                        "maxFailedAttempts": "\(status.maxFailedAttempts)",
                    ]
                ) {
                    TextTable.fields([
                        ("activationId", activationId), ("state", status.state.name),
                        ("failedAttempts", "\(status.failedAttempts)/\(status.maxFailedAttempts)"),
                    ])
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the pending operations.")
        @OptionGroup var profile: ProfileOptions

        func run() async throws {
            try await TokenFailure.reporting {
                let operations = try await profile.operations().pending().value
                try profile.output(operations) { TokenCommand.table(operations) }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one operation with its attributes.")
        @OptionGroup var profile: ProfileOptions
        @Argument(help: "The operation id.") var id: String

        func run() async throws {
            try await TokenFailure.reporting {
                let operation = try await profile.operations().detail(id: id).value
                try profile.output(operation) { TokenCommand.detail(operation) }
            }
        }
    }

    struct Approve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Approve an operation with the PIN.",
            discussion: """
                An operation with a proximity check needs the code the site shows: --proximity-qr with the scanned \
                QR text (a file, or - for standard input) or --proximity-code with the link or the digits. An \
                operation with number matching needs --number: the number the page (or the agent) shows.
                Example: assent token approve <id> --number 42
                """)
        @OptionGroup var profile: ProfileOptions
        @Argument(help: "The operation id.") var id: String
        @Option(help: "A file with the proximity QR code's text (the JWT or the link), or - for standard input.")
        var proximityQr: String?
        @Option(help: "The proximity code: the link the site shows, or its digits.") var proximityCode: String?
        @Option(help: "The number shown where the request started (number matching).") var number: Int?

        func validate() throws {
            guard proximityQr == nil || proximityCode == nil else {
                throw ValidationError("Give --proximity-qr or --proximity-code, not both.")
            }
            guard proximityQr != "-" || !profile.pinStdin else {
                throw ValidationError("Standard input cannot carry both the proximity QR text and the PIN.")
            }
        }

        func run() async throws {
            try await TokenFailure.reporting {
                let received = Date()
                let check = try proximityCheck(received: received)
                let operations = try profile.operations()
                let operation = try await operations.detail(id: id).value
                // A finished operation cannot be approved: say so before asking for a PIN, and count nothing.
                try TokenCommand.requirePending(operation)
                if !profile.json { print(TextTable.render(TokenCommand.detail(operation))) }
                if let matching = operation.numberMatching, number == nil {
                    let choices = matching.choices.map(String.init).joined(separator: ", ")
                    throw AssentError(
                        .numberMissing,
                        "This request asks for the number shown where it started: run again with --number N"
                            + (choices.isEmpty ? "." : " (one of \(choices))."))
                }
                let pin = try profile.readPIN(prompt: "PIN: ")
                do {
                    try await operations.authorize(operation, factor: .pin(pin), proximityCheck: check, number: number)
                } catch var error as AssentError where error.code == .proximityCheckMissing {
                    error.message += " Run again with --proximity-qr FILE or --proximity-code CODE."
                    throw error
                } catch var error as AssentError where error.code == .operationFailed || error.code == .wrongPIN {
                    // The wrong PIN that fails the operation may also have been the activation's last try.
                    if (try? await operations.client.status())?.state == .blocked {
                        error.message +=
                            " This token is now BLOCKED too (too many wrong PINs): it approves nothing until the "
                            + "operator unblocks it."
                    }
                    throw error
                }
                try printDone(
                    "Approved operation \(id).", json: profile.json, fields: ["id": id, "status": "APPROVED"])
            }
        }

        /// The proximity check from --proximity-qr or --proximity-code, for this operation; `nil` without either.
        func proximityCheck(received: Date) throws -> ProximityCheck? {
            let scanned: ProximityCode
            let type: ProximityCheck.Source
            if let file = proximityQr {
                let text = try TokenCommand.readText(file)
                guard let code = ProximityCode(parsing: text) else {
                    throw AssentError(.invalidInput, "\(file) holds no proximity QR code (a JWT or an oid/potp link).")
                }
                (scanned, type) = (code, .qrCode)
            } else if let given = proximityCode?.trimmingCharacters(in: .whitespaces) {
                if given.allSatisfy(\.isNumber), (6...10).contains(given.count) {
                    (scanned, type) = (ProximityCode(operationId: id, totp: given), .deeplink)
                } else if let code = ProximityCode(parsing: given) {
                    (scanned, type) = (code, .deeplink)
                } else {
                    throw AssentError(.invalidInput, "--proximity-code is the link the site shows, or its digits.")
                }
            } else {
                return nil
            }
            guard scanned.operationId == id else {
                throw AssentError(
                    .invalidInput, "The proximity code is for operation \(scanned.operationId), not \(id).")
            }
            return ProximityCheck(otp: scanned.totp, type: type, timestampReceived: received, timestampSent: received)
        }
    }

    struct Reject: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Reject an operation.",
            discussion: "Example: assent token reject <id> --reason INCORRECT_DATA")
        @OptionGroup var profile: ProfileOptions
        @Argument(help: "The operation id.") var id: String
        @Option(help: "UNKNOWN, INCORRECT_DATA, UNEXPECTED_OPERATION or your own.") var reason = RejectReason.unknown

        func run() async throws {
            try await TokenFailure.reporting {
                try await profile.operations().reject(id: id, reason: reason)
                try printDone(
                    "Rejected operation \(id).", json: profile.json, fields: ["id": id, "status": "REJECTED"])
            }
        }
    }

    struct Claim: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Claim an operation created without a user.")
        @OptionGroup var profile: ProfileOptions
        @Argument(help: "The operation id.") var id: String

        func run() async throws {
            try await TokenFailure.reporting {
                let operation = try await profile.operations().claim(id: id).value
                try profile.output(operation) { TokenCommand.detail(operation) }
            }
        }
    }

    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List every operation, newest first (PIN).")
        @OptionGroup var profile: ProfileOptions

        func run() async throws {
            try await TokenFailure.reporting {
                let pin = try profile.readPIN(prompt: "PIN: ")
                let operations = try await profile.operations().history(pin: pin).value
                try profile.output(operations) { TokenCommand.table(operations) }
            }
        }
    }

    struct QRApprove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "qr-approve",
            abstract: "Verify an offline operation QR text and print the approval code to type.",
            discussion: "Example: assent token qr-approve qr.txt  (or - to read the QR text from standard input)")
        @OptionGroup var profile: ProfileOptions
        @Argument(help: "A file with the QR text, or - for standard input.") var file: String

        func run() async throws {
            try await TokenFailure.reporting {
                guard file != "-" || !profile.pinStdin else {
                    throw ValidationError("Standard input cannot carry both the QR text and the PIN.")
                }
                let text = try TokenCommand.readText(file)
                let operations = try profile.operations()
                var trimmed = text
                while trimmed.last == "\n" { trimmed.removeLast() }
                let qr = try await operations.parseOfflineOperation(trimmed)
                if !profile.json {
                    print(
                        TextTable.render(
                            TextTable.fields([
                                ("title", qr.title), ("message", qr.message),
                                ("data", qr.operationData),
                            ])))
                }
                let pin = try profile.readPIN(prompt: "PIN: ")
                let code = try await operations.offlineApprovalCode(for: qr, pin: pin)
                try profile.output(["operationId": qr.operationId, "code": code]) { [["Approval code", code]] }
            }
        }
    }

    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the pending operations and redraw them the moment they change.",
            discussion: """
                Follows the server's live event stream: an operation the operator creates, or one that finishes, \
                is redrawn at once. While the stream is unreachable it polls every --interval seconds and \
                reconnects; --poll only polls. Redraws the table after every fetch (on a terminal; otherwise \
                prints one table per fetch). With --json prints one JSON object per fetch: the operations and the \
                ids added and removed. Stops on Ctrl-C, or after --count fetches.
                Example: assent token watch --interval 10
                """)
        @OptionGroup var profile: ProfileOptions
        @Option(help: "Seconds between fetches when polling (at least 5).") var interval = 7
        @Flag(help: "Poll only; do not follow the live event stream.") var poll = false
        @Option(help: "Stop after this many fetches.") var count: Int?

        struct Fetch: Encodable {
            var operations: [MobileOperation]
            var added: [String]
            var removed: [String]
        }

        func run() async throws {
            try await TokenFailure.reporting {
                guard interval >= 5 else { throw ValidationError("--interval must be at least 5 seconds.") }
                let operations = try profile.operations()
                let events = await operations.events()
                if poll {
                    await operations.startPollingOperations(interval: .seconds(interval))
                } else {
                    await operations.startLiveUpdates(fallbackPollingInterval: .seconds(interval))
                }
                let redraw = !profile.json && isatty(STDOUT_FILENO) == 1
                var fetches = 0
                for await event in events {
                    switch event {
                    case .loading: continue
                    case .failed(let error):
                        profile.note("error: \(error)")
                    case .changed(let change):
                        // Written unbuffered, so a reader of a pipe sees every fetch at once.
                        var text: String
                        if profile.json {
                            let line = Fetch(
                                operations: change.operations, added: change.added.map(\.id),
                                removed: change.removed.map(\.id))
                            text = String(decoding: try MobileTokenJSON.encoder().encode(line), as: UTF8.self) + "\n"
                        } else {
                            text = redraw ? "\u{1B}[H\u{1B}[2J" : ""
                            let mode = await operations.isLive ? "live" : "polling"
                            text += "\(Date()) — \(change.operations.count) pending (\(mode))\n"
                            text += TextTable.render(TokenCommand.table(change.operations)) + "\n"
                        }
                        FileHandle.standardOutput.write(Data(text.utf8))
                    }
                    fetches += 1
                    if let count, fetches >= count { break }
                }
                await operations.stopLiveUpdates()
            }
        }
    }

    struct ChangePIN: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "change-pin",
            abstract: "Change the PIN (the server checks the old one).",
            discussion: "With --pin-stdin reads two lines: the old PIN, then the new one.")
        @OptionGroup var profile: ProfileOptions

        func run() async throws {
            try await TokenFailure.reporting {
                let client = try profile.client()
                let old = try profile.readPIN(prompt: "Current PIN: ")
                let new = try profile.readPIN(prompt: "New PIN: ", confirm: true)
                try await client.changePIN(from: old, to: new)
                try printDone("Changed the PIN.", json: profile.json, fields: ["changed": "true"])
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove the activation on the server (PIN) and here; --local forgets it here only.")
        @OptionGroup var profile: ProfileOptions
        @Flag(help: "Only forget the activation on this machine.") var local = false

        func run() async throws {
            try await TokenFailure.reporting {
                let client = try profile.client()
                if local {
                    try await client.removeActivationLocally()
                } else {
                    try await client.removeActivation(pin: try profile.readPIN(prompt: "PIN: "))
                }
                try? FileManager.default.removeItem(at: profile.directory.appendingPathComponent("profile.json"))
                try printDone(
                    "Removed the activation \(local ? "on this machine" : "everywhere").", json: profile.json,
                    fields: ["removed": "true"])
            }
        }
    }

    /// The text of `file`, or of standard input for `-`.
    static func readText(_ file: String) throws -> String {
        if file == "-" { return String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) }
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ValidationError("Cannot read \(file).")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Throws the SDK's error for an operation that is no longer pending.
    static func requirePending(_ operation: MobileOperation) throws {
        switch operation.status {
        case .pending: return
        case .expired:
            throw AssentError(.operationExpired, "The operation expired; ask for a new one.")
        default:
            throw AssentError(
                .operationFinished,
                "The operation is already \(operation.status.rawValue): there is nothing to approve.")
        }
    }

    static func table(_ operations: [MobileOperation]) -> [[String]] {
        [["OPERATION", "NAME", "TITLE", "STATUS", "EXPIRES"]]
            + operations.map { [$0.id, $0.name, $0.formData.title, $0.status.rawValue, $0.operationExpires] }
    }

    static func detail(_ operation: MobileOperation) -> [[String]] {
        TextTable.fields(
            [
                ("id", operation.id), ("name", operation.name), ("title", operation.formData.title),
                ("message", operation.formData.message), ("data", operation.data),
                ("status", operation.status.rawValue), ("expires", operation.operationExpires),
            ]
                + (operation.numberMatching.map { matching in
                    [
                        (
                            "number",
                            matching.choices.isEmpty
                                ? "type the number shown where it started"
                                : "one of " + matching.choices.map(String.init).joined(separator: ", ")
                                    + ": the one shown where it started"
                        )
                    ]
                } ?? [])
                + operation.formData.attributes.map { attribute in
                    let value =
                        attribute.value ?? attribute.note ?? attribute.message
                        ?? attribute.amount.map { "\($0) \(attribute.currency ?? "")" } ?? ""
                    return (attribute.label ?? attribute.id, value)
                })
    }
}

/// What the profile remembers besides the keystore.
struct StoredProfile: Codable {
    var serverURL: String
    var configuration: String
}

/// `--profile`, `--pin-stdin` and `--json`, shared by every token command.
struct ProfileOptions: ParsableArguments {
    @Option(help: "Profile directory. Default: ~/.assent/token.") var profile: String?
    @Flag(help: "Read the PIN as one line from standard input (for scripts).") var pinStdin = false
    @Flag(help: "Print JSON instead of a table.") var json = false

    /// `--profile`, else `.assent/token` in `$HOME` (the account's home directory when `HOME` is unset).
    var directory: URL {
        if let profile { return URL(fileURLWithPath: profile, isDirectory: true) }
        let home =
            ProcessInfo.processInfo.environment["HOME"].flatMap { $0.isEmpty ? nil : $0 }
            .map { URL(fileURLWithPath: $0, isDirectory: true) } ?? FileManager.default.homeDirectoryForCurrentUser
        return home.appendingPathComponent(".assent/token")
    }

    func client(_ stored: StoredProfile? = nil) throws -> AssentClient {
        let profile: StoredProfile
        if let stored {
            profile = stored
        } else {
            let file = directory.appendingPathComponent("profile.json")
            guard let data = FileManager.default.contents(atPath: file.path) else {
                throw AssentError(
                    .notActivated, "No token in \(directory.path): run `assent token activate` first.")
            }
            profile = try JSONDecoder().decode(StoredProfile.self, from: data)
        }
        guard let url = URL(string: profile.serverURL) else {
            throw AssentError(.invalidInput, "The profile's server URL is malformed.")
        }
        return try AssentClient(
            serverURL: url, configuration: profile.configuration, keystore: try FileKeystore(directory: directory))
    }

    func operations() throws -> OperationsService {
        OperationsService(
            client: try client(),
            acceptLanguage: ProcessInfo.processInfo.environment["LANG"].flatMap {
                $0.split(separator: ".").first.map { $0.replacingOccurrences(of: "_", with: "-") }
            }.flatMap { $0 == "C" || $0 == "POSIX" ? nil : $0 })
    }

    func save(_ stored: StoredProfile) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try JSONEncoder().encode(stored).write(to: directory.appendingPathComponent("profile.json"), options: .atomic)
    }

    /// A line on standard error (prompts and notes never mix with the output).
    func note(_ text: String, newline: Bool = true) {
        FileHandle.standardError.write(Data((text + (newline ? "\n" : "")).utf8))
    }

    /// Creates the profile directory, so that a directory that cannot be written fails before the activation.
    func prepareDirectory() throws {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw AssentError(.keystore, "Cannot create \(directory.path): \(error.localizedDescription)")
        }
        guard FileManager.default.isWritableFile(atPath: directory.path) else {
            throw AssentError(.keystore, "Cannot write to \(directory.path).")
        }
    }

    /// A new PIN that follows `policy`: one line with --pin-stdin; on a terminal asked twice, and asked again (up to
    /// three times) when it breaks the policy or the two differ.
    func readNewPIN(_ policy: PINPolicy) throws -> String {
        let prompt =
            "Choose a PIN (\(policy.minimumLength)-\(policy.maximumLength) "
            + (policy.digitsOnly ? "digits" : "characters") + "): "
        var attempt = 0
        while true {
            attempt += 1
            do {
                let pin = try readPIN(prompt: prompt, confirm: true)
                try policy.validate(pin)
                return pin
            } catch let error where !pinStdin && attempt < 3 {
                note((error as? AssentError)?.message ?? "\(error)")
            }
        }
    }

    /// Reads a PIN: one line from standard input with --pin-stdin, else from the terminal without echo.
    func readPIN(prompt: String, confirm: Bool = false) throws -> String {
        if pinStdin {
            guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                throw ValidationError("--pin-stdin expects the PIN on standard input.")
            }
            return line
        }
        let pin = try Self.readHidden(prompt)
        if confirm, try Self.readHidden("Repeat the PIN: ") != pin {
            throw AssentError(.invalidInput, "The two PINs differ.")
        }
        return pin
    }

    static func readHidden(_ prompt: String) throws -> String {
        FileHandle.standardError.write(Data(prompt.utf8))
        var original = termios()
        let isTerminal = tcgetattr(STDIN_FILENO, &original) == 0
        if isTerminal {
            var silent = original
            silent.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(STDIN_FILENO, TCSANOW, &silent)
        }
        defer {
            if isTerminal {
                tcsetattr(STDIN_FILENO, TCSANOW, &original)
                FileHandle.standardError.write(Data("\n".utf8))
            }
        }
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw ValidationError("No PIN was entered.")
        }
        return line
    }

    /// Prints `value` as JSON with --json, else the table.
    func output<T: Encodable>(_ value: T, table: () -> [[String]]) throws {
        try printOutput(value, json: json, table: table)
    }
}

/// Prints SDK failures as `error: CODE: message` and exits with the CLI's codes.
enum TokenFailure {
    static func reporting(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as AssentError where error.code == .server && error.mobileTokenCode == .invalidOperation {
            // The Mobile Token API says INVALID_OPERATION for an id it does not know: as `assent admin` says it.
            CLIFailure.fail(
                code: ServerErrorCode.operationNotFound.rawValue,
                message: "No operation with this id is available to this token.", exitCode: 3)
        } catch let error as AssentError where error.code == .network {
            CLIFailure.fail(
                code: CLIFailure.unreachableCode,
                message: error.message.wholeMatch(of: /Cannot reach (.+)\./).map {
                    CLIFailure.unreachable(String($0.1), error.underlying)
                } ?? error.message,
                exitCode: 6)
        } catch let error as AssentError {
            let exitCode: Int32 =
                switch error.code {
                case .network: 6
                case .wrongPIN, .blocked, .removed, .factorUnavailable, .proximityCheckFailed, .numberMismatch,
                    .operationDataMismatch:
                    4
                case .notActivated: 3
                case .operationFinished, .operationExpired, .operationFailed, .alreadyActivated: 5
                case .invalidInput, .proximityCheckMissing, .numberMissing: 2
                default: error.httpStatus.map(CLIFailure.exitCode(forStatus:)) ?? 1
                }
            CLIFailure.fail(code: error.code.rawValue, message: message(error), exitCode: exitCode)
        }
    }

    /// The message once, plainly: the attempts left after a wrong PIN, the server's code only when the SDK's
    /// own code does not already say what happened.
    static func message(_ error: AssentError) -> String {
        var text = error.message
        if let remaining = error.remainingAttempts {
            text += " \(remaining) attempt\(remaining == 1 ? "" : "s") left."
        }
        if error.code == .server, let serverCode = error.serverCode {
            text += " (\(serverCode)\(error.httpStatus.map { ", HTTP \($0)" } ?? ""))"
        }
        return text
    }
}
