import AssentCrypto
import AssentTesting
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// A Web Push service (RFC 8030) written for the tests, over TLS on loopback: it hands out subscriptions (a P-256
/// key pair and an authentication secret, as a browser makes them), and for every push it receives checks the VAPID
/// token against the key it was told, decrypts the body with the subscription's private key, and answers 201 — or
/// what a test scripted for that subscription.
final class WebPushServiceMock: Sendable {
    struct Subscription: Sendable {
        let id: String
        let privateKey: ECPrivateKey
        let authSecret: Data
        var keys: WebPushEncryption.Subscription {
            get throws { try WebPushEncryption.Subscription(publicKey: privateKey.publicKey, authSecret: authSecret) }
        }
    }

    struct Received: Sendable {
        var subscriptionId: String
        var path: String
        /// Header names lower-cased.
        var headers: [String: String]
        var body: Data
        /// The decrypted message, or why it did not decrypt.
        var plaintext: Result<Data, any Error>
        /// Why the VAPID token was refused; `nil` when it verified for this service's origin and the expected key.
        var vapidProblem: String?

        /// The decrypted message as a JSON object.
        var json: [String: Any] {
            guard case .success(let data) = plaintext else { return [:] }
            return (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
        }
        /// The mobile-token keys of the message (`data`).
        var data: [String: String] { json["data"] as? [String: String] ?? [:] }
    }

    struct Answer: Sendable {
        var status: Int
        var body: String = ""
        var headers: [String: String] = [:]
    }

    let certificates: TestCertificates
    /// The key VAPID tokens must be signed with (the server's), once known.
    let expectedKey = Mutex<ECPublicKey?>(nil)
    private let subscriptions = Mutex<[String: Subscription]>([:])
    private let received = Mutex<[Received]>([])
    private let scripted = Mutex<[String: [Answer]]>([:])
    private let origin = Mutex<String?>(nil)

    init(certificates: TestCertificates? = nil) throws { self.certificates = try certificates ?? .make() }

    /// A new subscription and its endpoint on this service.
    func subscribe(base: URL) -> (subscription: Subscription, endpoint: URL) {
        let subscription = Subscription(
            id: Base64URL.encode(Bytes.random(count: 9)), privateKey: ECPrivateKey(),
            authSecret: Bytes.random(count: 16))
        subscriptions.withLock { $0[subscription.id] = subscription }
        return (subscription, base.appendingPathComponent("push/\(subscription.id)"))
    }

    /// The next answers for pushes to `subscription`, in order; afterwards 201 again.
    func script(_ subscription: Subscription, _ answers: Answer...) {
        scripted.withLock { $0[subscription.id, default: []].append(contentsOf: answers) }
    }

    /// The pushes `subscription` received so far.
    func requests(_ subscription: Subscription) -> [Received] {
        received.withLock { $0.filter { $0.subscriptionId == subscription.id } }
    }

    /// Every request received, to any path.
    var all: [Received] { received.withLock { $0 } }

    /// Waits until `subscription` received `count` pushes (at most 20 s).
    func wait(_ subscription: Subscription, count: Int) async throws -> [Received] {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let current = requests(subscription)
            if current.count >= count { return current }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("the subscription received \(requests(subscription).count) of \(count) pushes")
    }

    private func receive(path: String, headers: [String: String], body: Data) -> Answer {
        let id = path.split(separator: "/").last.map(String.init) ?? ""
        let subscription = subscriptions.withLock { $0[id] }
        var vapidProblem: String?
        do {
            _ = try VAPID.verify(
                authorization: headers["authorization"] ?? "", audience: origin.withLock { $0 } ?? "",
                expectedKey: expectedKey.withLock { $0 })
        } catch {
            vapidProblem = "\(error)"
        }
        let plaintext: Result<Data, any Error> = Result {
            guard let subscription else { throw TestFailure("no subscription \(id)") }
            return try WebPushEncryption.decrypt(
                body, privateKey: subscription.privateKey, authSecret: subscription.authSecret)
        }
        received.withLock {
            $0.append(
                Received(
                    subscriptionId: id, path: path, headers: headers, body: body, plaintext: plaintext,
                    vapidProblem: vapidProblem))
        }
        if let next = scripted.withLock({ answers -> Answer? in
            guard var queue = answers[id], !queue.isEmpty else { return nil }
            let next = queue.removeFirst()
            answers[id] = queue
            return next
        }) {
            return next
        }
        guard subscription != nil else { return Answer(status: 404) }
        return Answer(status: 201, headers: ["location": "/message/\(UUID().uuidString)"])
    }

    /// Runs the service for the duration of `body`, passing its base URL (`https://127.0.0.1:PORT`).
    func run<T: Sendable>(_ body: @Sendable (URL) async throws -> T) async throws -> T {
        let router = Router()
        router.post("**") { request, _ -> Response in
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName.lowercased()] = field.value }
            let content = Data(try await request.body.collect(upTo: 1 << 16).readableBytesView)
            let answer = self.receive(path: request.uri.path, headers: headers, body: content)
            var responseHeaders = HTTPFields()
            for (name, value) in answer.headers { responseHeaders[HTTPField.Name(name)!] = value }
            return Response(
                status: .init(code: answer.status), headers: responseHeaders,
                body: .init(byteBuffer: ByteBuffer(string: answer.body)))
        }
        return try await certificates.serve(router) { base in
            origin.withLock { $0 = base.absoluteString }
            return try await body(base)
        }
    }
}
