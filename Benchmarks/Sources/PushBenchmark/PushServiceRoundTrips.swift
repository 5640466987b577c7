import AssentCrypto
import AssentModel
import AssentTesting
import Foundation
import Hummingbird
import HummingbirdHTTP2
import NIOCore
import NIOSSL

/// `--mode webpush` and `--mode apns`: the operator creates an operation → the server's outbox sends it through a
/// push service → the receiver this program runs has it (Web Push: checked and decrypted). Start the server with
/// `--vapid-subject … --egress-allow 127.0.0.0/8` (Web Push: the receiver is plain HTTP on loopback), or with `--apns-url
/// https://127.0.0.1:<--push-port> --push-ca-file <ca>` and an APNs key (the receiver speaks HTTP/2 over TLS with
/// `--tls-certificate` and `--tls-key`).
extension PushBenchmark {
    func pushRoundTrips(client: AssentTesting.HTTPClient, auth: [String: String], configuration: SDKConfiguration)
        async throws
    {
        let user = "push-service-bench-\(UUID().uuidString.prefix(8))"
        var (device, token) = try await activate(client, auth: auth, configuration: configuration, user: user)
        let arrivals = Arrivals()
        let router = Router()
        let receiverKey = ECPrivateKey()
        let secret = Bytes.random(count: 16)
        let serverKey: ECPublicKey?
        let service: String
        let registration: PushRegistrationRequest
        if mode == "webpush" {
            service = "Web Push"
            let keyAnswer = try await client.send("GET", "/api/push/webpush/key")
            guard keyAnswer.status == 200 else { throw TestFailure("webpush key: \(keyAnswer.text)") }
            let key = try JSONDecoder().decode(ResponseEnvelope<WebPushKeyResponse>.self, from: keyAnswer.body)
            serverKey = try ECPublicKey(x963: try Base64URL.decode(key.responseObject.applicationServerKey))
            let subscription = try WebPushEncryption.Subscription(publicKey: receiverKey.publicKey, authSecret: secret)
            registration = PushRegistrationRequest(
                platform: "webpush", token: "http://127.0.0.1:\(pushPort)/push/bench", p256dh: subscription.p256dh,
                auth: subscription.auth)
        } else {
            service = "APNs stand-in"
            serverKey = nil
            registration = PushRegistrationRequest(
                platform: "apns", token: String(repeating: "be", count: 32), environment: "production")
        }
        let audience = "http://127.0.0.1:\(pushPort)"
        router.post("**") { request, _ -> Response in
            let body = Data(try await request.body.collect(upTo: 1 << 16).readableBytesView)
            let payload: Data
            if let serverKey {
                _ = try VAPID.verify(
                    authorization: request.headers[.authorization] ?? "", audience: audience, expectedKey: serverKey)
                payload = try WebPushEncryption.decrypt(body, privateKey: receiverKey, authSecret: secret)
            } else {
                payload = body
            }
            guard let object = try JSONSerialization.jsonObject(with: payload) as? [String: Any] else {
                return Response(status: .badRequest)
            }
            let data = object["data"] as? [String: Any] ?? object
            if data["messageType"] as? String == "mtoken.operationInit", let id = data["operationId"] as? String {
                arrivals.arrive(id)
            }
            return Response(status: serverKey == nil ? .ok : .created)
        }
        let receiver: any ApplicationProtocol
        if mode == "webpush" {
            receiver = Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: pushPort)))
        } else {
            guard let tlsCertificate, let tlsKey else {
                throw TestFailure("--mode apns needs --tls-certificate and --tls-key")
            }
            let tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(tlsCertificate).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: tlsKey, format: .pem)))
            receiver = Application(
                router: router, server: try .http2Upgrade(tlsConfiguration: tls),
                configuration: .init(address: .hostname("127.0.0.1", port: pushPort)))
        }
        let receiverTask = Task { try await receiver.runService(gracefulShutdownSignals: []) }
        defer { receiverTask.cancel() }
        try await Task.sleep(for: .milliseconds(500))

        let registered = try await device.tokenPost(
            "/api/push/device/register/token", token: token,
            body: try JSONEncoder().encode(RequestEnvelope(registration)))
        guard registered.status == 200 else { throw TestFailure("register: \(registered.text)") }
        _ = device

        var latencies: [Duration] = []
        for round in 0..<(count + 50) {
            let start = ContinuousClock.now
            let operation = try await createOperation(client, auth: auth, user: user)
            try await arrivals.wait(operation.id)
            if round >= 50 { latencies.append(ContinuousClock.now - start) }
        }
        print(
            """
            [\(label)] \(service) round trip (create → outbox → push service → received\
            \(mode == "webpush" ? ", VAPID checked and decrypted" : "")): \(latencies.count) round trips, \
            p50 \(Self.percentile(latencies, 0.5)), p99 \(Self.percentile(latencies, 0.99))
            """)
    }
}
