import AssentCrypto
import AssentModel
import AssentTesting
import Foundation
import Glibc
import SQLKit
import Testing

@testable import AssentServer
@testable import AssentServerTesting

@Suite("The audit trail anchored outside the database: a witness, a pinned key, no silent re-keying")
struct AuditAnchorTests {
    /// A server signing every five rows and witnessing each checkpoint in a file of its own.
    static func witnessed(_ backend: Backend) async throws -> (TestServer, witness: String) {
        var server = try await AuditChainServerTests.server(backend)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("witness-\(UUID()).jsonl").path
        server.environment.audit.witnesses = [AuditWitness(path: path)]
        return (server, path)
    }

    @Test(
        "Every checkpoint is witnessed; an export whose tail was removed with its checkpoints fails against the witness",
        arguments: Backend.all)
    func removedTail(backend: Backend) async throws {
        let (server, witness) = try await Self.witnessed(backend)
        defer { Task { await server.shutdown() } }
        defer { try? FileManager.default.removeItem(atPath: witness) }
        try await AuditChainServerTests.write(server, count: 17)
        let chain = Services(server.environment).auditChain
        try await chain.sealPending()
        try await chain.checkpointNow()
        let key = try await chain.key().publicKey
        let witnessed = try String(contentsOfFile: witness, encoding: .utf8)
        let stored = try await server.store.auditCheckpoints(from: 0, through: .max)
        #expect(witnessed.split(separator: "\n").count == stored.count && stored.count >= 3)
        let anchor = try #require(AuditWitness.latest(in: witnessed, signedBy: key))
        #expect(anchor == stored.last)
        // Whole, it verifies against the anchor.
        let whole = try await chain.export(from: 0, until: .max)
        let report = try AuditChain.verify(export: whole, key: key, anchor: anchor).get()
        #expect(report.signedThrough == anchor.seq)

        // Someone with the database removes the newest rows and their checkpoint: the export still verifies alone
        // (that is the hole), but not against the witness.
        let cut = anchor.seq - 3
        try await AuditChainServerTests.sql(server, "DELETE FROM audit_events WHERE seq > \(cut)")
        try await AuditChainServerTests.sql(server, "DELETE FROM audit_checkpoints WHERE seq > \(cut)")
        let shortened = try await chain.export(from: 0, until: .max)
        #expect((try? AuditChain.verify(export: shortened, key: key).get()) != nil)
        guard case .failure(let failure) = AuditChain.verify(export: shortened, key: key, anchor: anchor) else {
            throw TestFailure("a removed tail verified against the witness")
        }
        #expect(failure.message.contains("its tail was removed"), "\(failure)")
    }

    @Test("A trail re-signed with a new key fails the pinned key and the witness; the server refuses the new key")
    func reKeyed() async throws {
        let (server, witness) = try await Self.witnessed(.sqlite)
        defer { Task { await server.shutdown() } }
        defer { try? FileManager.default.removeItem(atPath: witness) }
        try await AuditChainServerTests.write(server, count: 10)
        let chain = Services(server.environment).auditChain
        try await chain.sealPending()
        let original = try await chain.key().publicKey
        let anchor = try #require(
            AuditWitness.latest(in: try String(contentsOfFile: witness, encoding: .utf8), signedBy: original))

        // The key row deleted: before, a new key was made silently and sealing went on. Now neither a fresh
        // service nor a server start takes it.
        try await AuditChainServerTests.sql(server, "DELETE FROM audit_keys")
        await #expect(throws: AssentServerError.self) {
            _ = try await Services(server.environment).auditChain.signingKey()
        }
        do {
            _ = try await ServerBootstrap.prepare(server.environment)
            Issue.record("the server started without its audit key")
        } catch let error as AssentServerError {
            #expect(error.message.contains("does not sign the newest audit checkpoint"), "\(error.message)")
        }

        // An attacker re-signs every checkpoint with their own key: the export verifies with that key alone, but
        // not against the witness (whose checkpoint the new key did not sign).
        let forger = ECPrivateKey()
        let export = try await chain.export(from: 0, until: .max)
        var forged: [String] = []
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        for line in export.split(separator: "\n") {
            if case .checkpoint(let c) = try JSONDecoder().decode(AuditChain.Line.self, from: Data(line.utf8)) {
                let resigned = try AuditChain.Checkpoint(
                    seq: c.seq, hash: try #require(Hex.decode(c.hash)), at: c.at, key: forger)
                forged.append(String(decoding: try encoder.encode(AuditChain.Line.checkpoint(resigned)), as: UTF8.self))
            } else {
                forged.append(String(line))
            }
        }
        let forgedText = forged.joined(separator: "\n")
        #expect((try? AuditChain.verify(export: forgedText, key: forger.publicKey).get()) != nil)
        #expect(
            AuditWitness.latest(in: try String(contentsOfFile: witness, encoding: .utf8), signedBy: forger.publicKey)
                == nil)
        guard case .failure(let failure) = AuditChain.verify(export: forgedText, key: forger.publicKey, anchor: anchor)
        else { throw TestFailure("a re-keyed export verified against the witness") }
        #expect(failure.message.contains("not signed by this key"), "\(failure)")
        // And the fingerprint pinned at set-up is not the forger's.
        #expect(AuditChainService.fingerprint(forger.publicKey) != AuditChainService.fingerprint(original))
    }

    @Test("assent audit verify --anchor and --fingerprint: a cut tail and another key each exit 1 with a sentence")
    func cli() async throws {
        let (server, witness) = try await Self.witnessed(.sqlite)
        defer { Task { await server.shutdown() } }
        defer { try? FileManager.default.removeItem(atPath: witness) }
        try await AuditChainServerTests.write(server, count: 12)
        let chain = Services(server.environment).auditChain
        try await chain.sealPending()
        try await chain.checkpointNow()
        let key = try await chain.key().publicKey
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("anchor-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let keyFile = folder.appendingPathComponent("audit.pem").path
        try key.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let whole = folder.appendingPathComponent("whole.jsonl").path
        try await chain.export(from: 0, until: .max).write(toFile: whole, atomically: true, encoding: .utf8)
        let fingerprint = AuditChainService.fingerprint(key)

        let good = try await CLITests.run(
            ["audit", "verify", whole, "--key", keyFile, "--anchor", witness, "--fingerprint", fingerprint])
        #expect(good.status == 0 && good.output.contains("reaching the witnessed checkpoint"), "\(good.errors)")
        let wrongPin = try await CLITests.run(
            ["audit", "verify", whole, "--key", keyFile, "--fingerprint", "0123456789abcdef"])
        #expect(wrongPin.status == 1 && wrongPin.errors.contains("AUDIT_KEY_NOT_PINNED"), "\(wrongPin.errors)")

        let anchorSeq = try #require(
            AuditWitness.latest(in: try String(contentsOfFile: witness, encoding: .utf8), signedBy: key)?.seq)
        try await AuditChainServerTests.sql(server, "DELETE FROM audit_events WHERE seq > \(anchorSeq - 2)")
        try await AuditChainServerTests.sql(server, "DELETE FROM audit_checkpoints WHERE seq > \(anchorSeq - 2)")
        let cut = folder.appendingPathComponent("cut.jsonl").path
        try await chain.export(from: 0, until: .max).write(toFile: cut, atomically: true, encoding: .utf8)
        #expect(try await CLITests.run(["audit", "verify", cut, "--key", keyFile]).status == 0)
        let refused = try await CLITests.run(["audit", "verify", cut, "--key", keyFile, "--anchor", witness])
        #expect(refused.status == 1 && refused.errors.contains("its tail was removed"), "\(refused.errors)")
    }

    @Test("Syslog and webhook witnesses: every checkpoint as an RFC 5424 message and a signed POST; each anchors")
    func syslogAndWebhook() async throws {
        let receiver = WebhookReceiver()
        try await receiver.run { url in
            // A syslog daemon's socket: a datagram socket the test reads.
            let socketPath = "/tmp/assent-syslog-\(UUID().uuidString.prefix(8))"
            let syslog = try DatagramSocket(binding: socketPath)
            defer { syslog.close() }
            let secret = "witness-secret-0123456789"
            var made = try await AuditChainServerTests.server(.sqlite)
            made.environment.audit.witnesses = [
                try AuditWitness.parse("syslog:\(socketPath)", secret: nil),
                try AuditWitness.parse(url.absoluteString, secret: secret),
            ]
            let server = made
            defer { Task { await server.shutdown() } }
            try await AuditChainServerTests.write(server, count: 12)
            let chain = Services(server.environment).auditChain
            try await chain.sealPending()
            try await chain.checkpointNow()
            let key = try await chain.key().publicKey
            let stored = try await server.store.auditCheckpoints(from: 0, through: .max)
            #expect(stored.count == 3)

            let messages = syslog.receiveAll()
            #expect(messages.count == stored.count)
            for message in messages {
                #expect(
                    message.hasPrefix("<85>1 ") && message.contains(" assent ")
                        && message.contains(" audit-checkpoint - {"))
            }
            #expect(AuditWitness.latest(in: messages.joined(separator: "\n"), signedBy: key) == stored.last)

            let posts = try await receiver.wait(for: stored.count)
            let now = Int64(Date().timeIntervalSince1970)
            #expect(
                posts.allSatisfy {
                    WebhookSignature.isValid($0.signature ?? "", body: $0.body, secret: Data(secret.utf8), now: now)
                })
            let bodies = posts.map { String(decoding: $0.body, as: UTF8.self) }.joined(separator: "\n")
            #expect(AuditWitness.latest(in: bodies, signedBy: key) == stored.last)
        }
    }

    @Test("--audit-witness: a file, syslog, an https URL with its secret; mistakes named")
    func witnessOptions() throws {
        #expect(
            try AuditWitness.parse("/var/log/assent-witness.jsonl", secret: nil).destination
                == .file("/var/log/assent-witness.jsonl"))
        #expect(try AuditWitness.parse("syslog", secret: nil).destination == .syslog("/dev/log"))
        #expect(try AuditWitness.parse("syslog:/run/log.sock", secret: nil).destination == .syslog("/run/log.sock"))
        let hook = try AuditWitness.parse("https://witness.example/cp", secret: "0123456789abcdef")
        #expect(hook.label == "https://witness.example/cp" && hook.kind == "webhook")
        for (text, secret, sentence) in [
            ("", nil, "names a file, syslog or an https URL"), ("syslog:relative", nil, "absolute path"),
            ("https://witness.example/cp", nil, "ASSENT_AUDIT_WITNESS_SECRET"),
            ("https://witness.example/cp", "short", "16 characters"), ("https://", "0123456789abcdef", "with a host"),
        ] as [(String, String?, String)] {
            #expect(throws: AssentServerError.self, "\(text)") { try AuditWitness.parse(text, secret: secret) }
            #expect((try? AuditWitness.parse(text, secret: secret)) == nil)
            do { _ = try AuditWitness.parse(text, secret: secret) } catch {
                #expect(error.message.contains(sentence), "\(text): \(error.message)")
            }
        }
        // A syslog message is RFC 5424: priority authpriv.notice, version 1, an RFC 3339 time.
        let message = String(
            decoding: AuditWitness.syslogMessage(Data("{}".utf8), at: Date(timeIntervalSince1970: 0)), as: UTF8.self)
        #expect(message.hasPrefix("<85>1 1970-01-01T00:00:00.000Z "), "\(message)")
    }
}

/// A Unix datagram socket bound to a path, as a syslog daemon listens on /dev/log.
final class DatagramSocket: Sendable {
    let descriptor: Int32
    let path: String

    init(binding path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        self.path = path
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard descriptor >= 0, bound == 0 else { throw TestFailure("cannot bind \(path): errno \(errno)") }
    }

    /// Every datagram waiting, without blocking.
    func receiveAll() -> [String] {
        var messages: [String] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count > 0 else { return messages }
            messages.append(String(decoding: buffer[0..<count], as: UTF8.self))
        }
    }

    func close() {
        _ = Glibc.close(descriptor)
        unlink(path)
    }
}
