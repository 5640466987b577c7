import AssentCrypto
import AssentModel
import AssentSDK
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// A FreeRADIUS of the test's own (Debian's freeradius 3.2 with freeradius-rest) running integrations/freeradius/
/// on a loopback port, asking an Assent server; signed in to with radclient (freeradius-utils) and pyrad.
final class FreeRADIUS: Sendable {
    let folder: URL
    let port: Int
    /// The gateway's shared secret, as Assent gave it (the test's clients send from 127.0.0.1).
    let secret: String
    let process: Process

    /// Starts FreeRADIUS with Assent at `assent` and `apiKey` as its credential, learning its gateways from Assent
    /// (kept for `lifetime` seconds); `secret` is the registered gateway's. Waits until it listens.
    /// `accessAt`: where the module asking about sign-ins finds Assent, when not at `assent` (the gateways' module).
    init(assent: URL, apiKey: String, secret: String, lifetime: Int = 600, accessAt: URL? = nil) async throws {
        folder = try ConfigFileTests.folder()
        port = try PostgresTestCluster.freePort()
        self.secret = secret
        let folder = self.folder
        let root = ConfigFileTests.root.appendingPathComponent("integrations/freeradius")
        func install(_ from: String, _ to: String, _ changes: [(String, String)]) throws {
            var text = try String(contentsOf: root.appendingPathComponent(from), encoding: .utf8)
            for (old, new) in changes {
                #expect(text.contains(old), "\(from) has no \(old)")
                text = text.replacingOccurrences(of: old, with: new)
            }
            try text.write(to: folder.appendingPathComponent(to), atomically: true, encoding: .utf8)
        }
        let fileManager = FileManager.default
        for name in ["mods-enabled", "sites-enabled", "logs", "run"] {
            try fileManager.createDirectory(
                at: folder.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        try install(
            "mods-available/assent", "mods-enabled/assent",
            [
                (
                    "connect_uri = \"http://127.0.0.1:8080\"\n\tconnect_timeout = 4.0\n\n\ttls {\n\t\t# ca_info_file = /etc/ssl/certs/ca-certificates.crt\n\t\tcheck_cert = yes\n\t\tcheck_cert_cn = yes\n\t}\n\n\tauthorize {\n\t\t# The gateway",
                    "connect_uri = \"\((accessAt ?? assent).absoluteString)\"\n\tconnect_timeout = 4.0\n\n\ttls {\n\t\t# ca_info_file = /etc/ssl/certs/ca-certificates.crt\n\t\tcheck_cert = yes\n\t\tcheck_cert_cn = yes\n\t}\n\n\tauthorize {\n\t\t# The gateway"
                ),
                ("http://127.0.0.1:8080", assent.absoluteString),
            ])
        try install(
            "sites-available/assent", "sites-enabled/assent",
            [("ipaddr = *", "ipaddr = 127.0.0.1"), ("port = 1812", "port = \(port)")])
        try install("sites-available/assent-clients", "sites-enabled/assent-clients", [])
        try install(
            "clients.conf", "clients.conf",
            [("192.0.2.0/24", "127.0.0.0/8"), ("lifetime = 600", "lifetime = \(lifetime)")])
        try Self.server(folder).write(
            to: folder.appendingPathComponent("radiusd.conf"), atomically: true, encoding: .utf8)
        // radclient reads the secret from a file: one on its command line that starts with `-` reads as an option.
        #expect(
            fileManager.createFile(
                atPath: folder.appendingPathComponent("gateway.secret").path, contents: Data(secret.utf8),
                attributes: [.posixPermissions: 0o600]))
        let log = folder.appendingPathComponent("radiusd.log")
        #expect(fileManager.createFile(atPath: log.path, contents: nil))
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/freeradius")
        process.arguments = ["-f", "-l", "stdout", "-d", folder.path]
        process.environment = ["ASSENT_API_KEY": apiKey, "PATH": "/usr/sbin:/usr/bin:/bin"]
        process.standardOutput = try FileHandle(forWritingTo: log)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        for _ in 0..<200 {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if text.contains("Ready to process requests") { return }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("FreeRADIUS did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
    }

    /// The gateway's shared secret in a file, for radclient's `-S`.
    var secretFile: URL { folder.appendingPathComponent("gateway.secret") }

    /// What FreeRADIUS logged.
    var log: String { (try? String(contentsOf: folder.appendingPathComponent("radiusd.log"), encoding: .utf8)) ?? "" }

    /// SIGKILL: processes started from the test runner inherit its blocked signals, SIGTERM among them. Not waited
    /// for: a synchronous wait here holds one of the concurrency pool's few threads.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// The smallest radiusd.conf around the module and the site: no user switch, logs to standard output.
    static func server(_ folder: URL) -> String {
        """
        prefix = /usr
        exec_prefix = /usr
        sysconfdir = /etc
        localstatedir = /var
        sbindir = /usr/sbin
        logdir = \(folder.path)/logs
        raddbdir = \(folder.path)
        radacctdir = \(folder.path)/logs
        name = freeradius
        confdir = \(folder.path)
        modconfdir = \(folder.path)/mods-config
        run_dir = \(folder.path)/run
        db_dir = \(folder.path)
        libdir = /usr/lib/freeradius
        pidfile = \(folder.path)/run/freeradius.pid
        max_request_time = 40
        cleanup_delay = 5
        max_requests = 1024
        hostname_lookups = no
        log {
        	destination = stdout
        	colourise = no
        	auth = yes
        }
        security {
        	allow_core_dumps = no
        	max_attributes = 200
        	reject_delay = 0
        	status_server = no
        }
        thread pool {
        	start_servers = 2
        	max_servers = 8
        	min_spare_servers = 1
        	max_spare_servers = 4
        	max_requests_per_server = 0
        	auto_limit_acct = no
        }
        $INCLUDE clients.conf
        modules {
        	$INCLUDE mods-enabled/
        }
        policy {
        }
        $INCLUDE sites-enabled/
        """
    }

    /// What a RADIUS client heard.
    struct Reply: Sendable {
        /// `Access-Accept`, `Access-Reject`, `Access-Challenge`, or nil when no reply came.
        var code: String?
        var message: String?
        /// The State to send back, as the bytes' hexadecimal digits.
        var state: String?
        var output: String
    }

    /// One Access-Request by radclient (freeradius-utils), with a Message-Authenticator unless told otherwise.
    func radclient(
        _ user: String, _ password: String?, state: String? = nil, messageAuthenticator: Bool = true,
        timeout: Int = 20
    ) async throws -> Reply {
        var lines = [
            "User-Name = \"\(user)\"", "NAS-Identifier = \"vpn-gw-1\"", "Calling-Station-Id = \"203.0.113.7\"",
        ]
        if let password { lines.append("User-Password = \"\(password)\"") }
        if let state { lines.append("State = 0x\(state)") }
        if messageAuthenticator { lines.append("Message-Authenticator = 0x00") }
        let result = try await Spawn.runOnThread(
            [
                "/usr/bin/radclient", "-x", "-r", "1", "-t", String(timeout), "-S", secretFile.path,
                "127.0.0.1:\(port)", "auth",
            ],
            input: lines.joined(separator: "\n") + "\n")
        let received = result.output.components(separatedBy: "Received ").dropFirst().first ?? ""
        func value(_ name: String) -> String? {
            received.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(name + " = ") }
                .map { $0.components(separatedBy: " = ").dropFirst().joined(separator: " = ") }
        }
        return Reply(
            code: received.isEmpty ? nil : received.split(separator: " ").first.map(String.init),
            message: value("Reply-Message").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) },
            state: value("State").map { String($0.dropFirst(2)) }, output: result.output + result.errors)
    }

    /// One EAP-GTC sign-in by eapol_test (Debian's eapoltest, wpa_supplicant's EAP code) as a gateway forwarding its
    /// client's EAP would send it: whether it ended in EAP-Success (`-n`: EAP-GTC derives no keys to compare).
    func eapGTC(_ user: String, _ typed: String, timeout: Int = 20) async throws -> (success: Bool, output: String) {
        let configuration = folder.appendingPathComponent("eapol-\(UUID().uuidString.prefix(8)).conf")
        try """
        network={
        \tkey_mgmt=IEEE8021X
        \teap=GTC
        \tidentity="\(user)"
        \tpassword="\(typed)"
        }

        """.write(to: configuration, atomically: true, encoding: .utf8)
        let result = try await Spawn.runOnThread([
            "/usr/bin/eapol_test", "-n", "-c", configuration.path, "-a", "127.0.0.1", "-p", String(port), "-s", secret,
            "-t", String(timeout), "-N", "32:s:vpn-gw-3", "-N", "31:s:192.0.2.44",
        ])
        try? FileManager.default.removeItem(at: configuration)
        let lines = result.output.split(separator: "\n")
        return (lines.last == "SUCCESS", result.output.suffix(3000) + result.errors)
    }

    /// One Access-Request by pyrad (Debian's python3-pyrad): pyrad encodes the request (hiding the password) and
    /// decodes the reply; the script adds the Message-Authenticator and checks the reply's authenticators.
    func pyrad(_ user: String, _ password: String, state: String? = nil) async throws -> Reply {
        let script = folder.appendingPathComponent("pyrad-client.py")
        if !FileManager.default.fileExists(atPath: script.path) {
            try Self.pyradClient.write(to: script, atomically: true, encoding: .utf8)
        }
        let result = try await Spawn.runOnThread(
            ["/usr/bin/python3", script.path, String(port), secret, user, password, state ?? ""])
        struct Answer: Decodable {
            var code: String?
            var message: String?
            var state: String?
            var authenticatorValid: Bool?
            var messageAuthenticatorValid: Bool?
        }
        let answer = try JSONDecoder().decode(Answer.self, from: Data(result.output.utf8))
        #expect(result.status == 0, "\(result.errors)")
        if answer.code != nil {
            // The reply is the server's: its Response Authenticator and Message-Authenticator both verify.
            #expect(answer.authenticatorValid == true && answer.messageAuthenticatorValid == true, "\(result.output)")
        }
        return Reply(code: answer.code, message: answer.message, state: answer.state, output: result.output)
    }

    static let pyradClient = #"""
        import hashlib, hmac, json, socket, struct, sys, tempfile
        from pyrad import packet
        from pyrad.client import Client
        from pyrad.dictionary import Dictionary

        port, secret, user, password, state = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3], sys.argv[4], sys.argv[5]
        with tempfile.NamedTemporaryFile("w", suffix=".dict", delete=False) as f:
            f.write("""ATTRIBUTE User-Name 1 string
        ATTRIBUTE User-Password 2 string encrypt=1
        ATTRIBUTE Reply-Message 18 string
        ATTRIBUTE State 24 octets
        ATTRIBUTE Calling-Station-Id 31 string
        ATTRIBUTE NAS-Identifier 32 string
        ATTRIBUTE Message-Authenticator 80 octets
        """)
        dictionary = Dictionary(f.name)
        client = Client(server="127.0.0.1", authport=port, secret=secret, dict=dictionary)
        request = client.CreateAuthPacket(code=packet.AccessRequest, User_Name=user)
        request["User-Password"] = request.PwCrypt(password)
        request["NAS-Identifier"] = "vpn-gw-2"
        request["Calling-Station-Id"] = "198.51.100.9"
        if state:
            request["State"] = bytes.fromhex(state)
        request["Message-Authenticator"] = bytes(16)
        raw = bytearray(request.RequestPacket())

        def message_authenticator_offset(data):
            offset = 20
            while offset < len(data):
                kind, length = data[offset], data[offset + 1]
                if kind == 80:
                    return offset + 2
                offset += length
            return None

        at = message_authenticator_offset(raw)
        raw[at:at + 16] = hmac.new(secret, bytes(raw), hashlib.md5).digest()
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.settimeout(20)
        sock.sendto(bytes(raw), ("127.0.0.1", port))
        try:
            data, _ = sock.recvfrom(4096)
        except socket.timeout:
            print(json.dumps({"code": None}))
            sys.exit(0)
        authenticator = bytes(raw[4:20])
        expected = hashlib.md5(data[:4] + authenticator + data[20:] + secret).digest()
        signed = bytearray(data)
        signed[4:20] = authenticator
        at = message_authenticator_offset(signed)
        received = bytes(signed[at:at + 16]) if at else None
        if at:
            signed[at:at + 16] = bytes(16)
        reply = packet.Packet(packet=data, secret=secret, dict=dictionary)
        names = {packet.AccessAccept: "Access-Accept", packet.AccessReject: "Access-Reject", packet.AccessChallenge: "Access-Challenge"}
        print(json.dumps({
            "code": names.get(reply.code, str(reply.code)),
            "message": reply["Reply-Message"][0] if "Reply-Message" in reply else None,
            "state": reply["State"][0].hex() if "State" in reply else None,
            "authenticatorValid": expected == data[4:20],
            "messageAuthenticatorValid": received is not None and hmac.compare_digest(received, hmac.new(secret, bytes(signed), hashlib.md5).digest()),
        }))
        """#
}

@Suite("VPN sign-ins through FreeRADIUS: password and a code, a challenge round, a push to the phone")
struct RADIUSTests {
    static let password = "correct horse battery"

    /// Registers the test's gateway (127.0.0.1) in Assent; its shared secret.
    static func gateway(_ server: TestServer, name: String = "vpn-gw-1") async throws -> String {
        try await Services(server.environment).radiusClients.add(
            name: name, network: "127.0.0.1", applicationId: nil, actor: "test"
        ).secret
    }

    /// An account `user` (password ``password``) with a phone activated under `root` and opted in to its sign-in
    /// approvals (the phone approved the opt-in); the phone's operations.
    static func accountWithPhone(_ user: String, _ server: TestServer, _ http: HTTPClient, _ root: URL) async throws
        -> OperationsService
    {
        let flow = TFAClient(server: server, client: http)
        try await flow.createAccount(user)
        let phone = try await SDKClients.activatedClient(
            server, http, directory: root.appendingPathComponent("phone"), userId: user)
        let operations = OperationsService(client: phone)
        let first = try await flow.interruption(user)
        let optIn = try await flow.start(first.regToken, .register, provider: .push)
        let asked = try await flow.post(
            "/api/tfa/push/optin",
            TFAPushOptInRequest(assertion: optIn, activationId: try #require(await phone.registrationId))
        ).decode(TFAPushSent.self)
        let request = try #require(try await operations.pending().value.first { $0.id == asked.operationId })
        try await operations.authorize(request, factor: .pin("1234"))
        let optedIn = try await flow.post("/api/tfa/push/verify", TFAAssertionRequest(assertion: optIn))
            .decode(TFAPushStatus.self)
        _ = try await flow.post(
            "/api/tfa/finalize",
            TFAFinalizeRequest(
                regToken: first.regToken, assertion: optIn, providerAssertion: try #require(optedIn.providerAssertion)))
        return operations
    }

    /// The phone's one pending request, once it has arrived.
    static func pending(_ operations: OperationsService) async throws -> MobileOperation {
        for _ in 0..<100 {
            if let waiting = try await operations.pending().value.first { return waiting }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("The phone never received the sign-in request.")
    }

    /// What the VPN tests start from: `alice` with an authenticator app, `bob` with a phone opted in to sign-in
    /// approvals, and the test's FreeRADIUS in front of Assent with the test's gateway registered.
    struct Scene {
        let server: TestServer
        let radius: FreeRADIUS
        /// bob's phone.
        let phone: OperationsService
        let uri: String

        init(_ server: TestServer, _ http: HTTPClient, phoneAt root: URL) async throws {
            let flow = TFAClient(server: server, client: http)
            try await flow.createAccount("alice")
            uri = try await flow.registerTOTP("alice").uri
            phone = try await RADIUSTests.accountWithPhone("bob", server, http, root)
            radius = try await FreeRADIUS(
                assent: http.base, apiKey: try await RADIUSTests.radiusKey(server, http),
                secret: try await RADIUSTests.gateway(server))
            self.server = server
        }

        /// alice's code of the next time step (the server's clock moved on by one).
        func nextCode() async throws -> String {
            server.clock.advance(by: 30)
            return try await Oathtool.code(uri: uri, at: server.clock.now)
        }
    }

    /// A key FreeRADIUS presents: `access:check` only.
    static func radiusKey(_ server: TestServer, _ http: HTTPClient) async throws -> String {
        struct Created: Decodable { var apiKey: String }
        return try await server.operatorCall(
            http, "POST", "/api/v1/api-keys",
            body: try OperatorJSON.encoder().encode(CreateAPIKeyRequest(name: "freeradius", scopes: ["access:check"])),
            as: Created.self
        ).apiKey
    }

    @Test("A code in the password field, or asked in a challenge round: accepted and refused by radclient and pyrad")
    func codes() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        let root = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: root) }
        try await server.live { http in
            let scene = try await Scene(server, http, phoneAt: root)
            let radius = scene.radius
            defer { radius.stop() }
            func nextCode() async throws -> String { try await scene.nextCode() }

            // The password followed by the code, in one field.
            let code = try await nextCode()
            let accepted = try await radius.radclient("alice", Self.password + code)
            #expect(accepted.code == "Access-Accept", "\(accepted.output)")
            #expect(accepted.message == "Welcome, alice.")
            let wrong = try await radius.radclient("alice", Self.password + TFACodes.other(than: try await nextCode()))
            #expect(wrong.code == "Access-Reject" && wrong.message?.hasPrefix("The code is wrong") == true)
            let badPassword = try await radius.radclient("alice", "not the password" + (try await nextCode()))
            #expect(badPassword.code == "Access-Reject")
            #expect(badPassword.message == "The user id or the password is wrong.", "\(badPassword.output)")

            // The password alone: a challenge, answered with the code.
            let challenge = try await radius.radclient("alice", Self.password)
            #expect(challenge.code == "Access-Challenge", "\(challenge.output)")
            #expect(challenge.message == "Type the code from your authenticator app (or a backup code).")
            let state = try #require(challenge.state)
            let answered = try await radius.radclient("alice", try await nextCode(), state: state)
            #expect(answered.code == "Access-Accept", "\(answered.output)")
            // The answer is spent with its sign-in; another user cannot answer someone's challenge.
            let replayed = try await radius.radclient("alice", try await nextCode(), state: state)
            #expect(replayed.code == "Access-Reject")
            let other = try await radius.radclient("alice", Self.password)
            let otherState = try #require(other.state)
            let stolen = try await radius.radclient("mallory", try await nextCode(), state: otherState)
            #expect(stolen.code == "Access-Reject" && stolen.message?.contains("another sign-in") == true)

            // pyrad, a client we did not write: the same round, each reply's authenticators verified.
            let asked = try await radius.pyrad("alice", Self.password)
            #expect(asked.code == "Access-Challenge", "\(asked.output)")
            let askedState = try #require(asked.state)
            let done = try await radius.pyrad("alice", try await nextCode(), state: askedState)
            #expect(done.code == "Access-Accept" && done.message == "Welcome, alice.", "\(done.output)")
            let refused = try await radius.pyrad("alice", "wrong")
            #expect(refused.code == "Access-Reject")

            // No Message-Authenticator (BlastRADIUS): no answer at all.
            let unsigned = try await radius.radclient("alice", Self.password, messageAuthenticator: false, timeout: 2)
            #expect(unsigned.code == nil, "\(unsigned.output)")
            // Every refusal and sign-in is in the audit.
            let events = try await server.store.auditEvents(AuditFilter(userId: "alice"), limit: 100).map(\.type)
            #expect(events.contains("tfa.login") && events.contains("tfa.login_failed"), "\(events)")
        }
    }

    @Test(
        "Password then a push: the number in a challenge, approved or rejected on the phone; without number matching, held until approved"
    )
    func push() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        let root = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: root) }
        try await server.live { http in
            let scene = try await Scene(server, http, phoneAt: root)
            let (radius, operations) = (scene.radius, scene.phone)
            defer { radius.stop() }
            func pending() async throws -> MobileOperation { try await Self.pending(operations) }

            // Number matching (the default): the challenge shows the number; the phone approves with it.
            let challenge = try await radius.radclient("bob", Self.password)
            #expect(challenge.code == "Access-Challenge", "\(challenge.output)")
            let number = try #require(
                challenge.message.flatMap { $0.firstMatch(of: /choose (\d+)/) }.flatMap { Int($0.1) },
                "\(challenge.output)")
            let pushState = try #require(challenge.state)
            let login = try await pending()
            #expect(login.formData.title == "Sign in to VPN vpn-gw-1?")
            #expect(login.formData.attributes.first { $0.id == "login.address" }?.value == "203.0.113.7")
            #expect(login.numberMatching?.choices.contains(number) == true)
            // Enter before approving: asked again, the same sign-in.
            let early = try await radius.radclient("bob", nil, state: pushState, timeout: 20)
            #expect(early.code == "Access-Challenge" && early.state == challenge.state, "\(early.output)")
            try await operations.authorize(login, factor: .pin("1234"), number: number)
            let accepted = try await radius.radclient("bob", nil, state: pushState)
            #expect(accepted.code == "Access-Accept" && accepted.message == "Welcome, bob.", "\(accepted.output)")

            // Another number than the challenge's: refused.
            let second = try await radius.radclient("bob", Self.password)
            let shown = try #require(second.message.flatMap { $0.firstMatch(of: /choose (\d+)/) }.flatMap { Int($0.1) })
            let wrongRequest = try await pending()
            let other = try #require(wrongRequest.numberMatching?.choices.first { $0 != shown })
            await #expect(throws: AssentError.self) {
                try await operations.authorize(wrongRequest, factor: .pin("1234"), number: other)
            }
            let secondState = try #require(second.state)
            let wrongNumber = try await radius.radclient("bob", nil, state: secondState)
            #expect(wrongNumber.code == "Access-Reject" && wrongNumber.message?.contains("another number") == true)

            // Without number matching the request is held until the phone answers.
            _ = try await server.operatorCall(
                http, "PUT", "/api/v1/tfa/policy",
                body: try OperatorJSON.encoder().encode(
                    TFAPolicy(required: true, providers: [.totp, .push, .backup], numberMatching: "off")),
                as: TFAPolicy.self)
            async let held = radius.radclient("bob", Self.password, timeout: 30)
            try await operations.authorize(try await pending(), factor: .pin("1234"))
            let approved = try await held
            #expect(approved.code == "Access-Accept", "\(approved.output)")
            async let refusedLater = radius.radclient("bob", Self.password, timeout: 30)
            try await operations.reject(id: try await pending().id, reason: RejectReason.unexpectedOperation)
            let rejected = try await refusedLater
            #expect(rejected.code == "Access-Reject", "\(rejected.output)")
            #expect(rejected.message == "The user rejected the sign-in on the phone.")
        }
    }

    @Test(
        "EAP-GTC (what strongSwan's eap-radius forwards): password and code in one field; a push only without number matching"
    )
    func eap() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        let root = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: root) }
        try await server.live { http in
            let scene = try await Scene(server, http, phoneAt: root)
            let (radius, operations) = (scene.radius, scene.phone)
            defer { radius.stop() }
            func nextCode() async throws -> String { try await scene.nextCode() }

            let accepted = try await radius.eapGTC("alice", Self.password + (try await nextCode()))
            #expect(accepted.success, "\(accepted.output) \(radius.log.suffix(3000))")
            let wrong = try await radius.eapGTC("alice", Self.password + TFACodes.other(than: try await nextCode()))
            #expect(!wrong.success, "\(wrong.output)")
            let badPassword = try await radius.eapGTC("alice", "not the password" + (try await nextCode()))
            #expect(!badPassword.success)
            // The password alone cannot be followed by a challenge over EAP-GTC: refused.
            let alone = try await radius.eapGTC("alice", Self.password)
            #expect(!alone.success)

            // Number matching: no push is sent that the person could not finish.
            let numbered = try await radius.eapGTC("bob", Self.password)
            #expect(!numbered.success)
            #expect(try await operations.pending().value.isEmpty)
            // Without number matching the sign-in is held until the phone approves.
            _ = try await server.operatorCall(
                http, "PUT", "/api/v1/tfa/policy",
                body: try OperatorJSON.encoder().encode(
                    TFAPolicy(required: true, providers: [.totp, .push, .backup], numberMatching: "off")),
                as: TFAPolicy.self)
            async let held = radius.eapGTC("bob", Self.password, timeout: 35)
            let waiting = try await Self.pending(operations)
            #expect(waiting.formData.title == "Sign in to VPN vpn-gw-3?")
            #expect(waiting.formData.attributes.first { $0.id == "login.address" }?.value == "192.0.2.44")
            try await operations.authorize(waiting, factor: .pin("1234"))
            let approved = try await held
            #expect(approved.success, "\(approved.output)")
            async let refusedLater = radius.eapGTC("bob", Self.password, timeout: 35)
            try await operations.reject(
                id: try await Self.pending(operations).id, reason: RejectReason.unexpectedOperation)
            #expect(!(try await refusedLater).success)
            let events = try await server.store.auditEvents(AuditFilter(userId: "alice"), limit: 100).map(\.type)
            #expect(events.contains("tfa.login") && events.contains("tfa.login_failed"), "\(events)")
        }
    }

    @Test(
        "Gateways come from Assent; FreeRADIUS refuses when Assent refuses its key or cannot be reached, and drops a removed gateway"
    )
    func failClosed() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        try await server.live { http in
            let flow = TFAClient(server: server, client: http)
            try await flow.createAccount("alice")
            _ = try await flow.registerTOTP("alice")
            struct Created: Decodable {
                var apiKey: String
                var id: String
            }
            let key = try await server.operatorCall(
                http, "POST", "/api/v1/api-keys",
                body: try OperatorJSON.encoder().encode(
                    CreateAPIKeyRequest(name: "freeradius", scopes: ["access:check"])),
                as: Created.self)
            let secret = try await Self.gateway(server)
            // The gateway endpoint: a registered address answers its secret, another nothing.
            let known = try await http.send(
                "GET", "/api/v1/radius/clients/127.0.0.1", headers: ["Authorization": "Bearer \(key.apiKey)"])
            #expect(known.status == 200 && known.text.contains(secret) && known.text.contains("vpn-gw-1"))
            let unknown = try await http.send(
                "GET", "/api/v1/radius/clients/10.9.9.9", headers: ["Authorization": "Bearer \(key.apiKey)"])
            #expect(unknown.status == 404)
            // Registering an overlapping network or a taken name is refused.
            let services = Services(server.environment)
            await #expect(throws: AssentServerError.self) {
                try await services.radiusClients.add(
                    name: "other", network: "127.0.0.0/8", applicationId: nil, actor: "test")
            }
            await #expect(throws: AssentServerError.self) {
                try await services.radiusClients.add(
                    name: "vpn-gw-1", network: "10.0.0.1", applicationId: nil, actor: "test")
            }

            let radius = try await FreeRADIUS(assent: http.base, apiKey: key.apiKey, secret: secret)
            defer { radius.stop() }
            #expect(try await radius.radclient("alice", Self.password).code == "Access-Challenge")
            // A wrong shared secret: the gateway's packets do not verify, nothing is answered.
            let forged = try await Spawn.runOnThread(
                ["/usr/bin/radclient", "-r", "1", "-t", "2", "127.0.0.1:\(radius.port)", "auth", "not-the-secret"],
                input: "User-Name = \"alice\"\nUser-Password = \"x\"\nMessage-Authenticator = 0x00\n")
            #expect(!forged.output.contains("Received"), "\(forged.output)")
            // The key revoked: Assent refuses FreeRADIUS, FreeRADIUS refuses the person.
            let revoked = try await server.operatorSend(http, "DELETE", "/api/v1/api-keys/\(key.id)")
            #expect((200..<300).contains(revoked.status), "\(revoked.text)")
            #expect(try await radius.radclient("alice", Self.password).code == "Access-Reject")

            // Assent's sign-in endpoint unreachable (the gateways still known): refused.
            let second = try await Self.radiusKey(server, http)
            let closed = URL(string: "http://127.0.0.1:\(try PostgresTestCluster.freePort())")!
            let unreachable = try await FreeRADIUS(
                assent: http.base, apiKey: second, secret: secret, lifetime: 1, accessAt: closed)
            defer { unreachable.stop() }
            let reply = try await unreachable.radclient("alice", Self.password, timeout: 10)
            #expect(reply.code == "Access-Reject", "\(reply.output) \(unreachable.log.suffix(3000))")
            // The gateway removed: once FreeRADIUS's entry expires, its packets are dropped.
            try await services.radiusClients.remove(name: "vpn-gw-1", actor: "test")
            try await Task.sleep(for: .seconds(2))
            let dropped = try await unreachable.radclient("alice", Self.password, timeout: 2)
            #expect(dropped.code == nil, "\(dropped.output)")
            let events = try await server.store.auditEvents(AuditFilter(typePrefix: "radius_client."), limit: 10)
            #expect(Set(events.map(\.type)) == ["radius_client.added", "radius_client.removed"])
        }
    }
}

@Suite("Reading a VPN's sign-in: the typed field, the State, rlm_rest's attributes")
struct AccessReadingTests {
    @Test("A gateway's new secret: 32 Base64URL characters, never a leading '-' (read as an option on command lines)")
    func gatewaySecret() {
        let secrets = (0..<2_000).map { _ in RADIUSClientService.newSecret() }
        #expect(secrets.allSatisfy { $0.count == 32 && !$0.hasPrefix("-") })
        #expect(
            secrets.allSatisfy { $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_".contains($0)) } })
        #expect(Set(secrets).count == secrets.count)
    }

    @Test("A typed field is read as password and code, the most specific reading first, the whole field last")
    func typedField() {
        #expect(
            TypedField.readings("secret123456", totpDigits: 6, backupCodes: false) == [
                TypedField(password: "secret", code: "123456"), TypedField(password: "secret123456", code: nil),
            ])
        // Not digits at the end, no TOTP, or nothing before the code: the whole field only.
        #expect(TypedField.readings("secret12345x", totpDigits: 6, backupCodes: false).count == 1)
        #expect(TypedField.readings("secret123456", totpDigits: nil, backupCodes: false).count == 1)
        #expect(TypedField.readings("123456", totpDigits: 6, backupCodes: false).count == 1)
        // A backup code (12 letters and digits of its alphabet) after the password.
        #expect(
            TypedField.readings("secretabcd2345ef67", totpDigits: nil, backupCodes: true).first
                == TypedField(password: "secret", code: "abcd2345ef67"))
        #expect(TypedField.readings("secret-not-a-code!", totpDigits: nil, backupCodes: true).count == 1)
    }

    @Test("A State names what it waits for and its assertion; anything else is no State of Assent's")
    func state() {
        let state = AccessState(waiting: .push, assertion: "abc_-123")
        #expect(state.text == "assent1:push:abc_-123" && AccessState(state.text) == state)
        #expect(AccessState("assent1:code:x")?.waiting == .code)
        for other in [
            "", "assent1:push:", "assent2:push:x", "assent1:sms:x", "push:x", String(repeating: "a", count: 300),
        ] {
            #expect(AccessState(other) == nil, "\(other)")
        }
    }

    @Test("rlm_rest's JSON: strings, numbers and octets; the sign-in it asks about")
    func attributes() throws {
        let body = #"""
            {"User-Name":{"type":"string","value":["alice"]},"User-Password":{"type":"string","value":["pw"]},
            "State":{"type":"octets","value":["0x617373656e74313a636f64653a78"]},"NAS-Port":{"type":"integer","value":[7]},
            "NAS-IP-Address":{"type":"ipaddr","value":["192.0.2.1"]},"Calling-Station-Id":{"type":"string","value":["203.0.113.7"]}}
            """#
        let attributes = try JSONDecoder().decode(RADIUSAttributes.self, from: Data(body.utf8))
        #expect(attributes.first("NAS-Port") == "7")
        let request = try attributes.accessRequest()
        #expect(
            request
                == AccessRequest(
                    userId: "alice", typed: "pw", state: "assent1:code:x", service: "VPN", gateway: "192.0.2.1",
                    clientAddress: "203.0.113.7"))
        // Octets that are not hexadecimal, or not text, give no State.
        let odd = RADIUSAttributes(["State": .init(type: "octets", value: [.text("0xzz")])])
        #expect(odd.first("State") == nil)
        #expect(throws: AssentServerError.self) { try RADIUSAttributes([:]).accessRequest() }
    }

    @Test("Each decision is the attributes FreeRADIUS replies with")
    func replies() {
        #expect(
            RADIUSController.reply(.accept(message: "Welcome"))
                == (200, ["reply:Reply-Message": "Welcome", "control:Auth-Type": "Accept"]))
        #expect(
            RADIUSController.reply(.challenge(message: "Type the code.", state: "assent1:code:x"))
                == (
                    200,
                    [
                        "reply:Reply-Message": "Type the code.", "reply:State": "assent1:code:x",
                        "control:Response-Packet-Type": "Access-Challenge",
                    ]
                ))
        #expect(RADIUSController.reply(.reject(message: "No.")) == (401, ["reply:Reply-Message": "No."]))
    }
}
