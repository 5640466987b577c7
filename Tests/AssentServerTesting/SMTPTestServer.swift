import AssentServer
import AssentTesting
import Foundation

/// A real SMTP server we did not write: Debian's python3-aiosmtpd (`.ci/run` installs it), started on a free
/// loopback port with STARTTLS or implicit TLS (a test CA's certificate), AUTH required over TLS, and every accepted
/// message parsed by Python's own `email` package and appended to a JSON-lines mailbox.
final class SMTPTestServer: Sendable {
    enum Mode: String, Sendable {
        case starttls, tls, plain
    }

    /// One accepted message as the server parsed it.
    struct Mail: Decodable, Sendable {
        var from: String
        var to: [String]
        var subject: String
        var body: String
        var contentType: String
    }

    static let username = "assent"
    static let password = "relay-secret-\(UUID().uuidString.prefix(8))"

    let port: Int
    let caPEM: String
    private let directory: URL
    private let process: Process

    /// Starts a server in `mode`; throws when python3-aiosmtpd is missing.
    init(mode: Mode) async throws {
        let python = "/usr/bin/python3"
        guard (try? await Spawn.runOnThread([python, "-c", "import aiosmtpd"]))?.status == 0 else {
            throw TestFailure("python3-aiosmtpd is not installed: apt-get install python3-aiosmtpd (.ci/run does).")
        }
        let certificates = try TestCertificates.make()
        caPEM = certificates.caPEM
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "assent-smtp-\(UUID().uuidString)")
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try certificates.serverCertificatePEM.write(
            to: directory.appendingPathComponent("cert.pem"), atomically: true, encoding: .utf8)
        try certificates.serverKeyPEM.write(
            to: directory.appendingPathComponent("key.pem"), atomically: true, encoding: .utf8)
        try Self.script.write(to: directory.appendingPathComponent("server.py"), atomically: true, encoding: .utf8)
        let ready = directory.appendingPathComponent("ready")
        let process = Process()
        self.process = process
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [
            directory.appendingPathComponent("server.py").path, mode.rawValue, directory.path, Self.username,
            Self.password, String(getpid()),
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(
            forWritingTo: {
                let log = directory.appendingPathComponent("stderr")
                _ = FileManager.default.createFile(atPath: log.path, contents: nil)
                return log
            }())
        try process.run()
        var port: Int?
        for _ in 0..<200 where port == nil {
            try await Task.sleep(for: .milliseconds(50))
            port = (try? String(contentsOf: ready, encoding: .utf8)).flatMap { Int($0) }
        }
        guard let port else {
            process.terminate()
            let errors = (try? String(contentsOf: directory.appendingPathComponent("stderr"), encoding: .utf8)) ?? ""
            throw TestFailure("aiosmtpd did not start: \(errors)")
        }
        self.port = port
    }

    deinit {
        process.terminate()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Settings for this server as Assent's relay.
    func settings(username: String? = SMTPTestServer.username, password: String? = SMTPTestServer.password)
        -> SMTPSettings
    {
        let mode: SMTPSettings.Security =
            switch (try? String(contentsOf: directory.appendingPathComponent("mode"), encoding: .utf8)) ?? "" {
            case "tls": .tls
            case "plain": .none
            default: .startTLS
            }
        var settings = SMTPSettings(
            host: "127.0.0.1", port: port, security: mode, senderAddress: "login@bank.example",
            senderName: "Bank Login", username: username, password: password, trustRootsPEM: caPEM)
        settings.timeout = .seconds(60)
        return settings
    }

    /// The messages accepted so far.
    func mailbox() throws -> [Mail] {
        let text = (try? String(contentsOf: directory.appendingPathComponent("mailbox.jsonl"), encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map { try JSONDecoder().decode(Mail.self, from: Data($0.utf8)) }
    }

    /// Waits until `count` messages arrived (at most 60 s: a loaded machine delays the outbox and the relay).
    func wait(for count: Int) async throws -> [Mail] {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let mails = try mailbox()
            if mails.count >= count { return mails }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("The SMTP server got \(try mailbox().count) of \(count) messages.")
    }

    private static let script = #"""
        import json, os, socket, ssl, sys, time
        from email import message_from_bytes
        from email.policy import default as default_policy
        from aiosmtpd.controller import Controller
        from aiosmtpd.smtp import AuthResult, LoginPassword

        mode, directory, user, password, parent = sys.argv[1:6]
        open(os.path.join(directory, "mode"), "w").write(mode)

        class Handler:
            async def handle_DATA(self, server, session, envelope):
                message = message_from_bytes(envelope.original_content or envelope.content, policy=default_policy)
                record = {
                    "from": envelope.mail_from, "to": envelope.rcpt_tos, "subject": str(message["subject"]),
                    "body": message.get_content(), "contentType": message.get_content_type(),
                }
                with open(os.path.join(directory, "mailbox.jsonl"), "a") as mailbox:
                    mailbox.write(json.dumps(record) + "\n")
                return "250 OK"

        def authenticate(server, session, envelope, mechanism, data):
            ok = isinstance(data, LoginPassword) and data.login.decode() == user and data.password.decode() == password
            return AuthResult(success=ok, handled=False)

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem"))
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        common = dict(hostname="127.0.0.1", port=port, authenticator=authenticate)
        if mode == "starttls":
            controller = Controller(Handler(), tls_context=context, require_starttls=True, auth_required=True,
                                    auth_require_tls=True, **common)
        elif mode == "tls":
            # aiosmtpd does not count implicit TLS as TLS for AUTH: the whole connection is TLS here anyway.
            controller = Controller(Handler(), ssl_context=context, auth_required=True, auth_require_tls=False,
                                    **common)
        else:
            controller = Controller(Handler(), auth_require_tls=False, **common)
        controller.start()
        open(os.path.join(directory, "ready.tmp"), "w").write(str(port))
        os.rename(os.path.join(directory, "ready.tmp"), os.path.join(directory, "ready"))
        # Ends with the test process, even when it never gets to stop this server.
        while os.getppid() == int(parent):
            time.sleep(0.5)
        controller.stop()
        """#
}
