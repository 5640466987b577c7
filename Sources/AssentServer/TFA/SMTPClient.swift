import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// How to reach the mail relay that sends verification codes.
public struct SMTPSettings: Sendable {
    /// How the connection is protected.
    public enum Security: String, Sendable, CaseIterable {
        /// Plain connection upgraded with STARTTLS before anything else is sent (port 587). The default.
        case startTLS = "starttls"
        /// TLS from the first byte (port 465).
        case tls
        /// No TLS: only for a relay on this machine; credentials are never sent this way.
        case none
    }

    public var host: String
    public var port: Int
    public var security: Security
    /// The envelope and `From:` address.
    public var senderAddress: String
    /// The `From:` display name.
    public var senderName: String
    public var username: String?
    public var password: String?
    /// Extra trusted certificate authorities in PEM (a private relay's CA), besides the system's.
    public var trustRootsPEM: String?
    /// The name this server gives in `EHLO`.
    public var heloName = "assent.localhost"
    /// How long one message may take, connection to `QUIT`.
    public var timeout: Duration = .seconds(30)

    public init(
        host: String, port: Int, security: Security = .startTLS, senderAddress: String, senderName: String = "Assent",
        username: String? = nil, password: String? = nil, trustRootsPEM: String? = nil
    ) {
        self.host = host
        self.port = port
        self.security = security
        self.senderAddress = senderAddress
        self.senderName = senderName
        self.username = username
        self.password = password
        self.trustRootsPEM = trustRootsPEM
    }
}

/// A failed mail delivery: the relay's reply (`permanent` for 5xx) or a local reason.
public struct SMTPError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// A 5xx reply or a configuration fault: another attempt cannot succeed.
    public var permanent: Bool
    public var description: String { message }
}

/// A small SMTP client (RFC 5321) on SwiftNIO: EHLO, STARTTLS (RFC 3207) or implicit TLS, AUTH PLAIN or LOGIN
/// (RFC 4954), one message per connection, dot-stuffed DATA. Certificates are verified against the system's roots
/// and the configured extra ones, with the relay's host name.
public struct SMTPClient: Sendable {
    public let settings: SMTPSettings

    public init(settings: SMTPSettings) { self.settings = settings }

    /// Sends a plain-text UTF-8 message to `recipient`.
    public func send(to recipient: String, subject: String, body: String, date: Date = Date()) async throws {
        guard Self.isAddress(recipient), Self.isAddress(settings.senderAddress) else {
            throw SMTPError(message: "The sender or recipient is not a valid mail address.", permanent: true)
        }
        let message = Self.message(
            from: settings.senderAddress, name: settings.senderName, to: recipient, subject: subject, body: body,
            date: date)
        try await withTimeout { try await session(sending: (recipient, message)) }
    }

    /// Connects, secures the connection as configured, signs in with the relay's credentials and says QUIT: the
    /// relay is reachable, its certificate verifies and the credentials are accepted, and no message is sent
    /// (`assent doctor`).
    public func check() async throws {
        try await withTimeout { try await session(sending: nil) }
    }

    private func withTimeout(_ body: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: settings.timeout)
                throw SMTPError(message: "The mail relay did not finish within \(settings.timeout).", permanent: false)
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// One connection: a message to its recipient, or none (``check()``).
    private func session(sending mail: (recipient: String, message: String)?) async throws {
        let tls = try tlsContext()
        let host = settings.host
        let implicitTLS = settings.security == .tls
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .connect(host: host, port: settings.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if implicitTLS {
                        try channel.pipeline.syncOperations.addHandler(
                            try NIOSSLClientHandler(context: tls, serverHostname: Self.sniName(host)))
                    }
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(ReplyLineDecoder()))
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        try await channel.executeThenClose { inbound, outbound in
            var lines = inbound.makeAsyncIterator()
            func reply() async throws -> (code: Int, lines: [String]) {
                var texts: [String] = []
                while true {
                    guard var buffer = try await lines.next() else {
                        throw SMTPError(message: "The mail relay closed the connection.", permanent: false)
                    }
                    let line = buffer.readString(length: buffer.readableBytes) ?? ""
                    let trimmed = line.hasSuffix("\r") ? String(line.dropLast()) : line
                    guard trimmed.count >= 3, let code = Int(trimmed.prefix(3)) else {
                        throw SMTPError(message: "The mail relay sent an unreadable reply.", permanent: false)
                    }
                    texts.append(String(trimmed.dropFirst(4)))
                    if trimmed.count == 3 || trimmed[trimmed.index(trimmed.startIndex, offsetBy: 3)] == " " {
                        return (code, texts)
                    }
                    guard texts.count < 100 else {
                        throw SMTPError(message: "The mail relay's reply is too long.", permanent: false)
                    }
                }
            }
            func command(_ text: String, expect: ClosedRange<Int>, shown: String? = nil) async throws -> [String] {
                try await outbound.write(ByteBuffer(string: text + "\r\n"))
                let (code, texts) = try await reply()
                guard expect.contains(code) else {
                    let said = shown ?? String(text.prefix(4))
                    throw SMTPError(
                        message: "The mail relay answered \(said) with \(code) \(texts.last ?? "")",
                        permanent: (500..<600).contains(code))
                }
                return texts
            }
            let greeting = try await reply()
            guard greeting.code == 220 else {
                throw SMTPError(message: "The mail relay greeted with \(greeting.code).", permanent: false)
            }
            var capabilities = try await command("EHLO \(settings.heloName)", expect: 250...250)
            var secured = implicitTLS
            if settings.security == .startTLS {
                guard capabilities.contains(where: { $0.uppercased().hasPrefix("STARTTLS") }) else {
                    throw SMTPError(message: "The mail relay does not offer STARTTLS.", permanent: true)
                }
                _ = try await command("STARTTLS", expect: 220...220)
                let raw = channel.channel
                try await raw.eventLoop.submit {
                    try raw.pipeline.syncOperations.addHandler(
                        try NIOSSLClientHandler(context: tls, serverHostname: Self.sniName(host)), position: .first)
                }.get()
                secured = true
                capabilities = try await command("EHLO \(settings.heloName)", expect: 250...250)
            }
            if let username = settings.username, let password = settings.password {
                guard secured else {
                    throw SMTPError(
                        message: "Credentials are only sent over TLS (security starttls or tls).", permanent: true)
                }
                let mechanisms =
                    capabilities.first { $0.uppercased().hasPrefix("AUTH") }?.uppercased()
                    .split(separator: " ").dropFirst().map(String.init) ?? []
                if mechanisms.contains("PLAIN") {
                    let token = Data("\u{0}\(username)\u{0}\(password)".utf8).base64EncodedString()
                    _ = try await command("AUTH PLAIN \(token)", expect: 235...235, shown: "AUTH PLAIN")
                } else if mechanisms.contains("LOGIN") {
                    _ = try await command("AUTH LOGIN", expect: 334...334)
                    _ = try await command(
                        Data(username.utf8).base64EncodedString(), expect: 334...334, shown: "the user name")
                    _ = try await command(
                        Data(password.utf8).base64EncodedString(), expect: 235...235, shown: "the password")
                } else {
                    throw SMTPError(
                        message: "The mail relay offers neither AUTH PLAIN nor AUTH LOGIN.", permanent: true)
                }
            }
            if let mail {
                _ = try await command("MAIL FROM:<\(settings.senderAddress)>", expect: 250...250)
                _ = try await command("RCPT TO:<\(mail.recipient)>", expect: 250...251)
                _ = try await command("DATA", expect: 354...354)
                _ = try await command(mail.message + ".", expect: 250...250, shown: "the message")
            }
            _ = try? await command("QUIT", expect: 221...221)
        }
    }

    private func tlsContext() throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let pem = settings.trustRootsPEM {
            do {
                configuration.additionalTrustRoots = [
                    .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
                ]
            } catch {
                throw SMTPError(message: "The SMTP trust roots are not PEM certificates.", permanent: true)
            }
        }
        return try NIOSSLContext(configuration: configuration)
    }

    /// SNI carries names only, never IP literals.
    private static func sniName(_ host: String) -> String? {
        host.allSatisfy { $0.isNumber || $0 == "." || $0 == ":" } ? nil : host
    }

    /// Whether `text` is a plain address (`local@domain`, printable ASCII without spaces, brackets or quotes), at
    /// most 254 bytes. Non-ASCII addresses would need SMTPUTF8, which the client does not speak.
    public static func isAddress(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        return text.utf8.count <= 254 && parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".")
            && !parts[1].hasPrefix(".") && !parts[1].hasSuffix(".")
            && text.unicodeScalars.allSatisfy {
                $0.value > 32 && $0.value < 127 && !"<>()[]\\,;:\"".unicodeScalars.contains($0)
            }
    }

    /// The message with its headers, CRLF line ends and dot-stuffing, ending in CRLF (DATA's `.` line follows).
    static func message(from: String, name: String, to: String, subject: String, body: String, date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        let domain = from.split(separator: "@").last.map(String.init) ?? "assent.localhost"
        let headers = [
            "From: \(encodedWord(name)) <\(from)>",
            "To: <\(to)>",
            "Subject: \(encodedWord(subject))",
            "Date: \(formatter.string(from: date))",
            "Message-ID: <\(UUID().uuidString.lowercased())@\(domain)>",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: base64",
        ]
        // Base64 keeps every line short and 7-bit whatever the text; no line of it starts with a dot.
        let encoded = Data(body.utf8).base64EncodedString(options: [
            .lineLength76Characters, .endLineWithCarriageReturn, .endLineWithLineFeed,
        ])
        return headers.joined(separator: "\r\n") + "\r\n\r\n" + encoded + "\r\n"
    }

    /// A header text: as is when it is printable ASCII, else an RFC 2047 encoded word.
    static func encodedWord(_ text: String) -> String {
        let clean = text.filter { $0 != "\r" && $0 != "\n" }
        if clean.unicodeScalars.allSatisfy({ (32..<127).contains($0.value) }) { return clean }
        return "=?UTF-8?B?\(Data(clean.utf8).base64EncodedString())?="
    }
}

/// Splits the relay's byte stream into lines (without the line end); a line over 4 KiB is an error, so a hostile
/// relay cannot make this server buffer without end.
struct ReplyLineDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > 4096 {
                throw SMTPError(message: "The mail relay sent an overlong line.", permanent: false)
            }
            return .needMoreData
        }
        let length = newline - buffer.readerIndex
        let line = buffer.readSlice(length: length)!
        buffer.moveReaderIndex(forwardBy: 1)
        context.fireChannelRead(wrapInboundOut(line))
        return .continue
    }
}
