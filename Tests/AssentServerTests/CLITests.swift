import AssentModel
import AssentTesting
import Foundation
import Synchronization
import Testing

@testable import AssentServerTesting

/// The `assent` executable driven as a subprocess, as an operator uses it.
@Suite("assent serve and assent admin as subprocesses")
struct CLITests {
    /// `.build/<triple>/debug/assent`, next to the test bundle.
    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("assent")
    }

    struct Result {
        var status: Int32
        var output: String
        var errors: String
    }

    /// Runs `assent` with `arguments` and waits for it on a thread of its own: waiting for a subprocess must not hold
    /// one of the few threads Swift's concurrency pool has (two on a two-core machine), or parallel tests waiting on
    /// subprocesses starve every other test — TLS handshakes of the push contract tests timed out that way.
    static func run(_ arguments: [String], environment: [String: String] = [:], input: String? = nil) async throws
        -> Result
    {
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let outcome = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Swift.Result {
                        try Spawn.run([executable.path] + arguments, environment: merged, input: input)
                    })
            }
        }
        return Result(status: outcome.status, output: outcome.output, errors: outcome.errors)
    }

    /// The QR code drawn in a command's output (its half-block lines), read by zbarimg as a phone would read it
    /// from a dark terminal.
    static func scannedQR(_ output: String) throws -> String? {
        let lines = output.split(separator: "\n").filter { line in
            line.contains("█") && line.allSatisfy { " ▀▄█".contains($0) }
        }
        return try QRReader.decode(png: QRReader.terminalPNG(lines.joined(separator: "\n"), lightOnDark: true))
    }

    @Test("Bootstrap a key without a server, serve, manage an activation, get meaningful exit codes, stop cleanly")
    func operatorSession() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable.path) else {
            Issue.record("The assent executable is not built at \(Self.executable.path); run swift build first.")
            return
        }
        let dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("assent-cli-\(UUID())")
        defer { try? FileManager.default.removeItem(at: dataDirectory) }

        let created = try await Self.run([
            "admin", "api-key", "create", "--name", "ci", "--data-dir", dataDirectory.path, "--json",
        ])
        #expect(created.status == 0, "\(created.errors)")
        // A push-bombing limit of 0 is refused before anything starts.
        let zero = try await Self.run(["serve", "--data-dir", dataDirectory.path, "--push-logins-per-hour", "0"])
        #expect(zero.status != 0 && zero.errors.contains("--push-logins-per-hour is a whole number above 0"))
        // The operator's own webhook obeys the egress policy: loopback only when allowed, a bad network named.
        let hook = ["ASSENT_WEBHOOK_SECRET": "0123456789abcdef"]
        let loopbackHook = try await Self.run(
            ["serve", "--data-dir", dataDirectory.path, "--webhook-url", "http://127.0.0.1:9/hook"], environment: hook)
        #expect(
            loopbackHook.status != 0
                && loopbackHook.errors.contains("--webhook-url is refused: 127.0.0.1 is a loopback")
                && loopbackHook.errors.contains("--egress-allow"), "\(loopbackHook.errors)")
        let badNetwork = try await Self.run(
            ["serve", "--data-dir", dataDirectory.path, "--egress-allow", "10.0.0.0/33"], environment: hook)
        #expect(
            badNetwork.status != 0 && badNetwork.errors.contains("prefix length is 0 to 32"), "\(badNetwork.errors)")
        struct KeyOutput: Decodable { let apiKey: String }
        let apiKey = try JSONDecoder().decode(KeyOutput.self, from: Data(created.output.utf8)).apiKey
        let kekAttributes = try FileManager.default.attributesOfItem(
            atPath: dataDirectory.appendingPathComponent("kek").path)
        #expect((kekAttributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)

        let log = dataDirectory.appendingPathComponent("serve.out")
        #expect(FileManager.default.createFile(atPath: log.path, contents: nil))
        let server = Process()
        server.executableURL = Self.executable
        server.arguments = ["serve", "--port", "0", "--data-dir", dataDirectory.path, "--log-level", "warning"]
        server.standardOutput = try FileHandle(forWritingTo: log)
        server.standardError = FileHandle.nullDevice
        try server.run()
        var url: String?
        for _ in 0..<600 where url == nil {
            try await Task.sleep(for: .milliseconds(100))
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            url = text.split(separator: "\n").first { $0.hasPrefix("Assent is listening on ") }
                .map { String($0.dropFirst("Assent is listening on ".count)) }
        }
        let serverURL = try #require(url, "the server did not report its address")
        let serveOutput = try String(contentsOf: log, encoding: .utf8)
        #expect(!serveOutput.contains("Operator API key"), "a key existed, so none is printed")
        let connection = ["ASSENT_URL": serverURL, "ASSENT_API_KEY": apiKey]

        let activation = try await Self.run(
            ["admin", "activation", "create", "--user", "bob", "--json"], environment: connection)
        #expect(activation.status == 0, "\(activation.errors)")
        let response = try OperatorJSON.decoder().decode(
            CreateActivationResponse.self, from: Data(activation.output.utf8))
        #expect(response.activationQRCode.hasPrefix(response.activationCode + "#"))

        // Printed into a file, no QR code unless asked; with --qr, the drawn code scans as the activation QR text.
        #expect(!activation.output.contains("▀"))
        let drawn = try await Self.run(
            ["admin", "activation", "create", "--user", "carol", "--qr"], environment: connection)
        #expect(drawn.status == 0, "\(drawn.errors)")
        let qrText = try #require(
            drawn.output.split(separator: "\n").first { $0.hasPrefix("activationQRCode") }?.split(separator: " ").last)
        #expect(try Self.scannedQR(drawn.output) == String(qrText))

        let shown = try await Self.run(["admin", "activation", "show", response.activationId], environment: connection)
        #expect(shown.status == 0)
        #expect(shown.output.contains("CREATED") && shown.output.contains("FIELD"))
        let listed = try await Self.run(["admin", "activation", "list", "--user", "bob"], environment: connection)
        #expect(listed.output.contains(response.activationId))

        #expect(try await Self.run(["admin", "activation", "show", "missing"], environment: connection).status == 3)
        let usage = try await Self.run(["admin", "activation", "show"], environment: connection)
        #expect(usage.status == 2 && usage.errors.contains("Usage: assent admin activation show"))
        let conflict = try await Self.run(
            ["admin", "activation", "commit", response.activationId], environment: connection)
        #expect(conflict.status == 5)
        #expect(conflict.errors.contains("ACTIVATION_INVALID_STATE"))
        #expect(
            try await Self.run(
                ["admin", "activation", "show", response.activationId],
                environment: ["ASSENT_URL": serverURL, "ASSENT_API_KEY": "ak_wrong"]
            ).status == 4)
        #expect(
            try await Self.run(
                ["admin", "audit"], environment: ["ASSENT_URL": "http://127.0.0.1:1", "ASSENT_API_KEY": apiKey]
            ).status == 6)
        // OpenID clients: register (secret once), list, show, remove; the issuer follows the listening address.
        #expect(serveOutput.contains("OpenID issuer: \(serverURL)"))
        let client = try await Self.run(
            [
                "admin", "client", "create", "--name", "bank", "--mode", "ping", "--endpoint",
                "https://bank.example/cb",
                "--json",
            ], environment: connection)
        #expect(client.status == 0, "\(client.errors)")
        let registered = try OperatorJSON.decoder().decode(CreateClientResponse.self, from: Data(client.output.utf8))
        let clientSecret = try #require(registered.clientSecret)
        #expect(registered.client.deliveryMode == "ping" && clientSecret.count >= 43)
        let clients = try await Self.run(["admin", "client", "list"], environment: connection)
        #expect(
            clients.output.contains(registered.client.clientId) && !clients.output.contains(clientSecret))
        let shownClient = try await Self.run(
            ["admin", "client", "show", registered.client.clientId], environment: connection)
        #expect(shownClient.output.contains("https://bank.example/cb"))
        let badMode = try await Self.run(
            ["admin", "client", "create", "--name", "x", "--mode", "ping"], environment: connection)
        #expect(badMode.status == 2 && badMode.errors.contains("notificationEndpoint"), "\(badMode.errors)")
        #expect(try await Self.run(["admin", "client", "rotate-keys"], environment: connection).status == 0)
        #expect(
            try await Self.run(["admin", "client", "remove", registered.client.clientId], environment: connection)
                .status == 0
        )
        #expect(
            try await Self.run(["admin", "client", "show", registered.client.clientId], environment: connection).status
                == 3)
        let removed = try await Self.run(
            ["admin", "activation", "remove", response.activationId, "--json"], environment: connection)
        #expect(removed.output.contains("REMOVED"))
        let audit = try await Self.run(["admin", "audit", "--user", "bob"], environment: connection)
        #expect(audit.output.contains("activation.removed") && audit.output.contains("key:ci"))

        // Operations: create, show, list, offline QR and a wrong typed code, cancel, templates.
        let operation = try await Self.run(
            [
                "admin", "operation", "create", "--user", "bob", "--data", "A1*A100CZK*ICZ2730300000001165254011",
                "--title", "Confirm payment", "--message", "Pay 100 CZK?", "--json",
            ], environment: connection)
        #expect(operation.status == 0, "\(operation.errors)")
        let info = try OperatorJSON.decoder().decode(OperationInfo.self, from: Data(operation.output.utf8))
        #expect(info.status == .pending && info.formData["en"]?.title == "Confirm payment")
        let pending = try await Self.run(
            ["admin", "operation", "list", "--user", "bob", "--status", "PENDING"], environment: connection)
        #expect(pending.output.contains(info.id))
        let qr = try await Self.run(["admin", "operation", "offline-qr", info.id], environment: connection)
        #expect(qr.status == 0 && qr.output.hasPrefix(info.id + "\nConfirm payment\nPay 100 CZK?\n"))
        let drawnQR = try await Self.run(
            ["admin", "operation", "offline-qr", info.id, "--qr"], environment: connection)
        let offlineText = try #require(drawnQR.output.components(separatedBy: "\n\n").first)
        #expect(offlineText.hasPrefix(info.id + "\n") && !qr.output.contains("█"))
        #expect(try Self.scannedQR(drawnQR.output) == offlineText)
        let typed = try await Self.run(
            [
                "admin", "operation", "offline-verify", info.id, "--activation", response.activationId, "--code",
                "12345678-12345678",
            ], environment: connection)
        // The activation was removed above, so its codes count for nothing.
        #expect(typed.status == 5 && typed.errors.contains("ACTIVATION_INVALID_STATE"))
        #expect(try await Self.run(["admin", "operation", "proximity", info.id], environment: connection).status == 5)
        let link = try await Self.run(
            ["admin", "operation", "approval-link", info.id, "--return", "https://bank.example/paid"],
            environment: connection)
        #expect(link.status == 0 && link.output.contains("/approve/\(info.id)?t="), "\(link.errors)")
        let offlineLink = try await Self.run(
            ["admin", "operation", "approval-link", info.id, "--return", "https://bank.example/paid", "--offline"],
            environment: connection)
        let offlineURL = try #require(URL(string: offlineLink.output.trimmingCharacters(in: .whitespacesAndNewlines)))
        let offlinePage = try await HTTPClient(base: offlineURL).send("GET", offlineURL.absoluteString)
        #expect(offlinePage.text.contains("Approve with a QR code instead"), "\(offlineLink.errors)")
        let badLink = try await Self.run(
            ["admin", "operation", "approval-link", info.id, "--return", "javascript:alert(1)"], environment: connection
        )
        #expect(badLink.status == 2 && badLink.errors.contains("returnUrl"))
        let canceled = try await Self.run(
            ["admin", "operation", "cancel", info.id, "--reason", "WRONG_AMOUNT"], environment: connection)
        #expect(
            canceled.status == 0 && canceled.output.contains("CANCELED") && canceled.output.contains("WRONG_AMOUNT"))
        #expect(try await Self.run(["admin", "operation", "cancel", info.id], environment: connection).status == 5)
        let templateFile = dataDirectory.appendingPathComponent("login.json")
        try Data(
            #"{"name":"login","data":"A2*T{site}","formData":{"en":{"title":"Log in to {site}?","message":""}}}"#.utf8
        ).write(to: templateFile)
        let saved = try await Self.run(
            ["admin", "operation", "template", "put", "login", "--file", templateFile.path], environment: connection)
        #expect(saved.status == 0, "\(saved.errors)")
        let fromTemplate = try await Self.run(
            ["admin", "operation", "create", "--user", "bob", "--template", "login", "--param", "site=example.com"],
            environment: connection)
        #expect(fromTemplate.status == 0 && fromTemplate.output.contains("A2*Texample.com"), "\(fromTemplate.errors)")

        server.terminate()  // SIGTERM: graceful shutdown
        server.waitUntilExit()
        #expect(server.terminationReason == .exit && server.terminationStatus == 0)
    }

    /// Runs `body` with `assent serve` started on a free port, its data in a fresh folder `work` (removed
    /// afterwards), and the lines it printed; a server `body` did not stop is stopped. Records an issue instead when
    /// the executable is not built.
    static func withServer(
        _ name: String, arguments: [String] = [],
        _ body: (_ work: URL, _ server: Process, _ printed: [String: String]) async throws -> Void
    ) async throws {
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            Issue.record("The assent executable is not built at \(executable.path); run swift build first.")
            return
        }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("assent-\(name)-\(UUID())")
        defer { try? FileManager.default.removeItem(at: work) }
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let (server, printed) = try await serve(work, arguments: arguments)
        defer { if server.isRunning { server.terminate() } }
        try await body(work, server, printed)
    }

    /// Runs `assent admin --json <arguments>` and decodes what it printed.
    static func admin<T: Decodable>(_ arguments: [String], environment: [String: String], as type: T.Type)
        async throws -> T
    {
        let result = try await run(["admin", "--json"] + arguments, environment: environment)
        return try OperatorJSON.decoder().decode(type, from: Data(result.output.utf8))
    }

    /// `ASSENT_URL` and `ASSENT_API_KEY` of the server that printed `printed`, as an operator exports them.
    static func connection(_ printed: [String: String]) throws -> [String: String] {
        [
            "ASSENT_URL": try #require(printed["url"]),
            "ASSENT_API_KEY": try #require(printed["Operator API key (shown once, store it now)"]),
        ]
    }

    /// Starts `assent serve` on a free port with its data under `work`; returns the process and the lines it
    /// printed as `label: value` (and `url`), once it listens.
    static func serve(_ work: URL, port: Int = 0, arguments: [String] = []) async throws -> (Process, [String: String])
    {
        let log = work.appendingPathComponent("serve.out")
        #expect(FileManager.default.createFile(atPath: log.path, contents: nil))
        let server = Process()
        server.executableURL = Self.executable
        server.arguments =
            ["serve", "--port", String(port), "--data-dir", work.appendingPathComponent("data").path] + arguments
        server.standardOutput = try FileHandle(forWritingTo: log)
        let logLines = work.appendingPathComponent("serve.err")
        #expect(FileManager.default.createFile(atPath: logLines.path, contents: nil))
        server.standardError = try FileHandle(forWritingTo: logLines)
        try server.run()
        var printed: [String: String] = [:]
        // The keys are printed before the server listens: wait for both.
        for _ in 0..<600
        where printed["Operator API key (shown once, store it now)"] == nil || printed["Operator console"] == nil {
            try await Task.sleep(for: .milliseconds(100))
            for line in ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n") {
                if line.hasPrefix("Assent is listening on ") {
                    printed["url"] = String(line.dropFirst("Assent is listening on ".count))
                } else if let colon = line.range(of: ": ") {
                    printed[String(line[..<colon.lowerBound])] = String(line[colon.upperBound...])
                }
            }
        }
        return (server, printed)
    }

    @Test("token activate checks the PIN before spending the code; token approve takes and names the proximity code")
    func tokenPINAndProximity() async throws {
        try await Self.withServer("token") { work, server, printed in
            let url = try #require(printed["url"])
            let config = try #require(printed["SDK configuration"])
            let environment = try Self.connection(printed)
            let profile = ["--profile", work.appendingPathComponent("token").path]
            // The name people see, set by the operator; a name the server refuses is a usage error.
            let renamed = try await Self.run(
                ["admin", "application", "update", "--name", "Example Bank"], environment: environment)
            #expect(renamed.status == 0 && renamed.output.contains("Example Bank"), "\(renamed.errors)")
            let shownApplication = try await Self.run(["admin", "application"], environment: environment)
            #expect(shownApplication.output.contains("name") && shownApplication.output.contains("Example Bank"))
            let blank = try await Self.run(
                ["admin", "application", "update", "--name", "   "], environment: environment)
            #expect(blank.status == 2 && blank.errors.contains("1 to 100 characters"), "\(blank.errors)")
            // The pages' default language: set, shown, a language the pages are not written in refused.
            let czech = try await Self.run(
                ["admin", "application", "branding", "--language", "cs"], environment: environment)
            #expect(czech.status == 0 && czech.output.contains("language") && czech.output.contains("cs"))
            let french = try await Self.run(
                ["admin", "application", "branding", "--language", "fr"], environment: environment)
            #expect(french.status != 0 && french.errors.contains("en, cs, de"), "\(french.errors)")
            // A key that was sent but is wrong is called refused, not missing.
            let wrongKey = try await Self.run(
                ["admin", "application"], environment: environment.merging(["ASSENT_API_KEY": "ak_wrong"]) { $1 })
            #expect(wrongKey.status == 4 && wrongKey.errors.contains("The API key was refused"), "\(wrongKey.errors)")
            // A usage error a command finds after parsing shows that command's usage.
            let badServer = try await Self.run(
                ["token", "activate", "--server", "ftp://bank.example", "--config", config, "ABCDE"] + profile)
            #expect(
                badServer.status == 2 && badServer.errors.contains("Usage: assent token activate"),
                "\(badServer.errors)")
            #expect(badServer.errors.contains("See 'assent token activate --help'"), "\(badServer.errors)")
            let activation = try await Self.admin(
                ["activation", "create", "--user", "alice"], environment: environment, as: CreateActivationResponse.self
            )
            func activationState(_ id: String) async throws -> String {
                try await Self.admin(["activation", "show", id], environment: environment, as: ActivationInfo.self)
                    .status
            }
            // A PIN the policy refuses stops the activation before the code reaches the server: the code stays usable.
            let activate = ["token", "activate", "--server", url, "--config", config, activation.activationCode]
            let short = try await Self.run(
                activate + ["--pin-stdin", "--name", "Alice's laptop"] + profile, environment: environment,
                input: "12\n")
            #expect(short.status == 2 && short.errors.contains("The PIN must have 4 to"), "\(short.errors)")
            #expect(!short.errors.contains("Fingerprint"))
            #expect(try await activationState(activation.activationId) == "CREATED")
            let activated = try await Self.run(
                activate + ["--pin-stdin", "--name", "Alice's laptop"] + profile, environment: environment,
                input: "2468\n")
            #expect(activated.status == 0, "\(activated.errors)")
            #expect(try await activationState(activation.activationId) == "ACTIVE")
            let shown = try await Self.run(
                ["admin", "activation", "show", activation.activationId], environment: environment)
            #expect(shown.output.contains("Alice's laptop"), "\(shown.output)")

            // Saving fails after the server activated (here the profile file's place is taken by a folder): the
            // token removes the server's activation again rather than leave one no device holds.
            let bobs = try await Self.admin(
                ["activation", "create", "--user", "bob"], environment: environment, as: CreateActivationResponse.self)
            let blocked = work.appendingPathComponent("bob-token")
            try FileManager.default.createDirectory(
                at: blocked.appendingPathComponent("profile.json"), withIntermediateDirectories: true)
            let unsaved = try await Self.run(
                ["token", "activate", "--server", url, "--config", config, bobs.activationCode, "--pin-stdin"]
                    + ["--profile", blocked.path], environment: environment, input: "2468\n")
            #expect(unsaved.status != 0 && unsaved.errors.contains("removed on the server again"), "\(unsaved.errors)")
            #expect(try await activationState(bobs.activationId) == "REMOVED")

            // An operation with a proximity check: without the code, the CLI says so and nothing is counted.
            let created = try await Self.run(
                [
                    "admin", "operation", "create", "--user", "alice", "--data", "A1*A100CZK", "--title", "Pay",
                    "--proximity-check", "--json",
                ], environment: environment)
            let operation = try OperatorJSON.decoder().decode(OperationInfo.self, from: Data(created.output.utf8))
            func failedAttempts() async throws -> Int {
                try await Self.admin(
                    ["operation", "show", operation.id], environment: environment, as: OperationInfo.self
                )
                .failedAttempts
            }
            let approve = ["token", "approve", operation.id, "--pin-stdin"] + profile
            let missing = try await Self.run(approve, environment: environment, input: "2468\n")
            #expect(missing.status == 2 && missing.errors.contains("PROXIMITY_CHECK_MISSING"), "\(missing.errors)")
            #expect(missing.errors.contains("--proximity-qr") && !missing.errors.contains("WRONG_PIN"))
            #expect(try await failedAttempts() == 0)
            // A wrong code is named as such and counts against the operation.
            let wrong = try await Self.run(
                approve + ["--proximity-code", "00000000"], environment: environment, input: "2468\n")
            #expect(wrong.status == 4 && wrong.errors.contains("PROXIMITY_CHECK_FAILED"), "\(wrong.errors)")
            #expect(try await failedAttempts() == 1)
            // The code the site shows, as the QR code's text in a file: approved.
            let proximity = try await Self.run(
                ["admin", "--json", "operation", "proximity", operation.id], environment: environment)
            let code = try OperatorJSON.decoder().decode(ProximityCodeResponse.self, from: Data(proximity.output.utf8))
            let qrFile = work.appendingPathComponent("proximity.txt")
            try Data(code.jwt.utf8).write(to: qrFile)
            let approved = try await Self.run(
                approve + ["--proximity-qr", qrFile.path], environment: environment, input: "2468\n")
            #expect(
                approved.status == 0 && approved.output.hasSuffix("\nApproved operation \(operation.id).\n"),
                "\(approved.errors)"
            )
            // Finished: no PIN asked (standard input stays unread), nothing counted.
            let again = try await Self.run(
                ["token", "approve", operation.id] + profile, environment: environment, input: "")
            #expect(again.status == 5 && again.errors.contains("OPERATION_FINISHED"), "\(again.errors)")
            // An id nobody knows: not found, as `assent admin` says it.
            let unknown = try await Self.run(
                ["token", "approve", UUID().uuidString.lowercased()] + profile, environment: environment, input: "")
            #expect(unknown.status == 3 && unknown.errors.contains("OPERATION_NOT_FOUND"), "\(unknown.errors)")
            let adminUnknown = try await Self.run(
                ["admin", "operation", "show", UUID().uuidString.lowercased()], environment: environment)
            #expect(adminUnknown.status == 3 && adminUnknown.errors.contains("OPERATION_NOT_FOUND"))
            #expect(!again.errors.contains("PIN"), "\(again.errors)")
            #expect(try await failedAttempts() == 1)
            server.terminate()
            server.waitUntilExit()
        }
    }

    @Test("kek rotate while the server runs: it waits for the server to hold the key; retire empties the old key out")
    func kekRotation() async throws {
        try await Self.withServer("kek") { work, server, printed in
            let url = try #require(printed["url"])
            let config = try #require(printed["SDK configuration"])
            let environment = try Self.connection(printed)
            let data = ["--data-dir", work.appendingPathComponent("data").path]
            let profile = ["--profile", work.appendingPathComponent("token").path]
            let activation = try await Self.admin(
                ["activation", "create", "--user", "alice"], environment: environment, as: CreateActivationResponse.self
            )
            let activated = try await Self.run(
                ["token", "activate", "--server", url, "--config", config, activation.activationCode, "--pin-stdin"]
                    + profile, environment: environment, input: "2468\n")
            #expect(activated.status == 0, "\(activated.errors)")
            let kekFile = work.appendingPathComponent("data/kek")
            let oldKey = try String(contentsOf: kekFile, encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)

            // The ring is ASSENT_KEK: no key is made for it, and a key the running server lacks is refused.
            struct NewKey: Decodable { let key, keyId: String }
            let made = try await Self.run(["admin", "kek", "new", "--json"])
            let newKey = try JSONDecoder().decode(NewKey.self, from: Data(made.output.utf8))
            let envRing = ["ASSENT_KEK": "\(oldKey),\(newKey.key)"]
            let unnamed = try await Self.run(["admin", "kek", "rotate"] + data, environment: envRing)
            #expect(unnamed.status != 0 && unnamed.errors.contains("ASSENT_KEK for every process"), "\(unnamed.errors)")
            let lacking = try await Self.run(
                ["admin", "kek", "rotate", "--to", newKey.keyId, "--wait", "1"] + data, environment: envRing)
            #expect(
                lacking.status != 0 && lacking.errors.contains("does not hold key \(newKey.keyId)"),
                "\(lacking.errors)")

            // The kek file: a new key is added, the running server re-reads it, then everything is re-sealed.
            struct Rotation: Decodable { let previousKeyId, sealingKeyId: String, resealed, unreadable: Int }
            let rotated = try await Self.run(["admin", "kek", "rotate", "--json"] + data)
            #expect(rotated.status == 0, "\(rotated.errors)")
            let rotation = try JSONDecoder().decode(Rotation.self, from: Data(rotated.output.utf8))
            #expect(rotation.resealed > 5 && rotation.unreadable == 0, "\(rotation)")
            #expect(try String(contentsOf: kekFile, encoding: .utf8).split(separator: "\n").count == 2)
            let status = try await Self.run(["admin", "kek", "status"] + data)
            #expect(
                status.output.split(separator: "\n").contains {
                    $0.hasPrefix("to re-seal ") && $0.hasSuffix(" nothing")
                }
                    && status.output.contains("holds \(rotation.previousKeyId) \(rotation.sealingKeyId)"),
                "\(status.output)")
            let retired = try await Self.run(["admin", "kek", "retire", rotation.previousKeyId] + data)
            #expect(
                retired.status == 0 && retired.output.contains("removed from the kek file"), "\(retired.errors)")
            let ring = try String(contentsOf: kekFile, encoding: .utf8)
            #expect(ring.split(separator: "\n").count == 1 && !ring.contains(oldKey))
            let attributes = try FileManager.default.attributesOfItem(atPath: kekFile.path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            let sealing = try await Self.run(["admin", "kek", "retire", rotation.sealingKeyId] + data)
            #expect(sealing.status != 0 && sealing.errors.contains("rotate to another key first"))

            // The device activated under the old key approves an operation.
            let created = try await Self.run(
                [
                    "admin", "operation", "create", "--user", "alice", "--data", "A1*A100CZK", "--title", "Pay",
                    "--json",
                ],
                environment: environment)
            let operation = try OperatorJSON.decoder().decode(OperationInfo.self, from: Data(created.output.utf8))
            let approved = try await Self.run(
                ["token", "approve", operation.id, "--pin-stdin"] + profile, environment: environment, input: "2468\n")
            #expect(approved.status == 0 && approved.output.contains("Approved operation"), "\(approved.errors)")
            server.terminate()
            server.waitUntilExit()
        }
    }

    @Test("SIGTERM stops assent serve cleanly while a waiting page holds its live stream open")
    func stopsOnSIGTERM() async throws {
        try await Self.withServer("stop") { work, server, printed in
            let environment = try Self.connection(printed)
            let created = try await Self.run(
                ["admin", "operation", "create", "--user", "alice", "--data", "A2", "--title", "Log in?", "--json"],
                environment: environment)
            let operation = try OperatorJSON.decoder().decode(OperationInfo.self, from: Data(created.output.utf8))
            let link = try await Self.run(
                ["admin", "operation", "approval-link", operation.id, "--return", "https://bank.example/", "--json"],
                environment: environment)
            #expect(link.status == 0, "\(link.errors)")
            #expect(!link.output.contains("\\/"), "JSON meant for copying keeps its slashes: \(link.output)")
            let url = try #require(
                URLComponents(
                    string: try OperatorJSON.decoder().decode(ApprovalLinkResponse.self, from: Data(link.output.utf8))
                        .url))
            let base = try #require(printed["url"])
            let stream = try await EventStreamReader(
                base: try #require(URL(string: base)),
                path: "\(url.path)/events?\(url.query ?? "")")
            try await stream.wait("the stream to start") { _ in !stream.text.isEmpty }

            let signalled = ContinuousClock.now
            server.terminate()  // SIGTERM
            // A held stream would keep the server up for good (serve has no deadline that cancels it): a minute
            // tells a hang from a stop, which on a loaded machine has taken over 10 s. How long it took is no test.
            while server.isRunning, ContinuousClock.now - signalled < .seconds(60) {
                try await Task.sleep(for: .milliseconds(50))
            }
            let took = ContinuousClock.now - signalled
            let logged = (try? String(contentsOf: work.appendingPathComponent("serve.err"), encoding: .utf8)) ?? ""
            #expect(!server.isRunning, "assent serve did not stop in \(took): \(logged.suffix(1500))")
            #expect(server.terminationReason == .exit && server.terminationStatus == 0)
            try await stream.waitForEnd(seconds: 5)
            #expect(stream.hasEndedCleanly)
            #expect(logged.contains("shutting down") && logged.contains("\"stopped\""), "\(logged.suffix(600))")
        }
    }

    @Test(
        "assent admin tfa: accounts, e-mail factors, policy, devices, removal; push sign-ins approved by assent token")
    func adminTFA() async throws {
        try await Self.withServer("tfa") { work, server, printed in
            #expect(printed["Two-factor login"] == "/api/tfa with totp, push, passkey, backup")
            let environment = try Self.connection(printed)
            let created = try await Self.run(
                [
                    "admin", "tfa", "create-account", "--user", "alice", "--password-stdin", "--email",
                    "alice@bank.example",
                ],
                environment: environment, input: "correct horse battery\n")
            #expect(created.status == 0, "\(created.errors)")
            #expect(created.output.contains("a***e@b***k.example") && created.output.contains("yes"))
            let renamed = try await Self.run(
                ["admin", "tfa", "rename-account", "alice", "--name", "Alice Novak"], environment: environment)
            #expect(renamed.status == 0 && renamed.output.contains("Alice Novak"), "\(renamed.errors)")
            let short = try await Self.run(
                ["admin", "tfa", "create-account", "--user", "bob", "--password-stdin"], environment: environment,
                input: "short\n")
            #expect(short.status != 0 && short.errors.contains("8 to 1024"))
            let policy = try await Self.run(["admin", "tfa", "policy"], environment: environment)
            #expect(
                policy.output.contains("yes") && policy.output.contains("totp, push, passkey, backup"),
                "\(policy.output)")
            let changed = try await Self.run(
                ["admin", "tfa", "policy", "--required", "false", "--provider", "totp", "--json"],
                environment: environment)
            let decoded = try JSONDecoder().decode(TFAPolicy.self, from: Data(changed.output.utf8))
            #expect(decoded.required == false && decoded.providers == [.totp] && decoded.numberMatching == "choose")
            let devices = try await Self.run(["admin", "tfa", "devices", "alice"], environment: environment)
            #expect(devices.status == 0 && devices.output.contains("DEVICE ID"))

            // A website sign-in approved with `assent token approve`: the token opts in, then approves the sign-in.
            let url = try #require(printed["url"])
            let profile = ["--profile", work.appendingPathComponent("token").path]
            let activation = try OperatorJSON.decoder().decode(
                CreateActivationResponse.self,
                from: Data(
                    try await Self.run(
                        ["admin", "activation", "create", "--user", "alice", "--json"], environment: environment
                    )
                    .output.utf8))
            let activated = try await Self.run(
                ["token", "activate", "--server", url, "--config", try #require(printed["SDK configuration"])]
                    + [activation.activationCode, "--pin-stdin"] + profile, environment: environment, input: "2468\n")
            #expect(activated.status == 0, "\(activated.errors)")
            _ = try await Self.run(
                ["admin", "tfa", "policy", "--required", "true", "--provider", "push"], environment: environment)
            let web = TFAClient.Web(base: try #require(URL(string: url)))
            for mode in [TFAMode.register, .verify] {
                let login = try await web.post(
                    "/api/tfa/login", TFALoginRequest(userId: "alice", password: "correct horse battery"))
                let interruption = try OperatorJSON.decoder().decode(TFAInterruption.self, from: login)
                let started = try OperatorJSON.decoder().decode(
                    TFAInitResponse.self,
                    from: try await web.post(
                        "/api/tfa/init", TFAInitRequest(regToken: interruption.regToken, provider: .push, mode: mode)))
                let sentBody =
                    mode == .register
                    ? try await web.post(
                        "/api/tfa/push/optin",
                        TFAPushOptInRequest(assertion: started.assertion, activationId: activation.activationId))
                    : try await web.post("/api/tfa/push/send", TFAAssertionRequest(assertion: started.assertion))
                let sent = try OperatorJSON.decoder().decode(TFAPushSent.self, from: sentBody)
                // A sign-in (not the opt-in) asks for the number the site shows; without it nothing is counted.
                #expect((sent.number != nil) == (mode == .verify))
                if mode == .verify {
                    let unnumbered = try await Self.run(
                        ["token", "approve", sent.operationId, "--pin-stdin"] + profile, environment: environment,
                        input: "2468\n")
                    #expect(unnumbered.status == 2 && unnumbered.errors.contains("--number"), "\(unnumbered.errors)")
                }
                let approved = try await Self.run(
                    ["token", "approve", sent.operationId, "--pin-stdin"]
                        + (sent.number.map { ["--number", "\($0)"] } ?? [])
                        + profile, environment: environment, input: "2468\n")
                #expect(approved.status == 0, "\(approved.errors)")
                let status = try OperatorJSON.decoder().decode(
                    TFAPushStatus.self,
                    from: try await web.post("/api/tfa/push/verify", TFAAssertionRequest(assertion: started.assertion)))
                #expect(status.status == "APPROVED")
                let success = try OperatorJSON.decoder().decode(
                    TFALoginSuccess.self,
                    from: try await web.post(
                        "/api/tfa/finalize",
                        TFAFinalizeRequest(
                            regToken: interruption.regToken, assertion: started.assertion,
                            providerAssertion: try #require(status.providerAssertion))))
                #expect(success.userId == "alice")
            }

            // The same sign-in on the hosted page in a browser: it waits until `assent token approve`, then goes on.
            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("login/cli"))
            defer { Task { await browser.quit() } }
            try await browser.open("\(url)/login")
            try await browser.type("#userId", "alice")
            try await browser.type("#password", "correct horse battery")
            try await browser.click("#submit")
            try await browser.click("#provider-push")
            try await browser.element("#status")
            try await browser.screenshot("01-wait")
            var requestId: String?
            let deadline = Date().addingTimeInterval(240)
            while requestId == nil, Date() < deadline {
                let listed = try await Self.run(["token", "list", "--json"] + profile, environment: environment)
                requestId =
                    (try? MobileTokenJSON.decoder().decode([MobileOperation].self, from: Data(listed.output.utf8)))?
                    .first?.id
                if requestId == nil { try await Task.sleep(for: .milliseconds(200)) }
            }
            let shown = try await browser.text("#number")
            let approvedOnPage = try await Self.run(
                ["token", "approve", try #require(requestId), "--pin-stdin", "--number", shown] + profile,
                environment: environment, input: "2468\n")
            #expect(approvedOnPage.status == 0, "\(approvedOnPage.errors)")
            try await browser.element("#signed-in", seconds: 60)
            try await browser.expectText("#methods", "password and approval on your phone")
            try await browser.screenshot("02-signed-in")
            await browser.quit()

            // The browser above is signed in as alice: signing her out everywhere ends that session.
            let signedOut = try await Self.run(["admin", "tfa", "sign-out", "alice"], environment: environment)
            #expect(
                signedOut.status == 0 && signedOut.output.contains("Signed alice out everywhere")
                    && signedOut.output.contains("1 browser session(s) ended"),
                "\(signedOut.output) \(signedOut.errors)")
            #expect(try await Self.run(["admin", "tfa", "sign-out", "nobody"], environment: environment).status == 3)
            #expect(
                try await Self.run(["admin", "tfa", "remove-account", "alice"], environment: environment).status == 0)
            #expect(try await Self.run(["admin", "tfa", "account", "alice"], environment: environment).status == 3)
        }
    }

    @Test("assent serve prints the console; an operator activates assent token from the QR on screen and sees APPROVED")
    func console() async throws {
        try await Self.withServer("console", arguments: ["--console-api-key-sign-in"]) { work, server, printed in
            let url = try #require(printed["url"])
            #expect(printed["Operator console"] == "\(url)/console (sign in with an operator account or an API key)")
            #expect(
                printed["First admin's console set-up link (one-time, 24 hours)"]?.hasPrefix("\(url)/console/setup?t=")
                    == true)
            let apiKey = try #require(printed["Operator API key (shown once, store it now)"])
            let environment = ["ASSENT_URL": url, "ASSENT_API_KEY": apiKey]
            let template = work.appendingPathComponent("payment.json")
            try Data(ConsoleBrowserTests.template.utf8).write(to: template)
            let saved = try await Self.run(
                ["admin", "operation", "template", "put", "payment", "--file", template.path], environment: environment)
            #expect(saved.status == 0, "\(saved.errors)")

            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("console/cli"))
            defer { Task { await browser.quit() } }
            try await browser.open("\(url)/console")
            try await browser.type("#apiKey", apiKey)
            try await browser.click("#submit")
            try await browser.element("#operator")
            try await browser.open("\(url)/console/users")
            try await browser.type("#new-activation #user", "bob")
            try await browser.click("#new-activation #create")
            let shot = try await browser.screenshot(of: "#activation-qr", "01-activation-qr")
            let scanned = try #require(try await QRReader.scan(png: shot), "no QR code on the page")
            let profile = ["--profile", work.appendingPathComponent("token").path]
            let activated = try await Self.run(
                ["token"] + profile
                    + ["activate", "--server", url, "--config", try #require(printed["SDK configuration"]), scanned]
                    + ["--pin-stdin"], environment: environment, input: "2468\n")
            #expect(activated.status == 0, "\(activated.errors)")
            try await browser.expectText("#state", "ACTIVE")
            try await browser.screenshot("02-active")

            try await browser.open("\(url)/console/operations/new?user=bob")
            try await browser.type("#params", "amount=99\ncurrency=CZK\niban=CZ2730300000001165254011")
            try await browser.click("#create")
            try await browser.expectText("#status", "PENDING")
            let operationId = try await browser.text("#operation-id")
            let approved = try await Self.run(
                ["token"] + profile + ["approve", operationId, "--pin-stdin"], environment: environment, input: "2468\n"
            )
            #expect(approved.status == 0, "\(approved.errors)")
            try await browser.expectText("#status", "APPROVED")
            try await browser.screenshot("03-approved")
            await browser.quit()
        }
    }

    @Test("assent rp ciba gets a verified ID token after assent token approve, in poll, ping and push modes")
    func relyingPartyCIBA() async throws {
        // The ping and push callbacks go to `rp ciba` on loopback, which a server reaches only when allowed.
        try await Self.withServer("rp", arguments: ["--egress-allow", "127.0.0.0/8"]) { work, server, printed in
            let url = try #require(printed["url"])
            let environment = try Self.connection(printed)
            let profile = ["--profile", work.appendingPathComponent("token").path]
            let activation = try await Self.run(
                ["admin", "activation", "create", "--user", "alice", "--json"], environment: environment)
            let code = try OperatorJSON.decoder().decode(
                CreateActivationResponse.self, from: Data(activation.output.utf8)
            ).activationCode
            let activated = try await Self.run(
                ["token", "activate", "--server", url, "--config", try #require(printed["SDK configuration"]), code]
                    + ["--pin-stdin"] + profile, environment: environment, input: "2468\n")
            #expect(activated.status == 0, "\(activated.errors)")

            for (mode, answer) in [("poll", "approve"), ("ping", "approve"), ("push", "approve"), ("poll", "reject")] {
                let port = try PostgresTestCluster.freePort()
                var create = ["admin", "client", "create", "--name", mode, "--mode", mode, "--json"]
                if mode != "poll" { create += ["--endpoint", "http://127.0.0.1:\(port)/ciba"] }
                let registered = try OperatorJSON.decoder().decode(
                    CreateClientResponse.self,
                    from: Data(try await Self.run(create, environment: environment).output.utf8))
                let binding = "M-\(mode)-\(answer)"
                var arguments = [
                    "rp", "ciba", "--server", url, "--client", registered.client.clientId, "--mode", mode,
                    "--login-hint", "alice", "--binding-message", binding, "--json",
                ]
                if mode != "poll" { arguments += ["--listen", "127.0.0.1:\(port)"] }
                let relyingParty = environment.merging(["ASSENT_CLIENT_SECRET": try #require(registered.clientSecret)])
                {
                    $1
                }
                let running = Task { try await Self.run(arguments, environment: relyingParty) }
                var operationId: String?
                // Time-based: on a loaded machine each `assent` subprocess takes a while to start.
                let deadline = Date().addingTimeInterval(240)
                while operationId == nil, Date() < deadline {
                    try await Task.sleep(for: .milliseconds(200))
                    let listed = try await Self.run(["token", "list", "--json"] + profile, environment: environment)
                    let operations =
                        (try? MobileTokenJSON.decoder().decode([MobileOperation].self, from: Data(listed.output.utf8)))
                        ?? []
                    operationId = operations.first { $0.formData.title.contains(binding) }?.id
                }
                let id = try #require(operationId, "the request did not reach the token (\(mode))")
                let done =
                    answer == "approve"
                    ? try await Self.run(
                        ["token", "approve", id, "--pin-stdin"] + profile, environment: environment, input: "2468\n")
                    : try await Self.run(["token", "reject", id] + profile, environment: environment)
                #expect(done.status == 0, "\(done.errors)")
                let result = try await running.value
                if answer == "reject" {
                    #expect(result.status == 4 && result.errors.contains("access_denied"), "\(result.errors)")
                    continue
                }
                #expect(result.status == 0, "\(mode): \(result.errors)")
                let claims = try #require(
                    try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
                #expect(claims["sub"] as? String == "alice")
                #expect(claims["binding_message"] as? String == binding)
                #expect(claims["aud"] as? String == registered.client.clientId)
                #expect(claims["iss"] as? String == url)
            }
            server.terminate()
            server.waitUntilExit()
        }
    }

    @Test(
        "What a person meets at the command line: a typo in the code, $HOME, the last wrong PIN, a mistyped command, no key, no server"
    )
    func personAtTheCommandLine() async throws {
        try await Self.withServer("person") { work, server, printed in
            let url = try #require(printed["url"])
            let config = try #require(printed["SDK configuration"])
            let environment = try Self.connection(printed)
            let activation = try await Self.run(
                ["admin", "activation", "create", "--user", "bob"], environment: environment)
            let code = try #require(
                activation.output.split(separator: "\n").first { $0.hasPrefix("activationCode") }?
                    .split(separator: " ").last.map(String.init))
            // One wrong character: the checksum says it is a typo, before anything reaches the server.
            let typo = (code.first == "A" ? "B" : "A") + code.dropFirst()
            let home = work.appendingPathComponent("home")
            let atHome = environment.merging(["HOME": home.path]) { $1 }
            let mistyped = try await Self.run(
                ["token", "activate", "--server", url, "--config", config, typo, "--pin-stdin"], environment: atHome,
                input: "2468\n")
            #expect(mistyped.status == 2 && mistyped.errors.contains("check for a typo"), "\(mistyped.errors)")
            // Without --profile the token lives in $HOME.
            let activated = try await Self.run(
                ["token", "activate", "--server", url, "--config", config, code, "--pin-stdin"], environment: atHome,
                input: "2468\n")
            #expect(activated.status == 0, "\(activated.errors)")
            #expect(FileManager.default.fileExists(atPath: home.appendingPathComponent(".assent/token").path))
            #expect(try await Self.run(["token", "status"], environment: atHome).output.contains("ACTIVE"))

            // Five wrong PINs: the last one fails the operation and blocks the token, and says both.
            let created = try await Self.run(
                [
                    "admin", "operation", "create", "--user", "bob", "--data", "A1*A100CZK*ICZ2730300000001165254011",
                    "--title", "Confirm payment", "--message", "Pay 100 CZK to Nela?",
                ], environment: environment)
            #expect(created.status == 0, "\(created.errors)")
            let operationId = try #require(
                created.output.split(separator: "\n").first { $0.hasPrefix("id ") }?.split(separator: " ").last
                    .map(String.init))
            var last = try await Self.run(
                ["token", "approve", operationId, "--pin-stdin"], environment: atHome, input: "1111\n")
            for _ in 1..<5 {
                last = try await Self.run(
                    ["token", "approve", operationId, "--pin-stdin"], environment: atHome, input: "1111\n")
            }
            #expect(last.errors.contains("This token is now BLOCKED too"), "\(last.errors)")
            #expect(try await Self.run(["token", "status"], environment: atHome).output.contains("BLOCKED"))

            // The help names each default once.
            let help = try await Self.run(["serve", "--help"])
            #expect(help.status == 0 && help.output.contains("--audit-checkpoint-rows"))
            #expect(!help.output.contains(/\(default [^)]*\)\.?\s+\(default:/), "\(help.output)")

            // A mistyped command gets a suggestion; a missing key is "not authorised" (4), as the table says.
            let lsit = try await Self.run(["token", "lsit"], environment: atHome)
            #expect(lsit.status == 2 && lsit.errors.contains("Did you mean 'assent token list'?"), "\(lsit.errors)")
            let noKey = try await Self.run(
                ["admin", "activation", "list", "--user", "bob"],
                environment: ["ASSENT_URL": url, "ASSENT_API_KEY": ""])
            #expect(noKey.status == 4 && noKey.errors.contains("ERR_NO_API_KEY"), "\(noKey.errors)")

            // The server gone: both CLIs say it in the same words, exit 6.
            server.terminate()
            server.waitUntilExit()
            let token = try await Self.run(["token", "status"], environment: atHome)
            let admin = try await Self.run(["admin", "activation", "list", "--user", "bob"], environment: environment)
            for result in [token, admin] {
                #expect(
                    result.status == 6
                        && result.errors.hasPrefix(
                            "error: ERR_UNREACHABLE: Cannot reach \(url)"),
                    "\(result.errors)")
                #expect(result.errors.contains("is the server running and the URL right?"), "\(result.errors)")
            }
        }
    }

    @Test("The README quickstart: serve, create an activation, activate the CLI token, approve an operation")
    func readmeQuickstart() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable.path) else {
            Issue.record("The assent executable is not built at \(Self.executable.path); run swift build first.")
            return
        }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("assent-quickstart-\(UUID())")
        defer { try? FileManager.default.removeItem(at: work) }
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        // Terminal 1: swift run assent serve (here on a free port).
        let (server, printed) = try await Self.serve(work)
        defer { if server.isRunning { server.terminate() } }
        let url = try #require(printed["url"])
        let apiKey = try #require(printed["Operator API key (shown once, store it now)"])
        let config = try #require(printed["SDK configuration"])
        // Terminal 2: export ASSENT_URL and ASSENT_API_KEY.
        let environment = ["ASSENT_URL": url, "ASSENT_API_KEY": apiKey]
        let profile = ["--profile", work.appendingPathComponent("token").path]

        let activation = try await Self.run(
            ["admin", "activation", "create", "--user", "alice"], environment: environment)
        #expect(activation.status == 0, "\(activation.errors)")
        let code = try #require(
            activation.output.split(separator: "\n").first { $0.hasPrefix("activationCode") }?
                .split(separator: " ").last.map(String.init))

        let activated = try await Self.run(
            ["token", "activate", "--server", url, "--config", config, code, "--pin-stdin"] + profile,
            environment: environment, input: "2468\n")
        #expect(activated.status == 0, "\(activated.errors)")
        #expect(activated.errors.contains("Fingerprint: "))

        let created = try await Self.run(
            [
                "admin", "operation", "create", "--user", "alice", "--data", "A1*A100CZK*ICZ2730300000001165254011",
                "--title", "Confirm payment", "--message", "Pay 100 CZK to Nela?",
            ], environment: environment)
        #expect(created.status == 0, "\(created.errors)")
        let operationId = try #require(
            created.output.split(separator: "\n").first { $0.hasPrefix("id ") }?.split(separator: " ").last
                .map(String.init))

        // Shared options may come before the subcommand, as in git or kubectl.
        let listed = try await Self.run(["token"] + profile + ["list"], environment: environment)
        #expect(listed.status == 0 && listed.output.contains(operationId) && listed.output.contains("Confirm payment"))

        let wrong = try await Self.run(
            ["token", "approve", operationId, "--pin-stdin"] + profile, environment: environment, input: "1111\n")
        #expect(wrong.status == 4 && wrong.errors == "error: WRONG_PIN: The PIN is wrong. 4 attempts left.\n")
        let approved = try await Self.run(
            ["token", "approve", operationId, "--pin-stdin"] + profile, environment: environment, input: "2468\n")
        #expect(approved.status == 0, "\(approved.errors)")
        let shown = try await Self.run(["admin", "operation", "show", operationId], environment: environment)
        #expect(shown.output.contains("APPROVED"))
        let shownJSON = try await Self.run(
            ["admin", "--json", "operation", "show", operationId], environment: environment)
        #expect(
            try OperatorJSON.decoder().decode(OperationInfo.self, from: Data(shownJSON.output.utf8)).status == .approved
        )

        // Reject, offline QR approval and status, as the README's next steps show.
        let second = try await Self.run(
            ["admin", "operation", "create", "--user", "alice", "--data", "A2", "--title", "Log in?", "--json"],
            environment: environment)
        let login = try OperatorJSON.decoder().decode(OperationInfo.self, from: Data(second.output.utf8))
        let rejected = try await Self.run(
            ["token", "reject", login.id, "--reason", "UNEXPECTED_OPERATION"] + profile, environment: environment)
        #expect(rejected.status == 0, "\(rejected.errors)")
        #expect(
            try await Self.run(["admin", "operation", "show", login.id], environment: environment).output.contains(
                "REJECTED")
        )

        let third = try await Self.run(
            [
                "admin", "operation", "create", "--user", "alice", "--data", "A1*A5EUR", "--title", "Pay 5 EUR",
                "--json",
            ],
            environment: environment)
        let offline = try OperatorJSON.decoder().decode(OperationInfo.self, from: Data(third.output.utf8))
        let qr = try await Self.run(["admin", "operation", "offline-qr", offline.id], environment: environment)
        let qrFile = work.appendingPathComponent("qr.txt")
        try Data(qr.output.utf8).write(to: qrFile)
        let typed = try await Self.run(
            ["token", "qr-approve", qrFile.path, "--pin-stdin", "--json"] + profile, environment: environment,
            input: "2468\n")
        #expect(typed.status == 0, "\(typed.errors)")
        struct Code: Decodable { let code: String }
        let approvalCode = try JSONDecoder().decode(Code.self, from: Data(typed.output.utf8)).code
        let activationId = try #require(
            try await Self.run(["admin", "activation", "list", "--user", "alice"], environment: environment).output
                .split(separator: "\n").dropFirst().first?.split(separator: " ").first.map(String.init))
        let verified = try await Self.run(
            ["admin", "operation", "offline-verify", offline.id, "--activation", activationId, "--code", approvalCode],
            environment: environment)
        #expect(verified.status == 0 && verified.output.contains("APPROVED"), "\(verified.output) \(verified.errors)")

        let status = try await Self.run(["token", "status"] + profile, environment: environment)
        #expect(status.status == 0 && status.output.contains("ACTIVE"))

        // watch: one fetch as a JSON line, the pending operation in it as added.
        let fourth = try await Self.run(
            ["admin", "operation", "create", "--user", "alice", "--data", "A3", "--title", "Sign in?", "--json"],
            environment: environment)
        let signIn = try OperatorJSON.decoder().decode(OperationInfo.self, from: Data(fourth.output.utf8))
        let watched = try await Self.run(
            ["token", "watch", "--count", "1", "--json"] + profile, environment: environment)
        #expect(watched.status == 0, "\(watched.errors)")
        struct Fetch: Decodable { let operations: [MobileOperation], added: [String], removed: [String] }
        let fetch = try MobileTokenJSON.decoder().decode(Fetch.self, from: Data(watched.output.utf8))
        #expect(fetch.operations.map(\.id) == [signIn.id] && fetch.added == [signIn.id] && fetch.removed == [])

        // watch follows the live stream: its first fetch comes when the stream is ready, and with polling set to a
        // minute only a stream event can bring a second one. Operations are created every 2 s until it has made
        // two fetches; the last one shows them.
        let watchEnded = Flag()
        let watching = Task {
            defer { watchEnded.set() }
            return try await Self.run(
                ["token", "watch", "--count", "2", "--json", "--interval", "60"] + profile, environment: environment)
        }
        var liveCreated: [String] = []
        let started = ContinuousClock.now
        while liveCreated.count < 15 {
            try await Task.sleep(for: .seconds(2))
            if watchEnded.isSet { break }
            let made = try await Self.run(
                ["admin", "operation", "create", "--user", "alice", "--data", "A3", "--title", "Live?", "--json"],
                environment: environment)
            liveCreated.append(try OperatorJSON.decoder().decode(OperationInfo.self, from: Data(made.output.utf8)).id)
        }
        let live = try await watching.value
        #expect(live.status == 0, "\(live.errors)")
        let lines = live.output.split(separator: "\n").map {
            try? MobileTokenJSON.decoder().decode(Fetch.self, from: Data($0.utf8))
        }
        #expect(lines.count == 2 && !liveCreated.isEmpty)
        let lastFetch = try #require(lines.last ?? nil)
        #expect(Set(liveCreated.prefix(1)).isSubset(of: Set(lastFetch.operations.map(\.id))), "\(live.output)")
        #expect(ContinuousClock.now - started < .seconds(45))

        // change-pin: old PIN then new PIN on standard input; afterwards only the new one works.
        let changed = try await Self.run(
            ["token", "change-pin", "--pin-stdin"] + profile, environment: environment, input: "2468\n1357\n")
        #expect(changed.status == 0, "\(changed.errors)")
        let oldPIN = try await Self.run(
            ["token", "approve", signIn.id, "--pin-stdin"] + profile, environment: environment, input: "2468\n")
        #expect(oldPIN.status == 4 && oldPIN.errors.contains("WRONG_PIN"))
        let newPIN = try await Self.run(
            ["token", "approve", signIn.id, "--pin-stdin"] + profile, environment: environment, input: "1357\n")
        #expect(newPIN.status == 0, "\(newPIN.errors)")

        let removed = try await Self.run(
            ["token", "remove", "--pin-stdin"] + profile, environment: environment, input: "1357\n")
        #expect(removed.status == 0, "\(removed.errors)")
        #expect(try await Self.run(["token", "list"] + profile, environment: environment).status == 3)

        server.terminate()
        server.waitUntilExit()
        #expect(server.terminationStatus == 0)
    }
}

/// Set once by one task, read by another.
final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}
