import ArgumentParser
import AssentCrypto
import AssentModel
import AssentSDK
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

extension TokenCommand {
    /// `assent token push-listen`: a tiny Web Push receiver on this machine. It registers its own endpoint for the
    /// token, checks each request's VAPID token against the server's key, decrypts the message with the token's
    /// subscription keys and prints it.
    struct PushListen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "push-listen",
            abstract: "Receive this token's push messages by Web Push on this machine, and print them.",
            discussion: """
                Listens on a loopback address, registers that address as the token's Web Push endpoint (new \
                subscription keys, replacing any earlier push registration), and prints each message the server \
                sends: checked (VAPID, RFC 8292) and decrypted (RFC 8291) here. The server must send Web Push \
                (assent serve --vapid-subject). Stops on Ctrl-C, or after --count messages.
                Example: assent token push-listen --count 1
                """)
        @OptionGroup var profile: ProfileOptions
        @Option(
            help: """
                The endpoint to listen at and register: http://127.0.0.1:PORT/PATH (or localhost, [::1]). \
                Default: a free port and a random path.
                """)
        var endpoint: String?
        @Option(help: "Stop after this many messages.") var count: Int?

        /// One printed message.
        struct Printed: Encodable {
            var receivedAt: Date
            var type: String
            var operationId: String
            var operationName: String
            var result: String?
            var title: String?
            var body: String?
        }

        func run() async throws {
            try await TokenFailure.reporting {
                let (host, requestedPort, path) = try Self.listenAddress(endpoint)
                let client = try profile.client()
                let push = PushService(client: client)
                let serverKey = try ECPublicKey(x963: try Base64URL.decode(try await push.webPushServerKey()))
                let received = AsyncStream<Void>.makeStream()
                let ports = AsyncStream<Int>.makeStream()
                let router = Router()
                router.post(RouterPath(path)) { request, _ -> Response in
                    let port = request.head.authority.flatMap { $0.split(separator: ":").last.flatMap { Int($0) } }
                    let audience = "http://\(host.contains(":") ? "[\(host)]" : host)" + (port.map { ":\($0)" } ?? "")
                    do {
                        _ = try VAPID.verify(
                            authorization: request.headers[.authorization] ?? "", audience: audience,
                            expectedKey: serverKey)
                    } catch {
                        profile.note("refused a push: \(error)")
                        return Response(status: .unauthorized)
                    }
                    guard request.headers[.contentEncoding]?.lowercased() == "aes128gcm" else {
                        profile.note("refused a push: its Content-Encoding is not aes128gcm")
                        return Response(status: .unsupportedMediaType)
                    }
                    let body = Data(try await request.body.collect(upTo: 8192).readableBytesView)
                    do {
                        guard let message = try await push.message(fromWebPush: body) else {
                            profile.note("a push that is no mobile-token message arrived")
                            return Response(status: .created)
                        }
                        try print(message)
                    } catch {
                        profile.note("a push did not decrypt: \(error)")
                        return Response(status: .badRequest)
                    }
                    received.continuation.yield()
                    return Response(status: .created)
                }
                // The receiver's own notes go to standard error; the HTTP server's are of no use here.
                var quiet = Logger(label: "assent.push-listen")
                quiet.logLevel = .critical
                let app = Application(
                    router: router, configuration: .init(address: .hostname(host, port: requestedPort)),
                    onServerRunning: { ports.continuation.yield($0.localAddress?.port ?? requestedPort) },
                    logger: quiet)
                // Stopped gracefully once enough arrived, so the answer to the last push still goes out.
                let services = ServiceGroup(
                    configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: quiet))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        // Whatever ends the server ends the waiting for it.
                        defer {
                            ports.continuation.finish()
                            received.continuation.finish()
                        }
                        try await services.run()
                    }
                    group.addTask {
                        var iterator = ports.stream.makeAsyncIterator()
                        guard let port = await iterator.next() else { return }
                        let bracketed = host.contains(":") ? "[\(host)]" : host
                        let url = URL(string: "http://\(bracketed):\(port)\(path)")!
                        try await push.registerForPush(webPushEndpoint: url)
                        profile.note("Listening for Web Push at \(url.absoluteString) (registered for this token).")
                        var messages = 0
                        for await _ in received.stream {
                            messages += 1
                            if let count, messages >= count { break }
                        }
                        // Gracefully, so the answer to the last push goes out; a connection the server keeps open
                        // may hold that up, so not for more than two seconds.
                        await services.triggerGracefulShutdown()
                        try? await Task.sleep(for: .seconds(2))
                    }
                    // The first to end ends the other; a failure (the registration refused) is reported.
                    do {
                        try await group.next()
                        group.cancelAll()
                    } catch {
                        group.cancelAll()
                        throw error
                    }
                }
            }
        }

        /// Prints one message: a line, or a JSON object per line with --json. Unbuffered, for a reader of a pipe.
        func print(_ message: PushMessage) throws {
            var printed = Printed(
                receivedAt: Date(), type: message.data["messageType"] ?? "", operationId: message.operationId,
                operationName: message.data["operationName"] ?? "")
            let text: String
            switch message {
            case .operationCreated(let id, let name, _, let title, let body):
                printed.title = title
                printed.body = body
                text =
                    "new operation \(id) (\(name))" + (title.map { ": \($0)" } ?? "") + (body.map { " — \($0)" } ?? "")
            case .operationFinished(let id, let name, let result, _):
                printed.result = result.rawValue
                text = "operation \(id) (\(name)) finished: \(result.rawValue)"
            }
            let line =
                profile.json
                ? String(decoding: try MobileTokenJSON.encoder().encode(printed), as: UTF8.self) : text
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }

        /// The host, port and path to listen at: `--endpoint`'s, which must be plain http on a loopback address,
        /// or 127.0.0.1, any free port and a random path.
        static func listenAddress(_ endpoint: String?) throws -> (host: String, port: Int, path: String) {
            guard let endpoint else {
                return ("127.0.0.1", 0, "/push/" + Base64URL.encode(Bytes.random(count: 12)))
            }
            guard let components = URLComponents(string: endpoint), components.scheme == "http",
                let host = components.host?.trimmingCharacters(in: CharacterSet(charactersIn: "[]")),
                ["127.0.0.1", "localhost", "::1"].contains(host.lowercased())
            else {
                throw ValidationError("--endpoint is http://127.0.0.1:PORT/PATH (a loopback address, plain http).")
            }
            let path = components.path.isEmpty ? "/" : components.path
            return (host, components.port ?? 80, path)
        }
    }
}
