import AssentTesting
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdHTTP2
import NIOCore
import NIOHTTP2
import NIOSSL
import SwiftASN1
import Synchronization
import X509

/// A certificate authority and a server certificate for 127.0.0.1, made for one test run.
struct TestCertificates: Sendable {
    let caPEM: String
    let serverCertificatePEM: String
    let serverKeyPEM: String

    static func make() throws -> TestCertificates {
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName { CommonName("Assent test CA") }
        let now = Date()
        let ca = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(caKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 86_400, issuer: caName, subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: .init(caKey))
        let serverKey = P256.Signing.PrivateKey()
        let server = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(serverKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 86_400, issuer: caName,
            subject: try DistinguishedName { CommonName("127.0.0.1") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([
                    .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])), .dnsName("localhost"),
                ])
            },
            issuerPrivateKey: .init(caKey))
        return TestCertificates(
            caPEM: try ca.serializeAsPEM().pemString, serverCertificatePEM: try server.serializeAsPEM().pemString,
            serverKeyPEM: serverKey.pemRepresentation)
    }
}

/// Stands in for APNs, Google's OAuth and FCM, and Huawei's OAuth and Push Kit on one loopback port, over TLS
/// with HTTP/2 negotiated by ALPN. Records every request (with its HTTP/2 stream id and connection) and answers
/// with scripted replies, or with each service's success answer.
final class PushServiceMock: Sendable {
    enum Service: String, Sendable {
        case apns, googleToken, fcm, huaweiToken, hms
    }

    struct Received: Sendable {
        var service: Service
        var path: String
        /// Header names lower-cased.
        var headers: [String: String]
        var body: Data
        /// Set only for a request that arrived on an HTTP/2 stream.
        var http2StreamId: Int?
        var connection: ObjectIdentifier?

        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: body) as? [String: Any]) ?? [:]
        }

        /// The fields of a form-encoded body.
        var form: [String: String] {
            var fields: [String: String] = [:]
            for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2 { fields[parts[0]] = parts[1].removingPercentEncoding }
            }
            return fields
        }
    }

    struct Answer: Sendable {
        var status: Int
        var body: String
        var headers: [String: String] = [:]
    }

    let certificates: TestCertificates
    private let received = Mutex<[Received]>([])
    private let scripted = Mutex<[Service: [Answer]]>([:])
    private let tokensIssued = Atomic<Int>(0)

    init() throws { certificates = try TestCertificates.make() }

    /// The next answers of `service`, in order; afterwards it succeeds again.
    func script(_ service: Service, _ answers: Answer...) {
        scripted.withLock { $0[service, default: []].append(contentsOf: answers) }
    }

    /// The requests `service` received so far.
    func requests(_ service: Service) -> [Received] {
        received.withLock { $0.filter { $0.service == service } }
    }

    /// Waits until `service` received `count` requests (at most 20 s).
    func wait(_ service: Service, count: Int) async throws -> [Received] {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let current = requests(service)
            if current.count >= count { return current }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("\(service) received \(requests(service).count) of \(count) requests")
    }

    private func answer(_ request: Received) -> Answer {
        if let scriptedAnswer = scripted.withLock({ answers -> Answer? in
            guard var queue = answers[request.service], !queue.isEmpty else { return nil }
            let next = queue.removeFirst()
            answers[request.service] = queue
            return next
        }) {
            return scriptedAnswer
        }
        switch request.service {
        case .apns:
            return Answer(status: 200, body: "", headers: ["apns-id": UUID().uuidString.lowercased()])
        case .googleToken, .huaweiToken:
            let number = tokensIssued.add(1, ordering: .relaxed).newValue
            return Answer(
                status: 200, body: #"{"access_token":"access-\#(number)","expires_in":3599,"token_type":"Bearer"}"#)
        case .fcm:
            return Answer(status: 200, body: #"{"name":"projects/assent-test/messages/\#(UUID().uuidString)"}"#)
        case .hms:
            return Answer(status: 200, body: #"{"code":"80000000","msg":"Success","requestId":"1"}"#)
        }
    }

    struct Context: RequestContext {
        var coreContext: CoreRequestContextStorage
        let channel: any Channel
        init(source: ApplicationRequestContextSource) {
            coreContext = .init(source: source)
            channel = source.channel
        }
    }

    /// Runs the mock for the duration of `body`, passing its base URL (`https://127.0.0.1:PORT`).
    func run<T: Sendable>(_ body: @Sendable (URL) async throws -> T) async throws -> T {
        let router = Router(context: Context.self)
        router.post("**") { request, context -> Response in
            let path = request.uri.path
            let service: Service =
                if path.hasPrefix("/3/device/") { .apns } else if path == "/token" {
                    .googleToken
                } else if path.hasPrefix("/v1/projects/") {
                    .fcm
                } else if path == "/oauth2/v3/token" { .huaweiToken } else { .hms }
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName.lowercased()] = field.value }
            if let authority = request.head.authority { headers[":authority"] = authority }
            let streamId = try? await context.channel.getOption(HTTP2StreamChannelOptions.streamID).get()
            let received = Received(
                service: service, path: path, headers: headers,
                body: Data(try await request.body.collect(upTo: 1 << 20).readableBytesView),
                http2StreamId: streamId.map { Int($0) },
                connection: context.channel.parent.map { ObjectIdentifier($0) })
            self.received.withLock { $0.append(received) }
            let answer = self.answer(received)
            var responseHeaders = HTTPFields()
            for (name, value) in answer.headers { responseHeaders[HTTPField.Name(name)!] = value }
            if !answer.body.isEmpty { responseHeaders[.contentType] = "application/json" }
            return Response(
                status: .init(code: answer.status), headers: responseHeaders,
                body: .init(byteBuffer: ByteBuffer(string: answer.body)))
        }
        return try await certificates.serve(router, body)
    }
}

extension TestCertificates {
    /// Runs `router` over TLS with this server certificate (HTTP/2 by ALPN, else HTTP/1.1) on a free loopback port
    /// for the duration of `body`, which gets the base URL (`https://127.0.0.1:PORT`).
    func serve<Context: RequestContext, T: Sendable>(
        _ router: Router<Context>, _ body: @Sendable (URL) async throws -> T
    ) async throws -> T where Context.Source == ApplicationRequestContextSource {
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(serverCertificatePEM.utf8)).map {
                .certificate($0)
            },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(serverKeyPEM.utf8), format: .pem)))
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, server: try .http2Upgrade(tlsConfiguration: tls),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) })
        return try await withRunningServer(app, ports: ports) { port in
            try await body(URL(string: "https://127.0.0.1:\(port)")!)
        }
    }
}
