import AssentCrypto
import AssentModel
import AssentSDK
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// An OpenVPN server of the test's own (Debian's openvpn 2.6) on a loopback port whose users are checked by
/// integrations/openvpn/assent-openvpn-verify through the test's FreeRADIUS, and its clients. The server's tun device
/// gets no address and no route (`ifconfig-noexec`, `route-noexec`); the clients use OpenVPN's null device.
final class OpenVPN: Sendable {
    let folder: URL
    let port: Int
    let process: Process

    init(radius: FreeRADIUS) async throws {
        folder = try ConfigFileTests.folder()
        port = try PostgresTestCluster.freePort()
        let folder = self.folder
        func openssl(_ arguments: [String]) async throws {
            let made = try await Spawn.runOnThread(["/usr/bin/openssl"] + arguments)
            #expect(made.status == 0, "\(made.errors)")
        }
        func file(_ name: String) -> String { folder.appendingPathComponent(name).path }
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try await openssl(
            ["req", "-x509"] + curve + ["-keyout", file("ca.key"), "-out", file("ca.crt"), "-subj", "/CN=Test VPN CA"]
                + ["-days", "2"])
        try await openssl(
            ["req"] + curve + ["-keyout", file("server.key"), "-out", file("server.csr")] + ["-subj", "/CN=vpn"])
        try "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyAgreement\nextendedKeyUsage=serverAuth\n"
            .write(toFile: file("server.ext"), atomically: true, encoding: .utf8)
        try await openssl(
            [
                "x509", "-req", "-in", file("server.csr"), "-CA", file("ca.crt"), "-CAkey", file("ca.key"),
                "-CAcreateserial", "-out", file("server.crt"), "-days", "2", "-extfile", file("server.ext"),
            ])
        #expect(
            FileManager.default.createFile(
                atPath: file("radius.secret"), contents: Data(radius.secret.utf8),
                attributes: [.posixPermissions: 0o600]))
        let script = ConfigFileTests.root.appendingPathComponent("integrations/openvpn/assent-openvpn-verify").path
        try """
        dev tun
        topology subnet
        server 10.199.0.0 255.255.255.0
        ifconfig-noexec
        route-noexec
        proto udp4
        local 127.0.0.1
        port \(port)
        ca \(file("ca.crt"))
        cert \(file("server.crt"))
        key \(file("server.key"))
        dh none
        verify-client-cert none
        username-as-common-name
        tmp-dir \(folder.path)
        script-security 2
        auth-user-pass-verify \(script) via-file
        setenv ASSENT_RADIUS_SERVER 127.0.0.1:\(radius.port)
        setenv ASSENT_RADIUS_SECRET_FILE \(file("radius.secret"))
        setenv ASSENT_NAS_IDENTIFIER vpn-gw-1
        verb 3

        """.write(toFile: file("server.conf"), atomically: true, encoding: .utf8)
        let log = folder.appendingPathComponent("server.log")
        #expect(FileManager.default.createFile(atPath: log.path, contents: nil))
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/openvpn")
        process.arguments = ["--config", file("server.conf")]
        process.currentDirectoryURL = folder
        process.standardOutput = try FileHandle(forWritingTo: log)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        for _ in 0..<200 {
            if ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("Initialization Sequence Completed") {
                return
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("OpenVPN did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
    }

    /// SIGKILL: processes started from the test runner inherit its blocked signals, SIGTERM among them. Not waited
    /// for: a synchronous wait here holds one of the concurrency pool's few threads.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// What a client saw: connected, or the AUTH_FAILED reason the server sent.
    struct Outcome: Sendable {
        var connected: Bool
        var reason: String?
        var log: String

        /// The dynamic challenge in the reason: its state and text.
        var challenge: (state: String, text: String)? {
            guard let reason, reason.hasPrefix("CRV1:") else { return nil }
            let fields = reason.split(separator: ":", maxSplits: 4, omittingEmptySubsequences: false)
            guard fields.count == 5 else { return nil }
            return (String(fields[2]), String(fields[4]))
        }
    }

    /// One connection by an OpenVPN client with `user` and `password` (its auth-user-pass file).
    func connect(_ user: String, _ password: String) async throws -> Outcome {
        let run = folder.appendingPathComponent("client-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
        #expect(
            FileManager.default.createFile(
                atPath: run.appendingPathComponent("credentials").path, contents: Data("\(user)\n\(password)\n".utf8),
                attributes: [.posixPermissions: 0o600]))
        try """
        client
        dev null
        proto udp4
        nobind
        remote 127.0.0.1 \(port)
        ca \(folder.appendingPathComponent("ca.crt").path)
        auth-user-pass \(run.appendingPathComponent("credentials").path)
        auth-retry none
        connect-retry-max 1
        ifconfig-noexec
        route-noexec
        verb 3

        """.write(to: run.appendingPathComponent("client.conf"), atomically: true, encoding: .utf8)
        let log = run.appendingPathComponent("client.log")
        #expect(FileManager.default.createFile(atPath: log.path, contents: nil))
        let client = Process()
        client.executableURL = URL(fileURLWithPath: "/usr/sbin/openvpn")
        client.arguments = ["--config", run.appendingPathComponent("client.conf").path]
        client.standardOutput = try FileHandle(forWritingTo: log)
        client.standardError = try FileHandle(forWritingTo: log)
        try client.run()
        defer { if client.isRunning { kill(client.processIdentifier, SIGKILL) } }
        var text = ""
        for _ in 0..<900 {
            text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if text.contains("Initialization Sequence Completed") {
                return Outcome(connected: true, log: text)
            }
            if let line = text.split(separator: "\n").first(where: { $0.contains("AUTH_FAILED") }) {
                let reason = line.components(separatedBy: "AUTH_FAILED,").dropFirst().joined(separator: "AUTH_FAILED,")
                return Outcome(connected: false, reason: reason.isEmpty ? nil : reason, log: text)
            }
            guard client.isRunning else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return Outcome(connected: false, log: text)
    }
}

@Suite("OpenVPN through FreeRADIUS: assent-openvpn-verify with a real OpenVPN server and client")
struct OpenVPNTests {
    static let available =
        getuid() == 0 && FileManager.default.fileExists(atPath: "/usr/sbin/openvpn")
        && FileManager.default.fileExists(atPath: "/dev/net/tun")

    @Test(
        "Password and code in one field, OpenVPN's static and dynamic challenges, a push with the number; refusals with their reason",
        .enabled(if: available))
    func signIns() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        let root = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: root) }
        try await server.live { http in
            let scene = try await RADIUSTests.Scene(server, http, phoneAt: root)
            let (radius, operations) = (scene.radius, scene.phone)
            defer { radius.stop() }
            func nextCode() async throws -> String { try await scene.nextCode() }
            let vpn = try await OpenVPN(radius: radius)
            defer { vpn.stop() }
            let password = RADIUSTests.password

            // The password and the code in one field.
            let inOne = try await vpn.connect("alice", password + (try await nextCode()))
            #expect(inOne.connected, "\(inOne.log)")
            let wrong = try await vpn.connect("alice", password + TFACodes.other(than: try await nextCode()))
            #expect(!wrong.connected && wrong.reason?.hasPrefix("The code is wrong") == true, "\(wrong.log)")
            let badPassword = try await vpn.connect("alice", "not the password")
            #expect(badPassword.reason == "The user id or the password is wrong.", "\(badPassword.log)")

            // OpenVPN's static challenge: the client sends the password and the response, base64 each.
            func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }
            let statically = try await vpn.connect(
                "alice", "SCRV1:\(base64(password)):\(base64(try await nextCode()))")
            #expect(statically.connected, "\(statically.log)")

            // The password alone: a dynamic challenge for the code, answered by connecting again.
            let asked = try await vpn.connect("alice", password)
            let challenge = try #require(asked.challenge, "\(asked.log)")
            #expect(challenge.text == "Type the code from your authenticator app (or a backup code).")
            #expect(asked.reason?.contains(":\(base64("alice")):") == true)
            let answered = try await vpn.connect("alice", "CRV1::\(challenge.state)::\(try await nextCode())")
            #expect(answered.connected, "\(answered.log)")
            let replayed = try await vpn.connect("alice", "CRV1::\(challenge.state)::\(try await nextCode())")
            #expect(!replayed.connected)
            let forged = try await vpn.connect("alice", "CRV1::not-hex::123456")
            #expect(forged.reason == "Malformed answer to the challenge.", "\(forged.log)")

            // A push with number matching: the number in the challenge, approved on the phone, then Enter.
            let pushed = try await vpn.connect("bob", password)
            let numbered = try #require(pushed.challenge, "\(pushed.log)")
            let number = try #require(numbered.text.firstMatch(of: /choose (\d+)/).flatMap { Int($0.1) })
            let login = try await RADIUSTests.pending(operations)
            #expect(login.formData.title == "Sign in to VPN vpn-gw-1?")
            #expect(login.formData.attributes.first { $0.id == "login.address" }?.value == "127.0.0.1")
            try await operations.authorize(login, factor: .pin("1234"), number: number)
            let approved = try await vpn.connect("bob", "CRV1::\(numbered.state)::")
            #expect(approved.connected, "\(approved.log)")

            // Without number matching the sign-in is deferred until the phone answers; OpenVPN keeps serving.
            _ = try await server.operatorCall(
                http, "PUT", "/api/v1/tfa/policy",
                body: try OperatorJSON.encoder().encode(
                    TFAPolicy(required: true, providers: [.totp, .push, .backup], numberMatching: "off")),
                as: TFAPolicy.self)
            async let held = vpn.connect("bob", password)
            let waiting = try await RADIUSTests.pending(operations)
            let meanwhile = try await vpn.connect("alice", password + (try await nextCode()))
            #expect(meanwhile.connected, "\(meanwhile.log)")
            try await operations.authorize(waiting, factor: .pin("1234"))
            let heldOutcome = try await held
            #expect(heldOutcome.connected, "\(heldOutcome.log)")
            async let refusedLater = vpn.connect("bob", password)
            try await operations.reject(
                id: try await RADIUSTests.pending(operations).id, reason: RejectReason.unexpectedOperation)
            let rejected = try await refusedLater
            #expect(rejected.reason == "The user rejected the sign-in on the phone.", "\(rejected.log)")

            // FreeRADIUS gone: refused.
            radius.stop()
            let lonely = try await vpn.connect("alice", password + (try await nextCode()))
            #expect(!lonely.connected, "\(lonely.log)")
            #expect(lonely.reason == "The VPN cannot check sign-ins now.", "\(lonely.reason ?? "no reason")")
        }
    }
}
