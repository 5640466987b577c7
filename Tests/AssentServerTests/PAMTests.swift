import AssentCrypto
import AssentModel
import AssentSDK
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// `assent pam start|finish` as PAM's pam_exec runs them: the PAM environment (`PAM_TYPE`, `PAM_USER`,
/// `PAM_RHOST`), start's standard output shown before the prompt, finish reading what was typed (and a NUL) on
/// standard input, the exit status deciding.
@Suite("SSH second factor through PAM: assent pam start and finish")
struct PAMTests {
    /// A host's key file (access:check, mode 600) and the arguments both steps take.
    static func host(_ server: TestServer, _ http: HTTPClient, _ folder: URL, extra: [String] = []) async throws
        -> [String]
    {
        let key = try await RADIUSTests.radiusKey(server, http)
        let file = folder.appendingPathComponent("host.key")
        #expect(
            FileManager.default.createFile(
                atPath: file.path, contents: Data(key.utf8), attributes: [.posixPermissions: 0o600]))
        return [
            "--url", http.base.absoluteString, "--key-file", file.path, "--host", "db-1", "--state-dir",
            folder.appendingPathComponent("state").path,
        ] + extra
    }

    static func pam(_ step: String, _ arguments: [String], user: String, typed: String = "") async throws
        -> CLITests.Result
    {
        try await CLITests.run(
            ["pam", step] + arguments,
            environment: ["PAM_TYPE": "auth", "PAM_USER": user, "PAM_RHOST": "198.51.100.23", "PAM_SERVICE": "sshd"],
            input: typed + "\u{0}")
    }

    @Test("A push: the number shown before the prompt, approved on the phone; rejected or another number refused")
    func push() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        let root = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: root) }
        try await server.live { http in
            let operations = try await RADIUSTests.accountWithPhone("bob", server, http, root)
            let arguments = try await Self.host(server, http, try ConfigFileTests.folder())

            let started = try await Self.pam("start", arguments, user: "bob")
            #expect(started.status == 0, "\(started.output) \(started.errors)")
            let number = try #require(
                started.output.firstMatch(of: /choose (\d+)/).flatMap { Int($0.1) }, "\(started.output)")
            let login = try await RADIUSTests.pending(operations)
            #expect(login.formData.title == "Sign in to SSH db-1?")
            #expect(login.formData.attributes.first { $0.id == "login.address" }?.value == "198.51.100.23")
            try await operations.authorize(login, factor: .pin("1234"), number: number)
            let finished = try await Self.pam("finish", arguments, user: "bob")
            #expect(finished.status == 0, "\(finished.errors)")
            // The state is spent: a second finish is refused.
            #expect(try await Self.pam("finish", arguments, user: "bob").status != 0)

            // Rejected on the phone.
            #expect(try await Self.pam("start", arguments, user: "bob").status == 0)
            try await operations.reject(
                id: try await RADIUSTests.pending(operations).id, reason: RejectReason.unexpectedOperation)
            let rejected = try await Self.pam("finish", arguments, user: "bob")
            #expect(rejected.status != 0 && rejected.errors.contains("rejected"), "\(rejected.errors)")

            // Another number than the one shown.
            let again = try await Self.pam("start", arguments, user: "bob")
            let shown = try #require(again.output.firstMatch(of: /choose (\d+)/).flatMap { Int($0.1) })
            let request = try await RADIUSTests.pending(operations)
            let other = try #require(request.numberMatching?.choices.first { $0 != shown })
            await #expect(throws: AssentError.self) {
                try await operations.authorize(request, factor: .pin("1234"), number: other)
            }
            #expect(try await Self.pam("finish", arguments, user: "bob").status != 0)
        }
    }

    @Test(
        "A code typed at the prompt; a wrong one refused; outside PAM's auth stack and with a readable key, nothing runs"
    )
    func code() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        try await server.live { http in
            let flow = TFAClient(server: server, client: http)
            try await flow.createAccount("alice")
            let (uri, _) = try await flow.registerTOTP("alice")
            let folder = try ConfigFileTests.folder()
            let arguments = try await Self.host(server, http, folder)
            let started = try await Self.pam("start", arguments, user: "alice")
            #expect(started.status == 0 && started.output.contains("Type the code"), "\(started.output)")
            server.clock.advance(by: 30)
            let code = try await Oathtool.code(uri: uri, at: server.clock.now)
            #expect(try await Self.pam("finish", arguments, user: "alice", typed: code).status == 0)
            #expect(try await Self.pam("start", arguments, user: "alice").status == 0)
            let wrong = try await Self.pam("finish", arguments, user: "alice", typed: TFACodes.other(than: code))
            #expect(wrong.status != 0 && wrong.errors.contains("The code is wrong"), "\(wrong.errors)")
            // Someone else's state cannot be finished by another user.
            #expect(try await Self.pam("start", arguments, user: "alice").status == 0)
            #expect(try await Self.pam("finish", arguments, user: "mallory", typed: code).status != 0)

            // Not in an auth stack, or a key file others may read: refused before asking.
            let session = try await CLITests.run(
                ["pam", "start"] + arguments, environment: ["PAM_TYPE": "session", "PAM_USER": "alice"])
            #expect(session.status != 0 && session.errors.contains("auth stack"), "\(session.errors)")
            try FileManager.default.setAttributes(
                [.posixPermissions: 0o644], ofItemAtPath: folder.appendingPathComponent("host.key").path)
            let exposed = try await Self.pam("start", arguments, user: "alice")
            #expect(exposed.status != 0 && exposed.errors.contains("chmod 600"), "\(exposed.errors)")
        }
    }

    @Test("Assent unreachable: refused, except a break-glass user; a key Assent refuses is never broken through")
    func unreachable() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        try await server.live { http in
            try await TFAClient(server: server, client: http).createAccount("alice")
            let folder = try ConfigFileTests.folder()
            var arguments = try await Self.host(server, http, folder, extra: ["--break-glass", "root"])
            let closed = "http://127.0.0.1:\(try PostgresTestCluster.freePort())"
            arguments[1] = closed
            let refused = try await Self.pam("start", arguments, user: "alice")
            #expect(refused.status != 0 && refused.output.contains("cannot be reached"), "\(refused.output)")
            let glass = try await Self.pam("start", arguments, user: "root")
            #expect(glass.status == 0 && glass.output.contains("break-glass"), "\(glass.output)")
            #expect(try await Self.pam("finish", arguments, user: "root").status == 0)
            // Reachable, with a key Assent refuses: the break-glass user is refused too.
            try "ak_not_a_key".write(
                to: folder.appendingPathComponent("host.key"), atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes(
                [.posixPermissions: 0o600], ofItemAtPath: folder.appendingPathComponent("host.key").path)
            arguments[1] = http.base.absoluteString
            #expect(try await Self.pam("start", arguments, user: "root").status != 0)
        }
    }
}

/// OpenSSH's sshd (Debian's) on a loopback port with a PAM stack of `assent pam`, signed in to by paramiko: an SSH key
/// first, then keyboard-interactive — the prompt carries the number, the phone approves or rejects. Root only (sshd
/// and its PAM service file need it); CI runs as root.
@Suite("SSH logins through a real sshd and PAM, by paramiko")
struct SSHLoginTests {
    /// sshd copied under a name of its own, whose PAM service file (`/etc/pam.d/<name>`) is the test's.
    final class SSHD: Sendable {
        let folder: URL
        let port: Int
        let name: String
        let process: Process

        init(pamArguments: [String]) async throws {
            folder = try ConfigFileTests.folder()
            port = try PostgresTestCluster.freePort()
            name = "assent-sshd-\(UUID().uuidString.prefix(8).lowercased())"
            let folder = self.folder
            let binary = folder.appendingPathComponent(name)
            try FileManager.default.copyItem(atPath: "/usr/sbin/sshd", toPath: binary.path)
            try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
            for key in ["host", "client"] {
                let made = try await Spawn.runOnThread([
                    "/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                    folder.appendingPathComponent(key).path,
                ])
                #expect(made.status == 0, "\(made.errors)")
            }
            try FileManager.default.copyItem(
                at: folder.appendingPathComponent("client.pub"), to: folder.appendingPathComponent("authorized_keys"))
            let assent = CLITests.executable.path
            let arguments = pamArguments.joined(separator: " ")
            try """
            auth requisite pam_exec.so stdout quiet \(assent) pam start \(arguments)
            auth required pam_exec.so expose_authtok quiet \(assent) pam finish \(arguments)
            auth required pam_permit.so
            account required pam_permit.so
            session required pam_permit.so

            """.write(toFile: "/etc/pam.d/\(name)", atomically: true, encoding: .utf8)
            try """
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(folder.path)/host
            PidFile \(folder.path)/sshd.pid
            AuthorizedKeysFile \(folder.path)/authorized_keys
            UsePAM yes
            KbdInteractiveAuthentication yes
            PasswordAuthentication no
            AuthenticationMethods publickey,keyboard-interactive
            PermitRootLogin yes
            StrictModes no

            """.write(to: folder.appendingPathComponent("sshd_config"), atomically: true, encoding: .utf8)
            process = Process()
            process.executableURL = binary
            process.arguments = ["-D", "-e", "-f", folder.appendingPathComponent("sshd_config").path]
            let log = folder.appendingPathComponent("sshd.log")
            #expect(FileManager.default.createFile(atPath: log.path, contents: nil))
            process.standardError = try FileHandle(forWritingTo: log)
            process.standardOutput = try FileHandle(forWritingTo: log)
            try process.run()
            for _ in 0..<100 {
                if ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("Server listening") { return }
                guard process.isRunning else { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw TestFailure("sshd did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }

        func stop() {
            if process.isRunning { process.terminate() }
            try? FileManager.default.removeItem(atPath: "/etc/pam.d/\(name)")
        }

        /// A login by paramiko as root: the SSH key, then keyboard-interactive. `answer` gets the prompt's text and
        /// returns what to type. Whether the login succeeded, and the prompts' text.
        func login(_ answer: @Sendable (String) async throws -> String) async throws -> (Bool, String) {
            let run = folder.appendingPathComponent("login-\(UUID().uuidString.prefix(6))")
            try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
            try Self.client.write(to: run.appendingPathComponent("login.py"), atomically: true, encoding: .utf8)
            let login = Task {
                try await Spawn.runOnThread([
                    "/usr/bin/python3", run.appendingPathComponent("login.py").path, String(port),
                    folder.appendingPathComponent("client").path, run.path,
                ])
            }
            let prompt = run.appendingPathComponent("prompt")
            for _ in 0..<300 where !FileManager.default.fileExists(atPath: prompt.path) {
                try await Task.sleep(for: .milliseconds(100))
            }
            let text = (try? String(contentsOf: prompt, encoding: .utf8)) ?? ""
            let typed = text.isEmpty ? "" : try await answer(text)
            try typed.write(to: run.appendingPathComponent("answer"), atomically: true, encoding: .utf8)
            let outcome = try await login.value
            return (outcome.output.contains("authenticated: True"), text + outcome.output + outcome.errors)
        }

        static let client = #"""
            import os, sys, time, paramiko
            port, keyfile, run = int(sys.argv[1]), sys.argv[2], sys.argv[3]
            t = paramiko.Transport(("127.0.0.1", port))
            t.connect()
            t.auth_publickey("root", paramiko.Ed25519Key.from_private_key_file(keyfile))
            def handler(title, instructions, prompts):
                if not prompts:
                    return []
                with open(os.path.join(run, "prompt.tmp"), "w") as f:
                    f.write(instructions + "\n" + "\n".join(p for p, _ in prompts))
                os.rename(os.path.join(run, "prompt.tmp"), os.path.join(run, "prompt"))
                for _ in range(600):
                    if os.path.exists(os.path.join(run, "answer")):
                        break
                    time.sleep(0.1)
                with open(os.path.join(run, "answer")) as f:
                    return [f.read() for _ in prompts]
            try:
                t.auth_interactive("root", handler)
            except paramiko.AuthenticationException as e:
                print("refused:", e)
            print("authenticated:", t.is_authenticated())
            t.close()
            """#
    }

    /// The phone is `assent token`: a CLI token profile activated for `user`, opted in to sign-in pushes.
    struct TokenPhone {
        let profile: [String]

        init(_ user: String, _ server: TestServer, _ http: HTTPClient, _ folder: URL) async throws {
            profile = ["--profile", folder.appendingPathComponent("token").path]
            let activation = try await server.operatorCall(
                http, "POST", "/api/v1/activations",
                body: try OperatorJSON.encoder().encode(CreateActivationRequest(userId: user, commitMode: "auto")),
                as: CreateActivationResponse.self)
            let activated = try await CLITests.run(
                [
                    "token", "activate", "--server", http.base.absoluteString, "--config",
                    try server.configuration.text, activation.activationCode, "--pin-stdin",
                ] + profile, input: "2468\n")
            #expect(activated.status == 0, "\(activated.errors)")
            let flow = TFAClient(server: server, client: http)
            try await flow.createAccount(user)
            let first = try await flow.interruption(user)
            let optIn = try await flow.start(first.regToken, .register, provider: .push)
            let asked = try await flow.post(
                "/api/tfa/push/optin",
                TFAPushOptInRequest(assertion: optIn, activationId: activation.activationId)
            ).decode(TFAPushSent.self)
            let approved = try await approve(asked.operationId, number: nil)
            #expect(approved.status == 0, "\(approved.errors)")
            let optedIn = try await flow.post("/api/tfa/push/verify", TFAAssertionRequest(assertion: optIn))
                .decode(TFAPushStatus.self)
            _ = try await flow.post(
                "/api/tfa/finalize",
                TFAFinalizeRequest(
                    regToken: first.regToken, assertion: optIn,
                    providerAssertion: try #require(optedIn.providerAssertion)))
        }

        /// `assent token list`, until the sign-in request has arrived.
        func pending() async throws -> MobileOperation {
            for _ in 0..<100 {
                let listed = try await CLITests.run(["token", "list", "--json"] + profile)
                if let waiting = try MobileTokenJSON.decoder().decode(
                    [MobileOperation].self, from: Data(listed.output.utf8)
                )
                .first {
                    return waiting
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            throw TestFailure("assent token never listed the sign-in request.")
        }

        func approve(_ id: String, number: Int?) async throws -> CLITests.Result {
            try await CLITests.run(
                ["token", "approve", id, "--pin-stdin"] + (number.map { ["--number", "\($0)"] } ?? []) + profile,
                input: "2468\n")
        }

        func reject(_ id: String) async throws -> CLITests.Result {
            try await CLITests.run(["token", "reject", id, "--reason", "UNEXPECTED_OPERATION"] + profile)
        }
    }

    @Test(
        "Approved by assent token with the number in the prompt: in; rejected, another number, Assent unreachable: out",
        .enabled(if: getuid() == 0 && FileManager.default.fileExists(atPath: "/usr/sbin/sshd")))
    func login() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        let folder = try ConfigFileTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await server.live { http in
            let phone = try await TokenPhone("root", server, http, folder)
            let arguments = try await PAMTests.host(server, http, folder)
            let sshd = try await SSHD(pamArguments: arguments)
            defer { sshd.stop() }

            let (approved, shown) = try await sshd.login { prompt in
                let number = try #require(prompt.firstMatch(of: /choose (\d+)/).flatMap { Int($0.1) }, "\(prompt)")
                let request = try await phone.pending()
                #expect(request.formData.title == "Sign in to SSH db-1?")
                let approval = try await phone.approve(request.id, number: number)
                #expect(approval.status == 0, "\(approval.errors)")
                return ""
            }
            #expect(approved, "\(shown) \(sshd.folder.path)")

            let (rejected, _) = try await sshd.login { _ in
                let rejection = try await phone.reject(try await phone.pending().id)
                #expect(rejection.status == 0, "\(rejection.errors)")
                return ""
            }
            #expect(!rejected)

            let (wrongNumber, _) = try await sshd.login { prompt in
                let shown = try #require(prompt.firstMatch(of: /choose (\d+)/).flatMap { Int($0.1) })
                let request = try await phone.pending()
                let other = try #require(request.numberMatching?.choices.first { $0 != shown })
                let refused = try await phone.approve(request.id, number: other)
                #expect(refused.status != 0, "\(refused.output)")
                return ""
            }
            #expect(!wrongNumber)

            // Assent unreachable: refused (root is no break-glass user here).
            var closed = arguments
            closed[1] = "http://127.0.0.1:\(try PostgresTestCluster.freePort())"
            let unreachable = try await SSHD(pamArguments: closed)
            defer { unreachable.stop() }
            let (lonely, said) = try await unreachable.login { _ in "" }
            #expect(!lonely, "\(said)")
        }
    }
}
