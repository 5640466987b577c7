import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

/// The configuration file of `assent serve --config` and `assent config check`, driven as an operator drives them.
@Suite("The configuration file: every flag a key, secrets from files, each mistake named")
struct ConfigFileTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A folder of its own, only its owner may enter.
    static func folder() throws -> URL {
        let folder = TestFiles.folder.appendingPathComponent("config-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return folder
    }

    /// Writes `text` to `name` in `folder` with `mode`; its path.
    static func write(_ text: String, _ name: String, in folder: URL, mode: Int = 0o600) throws -> String {
        let file = folder.appendingPathComponent(name)
        try text.write(to: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file.path)
        return file.path
    }

    struct Key: Decodable {
        var key: String
        var kind: String
        var environment: String?
        var secret: Bool
    }

    @Test("Every flag of serve and every environment variable it reads has a key")
    func everySettingHasAKey() async throws {
        let listed = try await CLITests.run(["config", "keys", "--json"])
        #expect(listed.status == 0, "\(listed.errors)")
        let keys = try JSONDecoder().decode([Key].self, from: Data(listed.output.utf8))
        let names = Set(keys.map(\.key))
        let help = try await CLITests.run(["serve", "--help"])
        // The flags are the lines that start with one (the help text also quotes other commands' flags).
        let flags = Set(
            help.output.matches(of: /^\s+(?:-[a-z], )?--([a-z0-9][a-z0-9-]+)/.anchorsMatchLineEndings()).map {
                String($0.1)
            }
        )
        .subtracting(["help", "config", "version"])
        #expect(flags.count > 50)
        #expect(flags.subtracting(names).isEmpty, "flags without a key: \(flags.subtracting(names).sorted())")
        // The variables serve's options read, from their source.
        var variables: Set<String> = []
        let options = try FileManager.default.contentsOfDirectory(
            atPath: Self.root.appendingPathComponent("Sources/assent").path
        ).filter { $0.hasSuffix("Options.swift") }
        #expect(options.contains("TracingOptions.swift"))
        for file in ["ServeCommand.swift"] + options {
            let text = try String(
                contentsOf: Self.root.appendingPathComponent("Sources/assent/\(file)"), encoding: .utf8)
            variables.formUnion(text.matches(of: /ASSENT_[A-Z0-9_]+/).map { String($0.0) })
        }
        variables.remove("ASSENT_CONFIG")
        variables.insert("ASSENT_KEK")
        let covered = Set(keys.compactMap(\.environment))
        #expect(variables.count > 30)
        #expect(variables.subtracting(covered).isEmpty, "variables without a key: \(variables.subtracting(covered))")
        // Secrets are marked as such (and so may come from files).
        for secret in ["database", "smtp-password", "webhook-secret", "kek", "hms-app-secret", "phone-gateway-secret"] {
            #expect(keys.first { $0.key == secret }?.secret == true, "\(secret)")
        }
        #expect(keys.first { $0.key == "port" }?.secret == false)
    }

    @Test("config check names each mistake of a broken file, with its line, and never prints a secret")
    func checkNamesEachMistake() async throws {
        let folder = try Self.folder()
        let unreadable = folder.appendingPathComponent("missing").path
        let shared = try Self.write("a-secret-others-can-read\n", "shared-secret", in: folder, mode: 0o644)
        let broken = try Self.write(
            """
            # a broken configuration
            port: eighty
            smtp-hots: mail.example
            no-rate-limits: yes
            trusted-proxy: [10.0.0.0/33]
            rate-limit:
              - login-user=10
            smtp-password: hunter2-inline-secret
            webhook-secret-file: \(unreadable)
            phone-gateway-secret-file: \(shared)
            log-level: loud
            console-idle-timeout: 5
            issuer: [a, b]
            hms-app-secret-file: relative/path

            """, "broken.yaml", in: folder, mode: 0o644)
        let checked = try await CLITests.run(["config", "check", broken])
        #expect(checked.status == 1, "\(checked.output) \(checked.errors)")
        let expected = [
            "line 2, port: The value 'eighty' is invalid for '--port <port>'",
            "line 3, smtp-hots: No setting is called smtp-hots. Did you mean smtp-host?",
            "line 4, no-rate-limits: no-rate-limits is true or false.",
            "10.0.0.0/33: the prefix length is 0 to 32",
            "A rate limit is NAME=LIMIT/SECONDS",
            "line 8, smtp-password: A secret is written in a file every user of this machine can read",
            "line 9, webhook-secret-file: The secret file \(unreadable) cannot be read.",
            "line 10, phone-gateway-secret-file: The secret file \(shared) can be read by every user",
            "Unknown log level loud",
            "The console's idle timeout is 60 to 86400 seconds.",
            "line 13, issuer: The value is one text or number, not a list or a mapping.",
            "line 14, hms-app-secret-file: The file is named by its absolute path.",
        ]
        for sentence in expected {
            #expect(checked.errors.contains(sentence), "missing: \(sentence)\n\(checked.errors)")
        }
        #expect(checked.errors.contains("\(broken): \(expected.count) mistakes."), "\(checked.errors)")
        #expect(!checked.errors.contains("hunter2") && !checked.errors.contains("a-secret-others"))
        // serve refuses the same file before it opens anything, naming the mistakes.
        let data = folder.appendingPathComponent("data")
        let served = try await CLITests.run(["serve", "--config", broken, "--data-dir", data.path])
        #expect(served.status == 2 && served.errors.contains("smtp-hots"), "\(served.errors)")
        #expect(!FileManager.default.fileExists(atPath: data.path))

        // Not YAML: the line and column, not the line's text (it may hold a secret).
        let garbled = try Self.write("port: 8080\nsmtp-password: \"unterminated-secret\n", "garbled.yaml", in: folder)
        let notYAML = try await CLITests.run(["config", "check", garbled])
        #expect(notYAML.status == 1 && notYAML.errors.contains("The file is not YAML"), "\(notYAML.errors)")
        #expect(notYAML.errors.contains("line ") && !notYAML.errors.contains("unterminated-secret"))
        // A list, a key set twice, a secret and its file both, a missing file.
        let list = try Self.write("- port: 8080\n", "list.yaml", in: folder)
        #expect(try await CLITests.run(["config", "check", list]).errors.contains("The file is a mapping of keys"))
        let twice = try Self.write("port: 1\nport: 2\n", "twice.yaml", in: folder)
        #expect(try await CLITests.run(["config", "check", twice]).errors.contains("A key is set twice: port"))
        let both = try Self.write(
            "smtp-password: x\nsmtp-password-file: \(unreadable)\n", "both.yaml", in: folder)
        #expect(try await CLITests.run(["config", "check", both]).errors.contains("smtp-password is set twice"))
        let absent = try await CLITests.run(["config", "check", folder.appendingPathComponent("none.yaml").path])
        #expect(absent.status == 1 && absent.errors.contains("The file cannot be read."))
    }

    @Test("deploy/assent.yaml passes the check with its credentials in place")
    func deployedFilePasses() async throws {
        let folder = try Self.folder()
        let credentials = folder.appendingPathComponent("credentials")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        _ = try Self.write("postgres://assent:secret@127.0.0.1:5432/assent\n", "database-url", in: credentials)
        _ = try Self.write(Data((0..<32).map { UInt8($0) }).base64EncodedString() + "\n", "kek", in: credentials)
        _ = try Self.write("relay-password\n", "smtp-password", in: credentials)
        let text = try String(contentsOf: Self.root.appendingPathComponent("deploy/assent.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "/run/credentials/assent.service", with: credentials.path)
        let file = try Self.write(text, "assent.yaml", in: folder, mode: 0o640)
        let checked = try await CLITests.run(["config", "check", file])
        #expect(checked.status == 0 && checked.output.contains("no mistakes"), "\(checked.output) \(checked.errors)")
        // The unit starts serve with this file.
        let unit = try String(contentsOf: Self.root.appendingPathComponent("deploy/assent.service"), encoding: .utf8)
        #expect(unit.contains("assent serve --config /etc/assent/assent.yaml"))
        for credential in ["database-url", "kek", "smtp-password"] {
            #expect(unit.contains("LoadCredential=\(credential):") && text.contains("/\(credential)"), "\(credential)")
        }
    }

    @Test("serve reads the file: the command line wins over the environment, which wins over the file")
    func serveReadsTheFile() async throws {
        let work = try Self.folder()
        let secret = try Self.write("a-webhook-secret-of-enough-length\n", "webhook-secret", in: work)
        let file = try Self.write(
            """
            organisation: File Bank
            webhook-url: http://127.0.0.1:9/hook
            webhook-secret-file: \(secret)
            egress-allow: [127.0.0.0/8]
            log-level: warning
            issuer: http://file.example
            """, "assent.yaml", in: work, mode: 0o640)
        let checked = try await CLITests.run(["config", "check", file], environment: ["ASSENT_ISSUER": "http://env"])
        #expect(checked.status == 0, "\(checked.errors)")
        #expect(checked.output.contains("issuer is also set by ASSENT_ISSUER, which wins."), "\(checked.output)")
        let (server, printed) = try await CLITests.serve(
            work, arguments: ["--config", file, "--organisation", "Command-line Bank"])
        defer { if server.isRunning { server.terminate() } }
        #expect(printed["Organisation name on the pages"]?.hasPrefix("Command-line Bank") == true, "\(printed)")
        #expect(printed["Webhook"] == "operation status changes go to http://127.0.0.1:9/hook", "\(printed)")
        #expect(printed["OpenID issuer"]?.hasPrefix("http://file.example") == true, "\(printed)")
        // log-level warning from the file: the info line of the start is not written.
        let logs = try String(contentsOf: work.appendingPathComponent("serve.err"), encoding: .utf8)
        #expect(!logs.contains("Server started"), "\(logs)")
        server.terminate()
        server.waitUntilExit()
        // ASSENT_CONFIG names the file when --config does not.
        let viaEnvironment = try await CLITests.run(
            ["config", "check"], environment: ["ASSENT_CONFIG": file])
        #expect(viaEnvironment.status == 0 && viaEnvironment.output.contains("6 settings"), "\(viaEnvironment.output)")
    }
}
