import AssentCrypto
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where every signed audit checkpoint is also written, outside the database: someone who can change the database
/// cannot change what was witnessed, so a removed or rewritten tail of the chain is found by verifying an export
/// against the latest witnessed checkpoint (`assent audit verify --anchor`).
///
/// Three kinds, the operator's choice (`serve --audit-witness`, repeatable), each written after the checkpoint's
/// transaction commits, one checkpoint per line or message in the export's own format:
/// - an append-only **file**, flushed to disk: give it to another user, make it append-only (`chattr +a`), or ship
///   it off the host; the database's writer needs no access to it;
/// - **syslog**: an RFC 5424 message per checkpoint (facility authpriv, severity notice, app `assent`, message id
///   `audit-checkpoint`) to the local syslog socket (`/dev/log`, or another), which forwards it where the operator
///   wants;
/// - a **webhook**: a POST per checkpoint to an https URL, signed like the operation webhooks (`X-Assent-Signature`)
///   and sent through the egress policy.
public struct AuditWitness: Sendable, Equatable {
    public enum Destination: Sendable, Equatable {
        case file(String)
        /// A Unix datagram socket a syslog daemon reads.
        case syslog(String)
        case webhook(url: URL, secret: Data)
    }

    public var destination: Destination

    public init(_ destination: Destination) { self.destination = destination }

    /// A file witness.
    public init(path: String) { destination = .file(path) }

    /// `file`, `syslog` or `webhook` (the `/metrics` label).
    public var kind: String {
        switch destination {
        case .file: "file"
        case .syslog: "syslog"
        case .webhook: "webhook"
        }
    }

    /// What logs name it by (never the webhook's secret).
    public var label: String {
        switch destination {
        case .file(let path): path
        case .syslog(let socket): "syslog \(socket)"
        case .webhook(let url, _): url.absoluteString
        }
    }

    /// Reads `--audit-witness`: a file path, `syslog` or `syslog:SOCKET`, or an `https://` URL (whose signing key
    /// is `secret`, `ASSENT_AUDIT_WITNESS_SECRET`).
    public static func parse(_ text: String, secret: String?) throws(AssentServerError) -> AuditWitness {
        guard !text.isEmpty else { throw .configuration("--audit-witness names a file, syslog or an https URL.") }
        if text == "syslog" { return AuditWitness(.syslog("/dev/log")) }
        if text.hasPrefix("syslog:") {
            let socket = String(text.dropFirst("syslog:".count))
            guard socket.hasPrefix("/"), socket.utf8.count < 108 else {
                throw .configuration("--audit-witness syslog:SOCKET names a socket by its absolute path.")
            }
            return AuditWitness(.syslog(socket))
        }
        if text.lowercased().hasPrefix("https://") || text.lowercased().hasPrefix("http://") {
            guard let url = URL(string: text), url.host?.isEmpty == false else {
                throw .configuration("--audit-witness \(text) is not a URL with a host.")
            }
            guard let secret, secret.utf8.count >= 16 else {
                throw .configuration(
                    "An audit witness URL needs ASSENT_AUDIT_WITNESS_SECRET: its signing key, 16 characters or more.")
            }
            return AuditWitness(.webhook(url: url, secret: Data(secret.utf8)))
        }
        return AuditWitness(path: text)
    }

    /// The line a checkpoint is witnessed as.
    static func line(_ checkpoint: AuditChain.Checkpoint) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try encoder.encode(AuditChain.Line.checkpoint(checkpoint))
    }

    /// Writes `checkpoints` to the destination (a webhook's requests go through `egress`).
    func append(_ checkpoints: [AuditChain.Checkpoint], egress: Egress) async throws {
        guard !checkpoints.isEmpty else { return }
        let lines = try checkpoints.map(Self.line)
        switch destination {
        case .file(let path): try Self.appendToFile(lines, path: path)
        case .syslog(let socket): try Self.sendToSyslog(lines, socket: socket)
        case .webhook(let url, let secret):
            for line in lines {
                let settings = WebhookSettings(url: url, secret: secret)
                let timestamp = Int64(Date().timeIntervalSince1970)
                switch await SignedPost.send(
                    line, to: settings, userAgent: "Assent-Audit-Witness/1", timestamp: timestamp, egress: egress)
                {
                case .success(let status) where (200..<300).contains(status): continue
                case .success(let status):
                    throw AssentServerError.configuration("The audit witness \(url) answered \(status).")
                case .failure(let failure):
                    throw AssentServerError.configuration("The audit witness \(url): \(failure.reason)")
                }
            }
        }
    }

    private static func appendToFile(_ lines: [Data], path: String) throws {
        var text = Data()
        for line in lines {
            text.append(line)
            text.append(0x0A)
        }
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw AssentServerError.configuration("The audit witness \(path) cannot be opened (errno \(errno)).")
        }
        defer { close(descriptor) }
        let written = text.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == text.count, fsync(descriptor) == 0 else {
            throw AssentServerError.configuration("The audit witness \(path) could not be written (errno \(errno)).")
        }
    }

    /// RFC 5424: `<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID - MSG`, PRI authpriv (10) × 8 + notice (5).
    static func syslogMessage(_ line: Data, at date: Date = Date()) -> Data {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let timestamp = formatter.string(from: date)
        let host = ProcessInfo.processInfo.hostName.filter { $0.isASCII && !$0.isWhitespace }.prefix(255)
        let header =
            "<85>1 \(timestamp) \(host.isEmpty ? "-" : String(host)) assent "
            + "\(ProcessInfo.processInfo.processIdentifier) audit-checkpoint - "
        return Data(header.utf8) + line
    }

    private static func sendToSyslog(_ lines: [Data], socket path: String) throws {
        #if canImport(Glibc)
            let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
            let descriptor = socket(AF_UNIX, SOCK_DGRAM, 0)
        #endif
        guard descriptor >= 0 else {
            throw AssentServerError.configuration("No socket for the syslog witness (errno \(errno)).")
        }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw AssentServerError.configuration("The syslog socket path \(path) is too long.")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        for line in lines {
            let message = syslogMessage(line)
            let sent = message.withUnsafeBytes { body in
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(
                            descriptor, body.baseAddress, body.count, 0, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                    }
                }
            }
            guard sent == message.count else {
                throw AssentServerError.configuration(
                    "The syslog witness \(path) could not be written (errno \(errno)).")
            }
        }
    }

    /// The newest checkpoint in a witness's text that `key` signed, or `nil` when there is none. Each line is a
    /// checkpoint line, or ends in one (a syslog line with its header, as a syslog daemon stores it).
    public static func latest(in text: String, signedBy key: ECPublicKey) -> AuditChain.Checkpoint? {
        let decoder = JSONDecoder()
        var latest: AuditChain.Checkpoint?
        for line in text.split(separator: "\n") {
            guard let start = line.range(of: "{\"")?.lowerBound,
                case .checkpoint(let checkpoint)? = try? decoder.decode(
                    AuditChain.Line.self, from: Data(line[start...].utf8)),
                checkpoint.isSigned(by: key), checkpoint.seq > (latest?.seq ?? 0)
            else { continue }
            latest = checkpoint
        }
        return latest
    }
}
