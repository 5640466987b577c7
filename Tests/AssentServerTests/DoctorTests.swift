import AssentCrypto
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// `assent doctor` against real parts: a served SQLite server and its public URL, the push services' stand-ins
/// (APNs, Google's and Huawei's OAuth) over TLS, a real SMTP relay (aiosmtpd), a real PostgreSQL — first all well,
/// then each broken in its own way.
@Suite("assent doctor: the configuration against reality")
struct DoctorTests {
    /// Push and mail flags for `mock` at `base` and `relay`, with their files in `folder`.
    static func serviceFlags(
        _ mock: PushServiceMock, base: URL, relay: SMTPTestServer, in folder: URL
    ) throws -> [String] {
        let p8 = try ConfigFileTests.write(ECPrivateKey().pemRepresentation, "apns.p8", in: folder)
        let account: [String: String] = [
            "type": "service_account", "project_id": "assent-test", "private_key_id": "kid-1",
            "private_key": try RSAPrivateKey().pemRepresentation,
            "client_email": "push@assent-test.iam.gserviceaccount.com",
            "token_uri": base.appendingPathComponent("token").absoluteString,
        ]
        let fcm = try ConfigFileTests.write(
            String(decoding: try JSONSerialization.data(withJSONObject: account), as: UTF8.self), "fcm.json",
            in: folder)
        let ca = try ConfigFileTests.write(mock.certificates.caPEM, "push-ca.pem", in: folder)
        let relayCA = try ConfigFileTests.write(relay.caPEM, "relay-ca.pem", in: folder)
        return [
            "--apns-key-file", p8, "--apns-key-id", "KEY98765AB", "--apns-team-id", "TEAM123456", "--apns-topic",
            "com.example.bank", "--apns-url", base.absoluteString, "--fcm-service-account", fcm, "--fcm-url",
            base.absoluteString, "--hms-app-id", "104455", "--hms-url", base.absoluteString, "--hms-token-url",
            base.appendingPathComponent("oauth2/v3/token").absoluteString, "--push-ca-file", ca, "--smtp-host",
            "127.0.0.1", "--smtp-port", String(relay.port), "--smtp-from", "login@bank.example", "--smtp-user",
            SMTPTestServer.username, "--smtp-ca-file", relayCA,
        ]
    }

    /// The lines of a report by check: `(ok, sentence)`.
    static func lines(_ output: String) -> [String: (ok: Bool, sentence: String)] {
        var lines: [String: (Bool, String)] = [:]
        for line in output.split(separator: "\n") {
            guard let match = line.firstMatch(of: /^(OK|FAIL) +([^:]+): (.*)$/) else { continue }
            let check = String(match.2)
            // A failed line wins over an OK one of the same check (configuration may have several).
            if lines[check]?.0 == false { continue }
            lines[check] = (match.1 == "OK", String(match.3))
        }
        return lines
    }

    @Test("On a served SQLite server with push services and a mail relay every check is OK, and nothing is sent")
    func allWell() async throws {
        let work = try ConfigFileTests.folder()
        let port = try PostgresTestCluster.freePort()
        let issuer = "http://127.0.0.1:\(port)"
        let (server, _) = try await CLITests.serve(work, port: port, arguments: ["--issuer", issuer])
        defer { if server.isRunning { server.terminate() } }
        let relay = try await SMTPTestServer(mode: .starttls)
        let mock = try PushServiceMock()
        try await mock.run { base in
            // APNs refuses the made-up device token once it accepted the provider token, as Apple's does.
            mock.script(.apns, .init(status: 400, body: #"{"reason":"BadDeviceToken"}"#))
            let flags = try Self.serviceFlags(mock, base: base, relay: relay, in: work)
            let doctor = try await CLITests.run(
                ["doctor", "--data-dir", work.appendingPathComponent("data").path, "--issuer", issuer] + flags,
                environment: ["ASSENT_HMS_APP_SECRET": "hms-secret", "ASSENT_SMTP_PASSWORD": SMTPTestServer.password])
            let lines = Self.lines(doctor.output)
            #expect(doctor.status == 0, "\(doctor.output) \(doctor.errors)")
            for check in [
                "configuration", "key-encryption key", "database", "key matches", "clock", "APNs", "FCM", "HMS",
                "mail relay", "public URL",
            ] {
                #expect(lines[check]?.ok == true, "\(check): \(doctor.output)")
            }
            #expect(lines["database"]?.sentence.contains("schema current") == true)
            #expect(lines["key matches"]?.sentence.contains("1 application") == true, "\(doctor.output)")
            #expect(lines["APNs"]?.sentence.contains("team TEAM123456, key KEY98765AB") == true)
            #expect(doctor.output.hasSuffix("10 checks, 0 failed.\n"), "\(doctor.output)")
            // Credentials only: an OAuth token each, APNs's made-up token, no message to FCM or Push Kit, no mail.
            let apns = try #require(mock.requests(.apns).first)
            #expect(apns.path == "/3/device/" + String(repeating: "0", count: 64))
            #expect(apns.headers["authorization"]?.hasPrefix("bearer ey") == true)
            #expect(mock.requests(.googleToken).count == 1 && mock.requests(.huaweiToken).count == 1)
            #expect(mock.requests(.fcm).isEmpty && mock.requests(.hms).isEmpty)
            #expect(try relay.mailbox().isEmpty)
        }
    }

    @Test("Each check that fails says what is wrong: key, database, push credentials, relay password, public URL")
    func eachFailureNamed() async throws {
        let work = try ConfigFileTests.folder()
        let (server, _) = try await CLITests.serve(work)
        server.terminate()
        server.waitUntilExit()
        let relay = try await SMTPTestServer(mode: .starttls)
        let mock = try PushServiceMock()
        let nowhere = "http://127.0.0.1:\(try PostgresTestCluster.freePort())"
        try await mock.run { base in
            mock.script(.apns, .init(status: 403, body: #"{"reason":"InvalidProviderToken"}"#))
            mock.script(.googleToken, .init(status: 400, body: #"{"error":"invalid_grant"}"#))
            mock.script(.huaweiToken, .init(status: 401, body: #"{"error":1102}"#))
            let flags = try Self.serviceFlags(mock, base: base, relay: relay, in: work)
            let otherKey = Bytes.random(count: 32).base64EncodedString()
            let doctor = try await CLITests.run(
                ["doctor", "--data-dir", work.appendingPathComponent("data").path, "--issuer", nowhere] + flags,
                environment: [
                    "ASSENT_HMS_APP_SECRET": "wrong", "ASSENT_SMTP_PASSWORD": "wrong-password", "ASSENT_KEK": otherKey,
                ])
            #expect(doctor.status == 1, "\(doctor.output) \(doctor.errors)")
            let lines = Self.lines(doctor.output)
            #expect(lines["key-encryption key"]?.ok == true)
            #expect(lines["database"]?.ok == true)
            #expect(lines["key matches"]?.ok == false)
            #expect(lines["key matches"]?.sentence.contains("which this process does not hold") == true)
            #expect(lines["APNs"]?.sentence.contains("refused the provider token") == true, "\(doctor.output)")
            #expect(lines["APNs"]?.sentence.contains("InvalidProviderToken (HTTP 403)") == true)
            #expect(lines["FCM"]?.ok == false && lines["FCM"]?.sentence.contains("Google OAuth") == true)
            #expect(lines["HMS"]?.ok == false && lines["HMS"]?.sentence.contains("Huawei OAuth") == true)
            #expect(lines["mail relay"]?.ok == false && lines["mail relay"]?.sentence.contains("AUTH") == true)
            #expect(
                lines["public URL"]?.ok == false && lines["public URL"]?.sentence.contains("does not answer") == true)
            #expect(doctor.output.hasSuffix("10 checks, 6 failed.\n"), "\(doctor.output)")
            #expect(!doctor.output.contains("wrong-password") && !doctor.output.contains(otherKey))
        }
        // No database and no key where it looks; a configuration mistake is its own line.
        let empty = work.appendingPathComponent("empty").path
        let bare = try await CLITests.run(["doctor", "--data-dir", empty, "--issuer", nowhere])
        let bareLines = Self.lines(bare.output)
        #expect(bare.status == 1)
        #expect(
            bareLines["key-encryption key"]?.sentence.hasPrefix("None: neither ASSENT_KEK") == true, "\(bare.output)")
        #expect(bareLines["database"]?.sentence.contains("No SQLite database at") == true)
        #expect(!FileManager.default.fileExists(atPath: empty), "doctor makes nothing")
        let mistaken = try await CLITests.run(["doctor", "--data-dir", empty, "--pin-min-length", "2"])
        #expect(Self.lines(mistaken.output)["configuration"]?.sentence.contains("PIN lengths") == true)
    }

    @Test("On PostgreSQL: the database and its clock are checked; a schema that lacks migrations is named")
    func postgres() async throws {
        let url = try await PostgresTestCluster.makeDatabase()
        let empty = try ConfigFileTests.folder().appendingPathComponent("data").path
        let before = try await CLITests.run(["doctor", "--data-dir", empty, "--database", url])
        #expect(
            Self.lines(before.output)["database"]?.sentence.contains("run `assent migrate`") == true, "\(before.output)"
        )
        #expect(try await CLITests.run(["migrate", "--database", url]).status == 0)
        let after = try await CLITests.run(["doctor", "--data-dir", empty, "--database", url])
        let lines = Self.lines(after.output)
        #expect(lines["database"]?.ok == true && lines["database"]?.sentence.hasPrefix("postgres answers") == true)
        #expect(lines["clock"]?.ok == true && lines["clock"]?.sentence.hasPrefix("Within ") == true, "\(after.output)")
        let unreachable = try await CLITests.run([
            "doctor", "--data-dir", empty, "--database",
            "postgres://nobody@127.0.0.1:\(try PostgresTestCluster.freePort())/none",
        ])
        #expect(
            Self.lines(unreachable.output)["database"]?.sentence.contains("Connection refused") == true,
            "\(unreachable.output)")
        // The server's own reason, at once (not after the pool's minute of retries).
        let cluster = try await PostgresTestCluster.shared.value
        let missing = try await CLITests.run([
            "doctor", "--data-dir", empty, "--database",
            "postgres://\(cluster.user)@\(cluster.host):\(cluster.port)/no_such_database?sslmode=disable",
        ])
        #expect(
            Self.lines(missing.output)["database"]?.sentence.contains(#"database "no_such_database" does not exist"#)
                == true, "\(missing.output)")
    }
}
