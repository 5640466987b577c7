import AssentCrypto
import AssentModel
import AssentSDK
import AssentServer
import AssentTesting
import Foundation
import JWTKit
import SQLKit
import Testing

@testable import AssentServer
@testable import AssentServerTesting

@Suite("Web Push: registration, encrypted delivery with VAPID, status rules and the delivery trace")
struct WebPushDeliveryTests {
    /// Push settings with Web Push alone, trusting the test service's CA.
    static func settings(_ mock: WebPushServiceMock) throws -> PushSettings {
        var settings = PushSettings()
        settings.webPush = try WebPushSettings(subject: "mailto:push@bank.example")
        settings.additionalTrustRootsPEM = mock.certificates.caPEM
        return settings
    }

    /// Runs `body` with a Web Push service written for the tests and a live server on `backend` that sends to it.
    static func withWebPush(
        _ backend: Backend,
        _ body: @Sendable (WebPushServiceMock, URL, TestServer, HTTPClient) async throws -> Void
    ) async throws {
        let mock = try WebPushServiceMock()
        try await mock.run { base in
            let server = try await TestServer.make(backend, push: try Self.settings(mock))
            defer { Task { await server.shutdown() } }
            try await server.live { client in try await body(mock, base, server, client) }
        }
    }

    /// Registers `device` for Web Push at `endpoint` with `keys`; returns the HTTP answer.
    static func register(
        _ device: inout TestDevice, endpoint: String, p256dh: String?, auth: String?, platform: String = "webpush"
    ) async throws -> HTTPClient.Response {
        let token = try await device.createToken()
        let body = try JSONEncoder().encode(
            RequestEnvelope(PushRegistrationRequest(platform: platform, token: endpoint, p256dh: p256dh, auth: auth)))
        return try await device.tokenPost("/api/push/device/register/token", token: token, body: body)
    }

    static func register(
        _ device: inout TestDevice, _ subscription: WebPushServiceMock.Subscription, at endpoint: URL
    ) async throws {
        let keys = try subscription.keys
        let response = try await register(
            &device, endpoint: endpoint.absoluteString, p256dh: keys.p256dh, auth: keys.auth)
        guard response.status == 200 else { throw TestFailure("register: \(response.status) \(response.text)") }
    }

    /// The server's VAPID key, as a subscriber reads it.
    static func serverKey(_ client: HTTPClient) async throws -> ECPublicKey {
        let response = try await client.send("GET", "/api/push/webpush/key")
        guard response.status == 200 else { throw TestFailure("key: \(response.status) \(response.text)") }
        let key = try JSONDecoder().decode(ResponseEnvelope<WebPushKeyResponse>.self, from: response.body)
        return try ECPublicKey(x963: try Base64URL.decode(key.responseObject.applicationServerKey))
    }

    /// The delivery trace of an operation through the operator API.
    /// The operation's push trace once it has `count` attempts (a push service has its message a moment before the
    /// sender records the attempt), or as it is after 20 s.
    static func trace(_ server: TestServer, _ client: HTTPClient, operation id: String, count: Int = 0) async throws
        -> [PushDeliveryInfo]
    {
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            let deliveries = try await server.operatorCall(
                client, "GET", "/api/v1/operations/\(id)/push-deliveries", as: PushDeliveryList.self
            ).deliveries
            if deliveries.count >= count || ContinuousClock.now > deadline { return deliveries }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// The VAPID claims, verified by jwt-kit with the key the header's `k` names.
    struct VAPIDClaims: JWTPayload {
        var aud: AudienceClaim
        var exp: ExpirationClaim
        var sub: SubjectClaim

        func verify(using algorithm: some JWTAlgorithm) async throws { try exp.verifyNotExpired() }
    }

    static func verifiedWithJWTKit(_ authorization: String) async throws -> VAPIDClaims {
        let parts = authorization.dropFirst("vapid ".count).components(separatedBy: ", ")
        let token = try #require(parts.first { $0.hasPrefix("t=") }).dropFirst(2)
        let k = try Base64URL.decode(String(try #require(parts.first { $0.hasPrefix("k=") }).dropFirst(2)))
        let jwks = """
            {"keys":[{"kty":"EC","crv":"P-256","alg":"ES256","kid":"vapid","x":"\(Base64URL.encode(k.subdata(in: 1..<33)))",\
            "y":"\(Base64URL.encode(k.subdata(in: 33..<65)))"}]}
            """
        return try await JWTKeyCollection().add(jwksJSON: jwks).verify(String(token), as: VAPIDClaims.self)
    }

    @Test(
        "A new operation reaches the subscription encrypted, with VAPID, TTL, Urgency and Topic; its end too; the trace and /metrics record both",
        arguments: Backend.all)
    func delivery(backend: Backend) async throws {
        try await Self.withWebPush(backend) { mock, base, server, client in
            var device = try await server.activatedDevice(client)
            let key = try await Self.serverKey(client)
            #expect(try await Self.serverKey(client) == key)
            mock.expectedKey.withLock { $0 = key }
            let (subscription, endpoint) = mock.subscribe(base: base)
            try await Self.register(&device, subscription, at: endpoint)
            let stored = try #require(try await server.store.pushRegistration(activationId: device.activationId))
            #expect(stored.platform == .webpush && stored.token == endpoint.absoluteString)
            #expect(stored.webPush == (try subscription.keys))

            let created = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            let first = try #require(try await mock.wait(subscription, count: 1).first)
            #expect(first.vapidProblem == nil)
            let plaintext = try first.plaintext.get()
            #expect(first.data["operationId"] == created.id)
            #expect(first.data["messageType"] == "mtoken.operationInit")
            #expect(first.data["activationId"] == device.activationId)
            let operation = try #require(try await server.store.operation(id: created.id))
            let notification = first.json["notification"] as? [String: Any]
            #expect(notification?["title"] as? String == operation.content.form(acceptLanguage: nil).title)
            #expect(first.headers["content-encoding"] == "aes128gcm")
            #expect(first.headers["urgency"] == "high")
            let topic = try #require(first.headers["topic"])
            #expect(topic.count == 32 && topic.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
            let ttl = try #require(first.headers["ttl"].flatMap(Int.init))
            // The operation's time left when the push went: at most its whole life, at least what is left now.
            let left = (operation.expiresAt - Int64(server.clock.now.timeIntervalSince1970 * 1000)) / 1000
            #expect(Int64(ttl) <= (operation.expiresAt - operation.createdAt) / 1000 && Int64(ttl) + 1 >= left)
            // Padded to the length class: the body's length says only which 256 bytes the message's length falls in.
            let padded = first.body.count - 86 - 17
            #expect(padded % 256 == 0 && plaintext.count <= padded && plaintext.count > padded - 256)
            let claims = try await Self.verifiedWithJWTKit(try #require(first.headers["authorization"]))
            #expect(claims.aud.value == [base.absoluteString])
            #expect(claims.sub.value == "mailto:push@bank.example")
            #expect(claims.exp.value.timeIntervalSinceNow <= 86_400)

            // Approved: a "finished" message with normal urgency, collapsing on the same topic.
            #expect(try await device.authorizeOperation(id: created.id, data: created.data).status == 200)
            let finished = try #require(try await mock.wait(subscription, count: 2).last)
            #expect(finished.vapidProblem == nil)
            #expect(finished.data["messageType"] == "mtoken.operationFinished")
            #expect(finished.data["mtokenOperationResult"] == "authentication.success")
            #expect(finished.json["notification"] == nil)
            #expect(finished.headers["urgency"] == "normal" && finished.headers["topic"] == topic)

            let trace = try await Self.trace(server, client, operation: created.id, count: 2)
            #expect(trace.map(\.event) == ["operation.finished", "operation.created"])
            #expect(
                trace.allSatisfy { $0.service == "webpush" && $0.outcome == "delivered" && $0.httpStatus == 201 })
            #expect(trace.allSatisfy { $0.reason == nil && $0.activationId == device.activationId })
            let byActivation = try await server.operatorCall(
                client, "GET", "/api/v1/activations/\(device.activationId)/push-deliveries",
                as: PushDeliveryList.self)
            #expect(byActivation.deliveries == trace)
            let metrics = try await client.send("GET", "/metrics").text
            #expect(metrics.contains(#"assent_push_attempts_total{service="webpush",outcome="delivered"} 2"#))
            let missing = try await client.send(
                "GET", "/api/v1/operations/nope/push-deliveries",
                headers: ["Authorization": "Bearer \(server.apiKey)"])
            #expect(missing.status == 404)
        }
    }

    @Test("Each application signs with its own VAPID key; applications older than per-application keys keep theirs")
    func keysPerApplication() async throws {
        try await Self.withWebPush(.sqlite) { mock, base, server, client in
            let first = try await Self.serverKey(client)
            let business = try await server.createApplication(client)
            func key(_ name: String) async throws -> HTTPClient.Response {
                try await client.send("GET", "/api/push/webpush/key?application=\(name)")
            }
            func decoded(_ response: HTTPClient.Response) throws -> ECPublicKey {
                let key = try JSONDecoder().decode(ResponseEnvelope<WebPushKeyResponse>.self, from: response.body)
                return try ECPublicKey(x963: try Base64URL.decode(key.responseObject.applicationServerKey))
            }
            let second = try decoded(try await key(business.applicationKey))
            #expect(second != first)
            #expect(try decoded(try await key(business.applicationId)) == second)
            #expect(try decoded(try await key(server.application.applicationKey)) == first)
            #expect(try await key("nope").status == 404)

            // A device of the second application: its pushes carry that application's key, and the SDK asks for it.
            let code = try await server.operatorCall(
                client, "POST", "/api/v1/activations?application=\(business.applicationId)",
                body: try OperatorJSON.encoder().encode(CreateActivationRequest(userId: "alice", commitMode: "auto")),
                as: CreateActivationResponse.self)
            var device = TestDevice(
                client: client, configuration: try SDKConfiguration(parsing: business.sdkConfiguration))
            try await device.activate(code: code.activationCode)
            mock.expectedKey.withLock { $0 = second }
            let (subscription, endpoint) = mock.subscribe(base: base)
            try await Self.register(&device, subscription, at: endpoint)
            _ = try await server.operatorCall(
                client, "POST", "/api/v1/operations?application=\(business.applicationId)",
                body: try OperatorJSON.encoder().encode(try OperationFixtures.payment(userId: "alice")),
                as: OperationInfo.self)
            let pushed = try #require(try await mock.wait(subscription, count: 1).first)
            #expect(pushed.vapidProblem == nil, "\(String(describing: pushed.vapidProblem))")

            // A database from before keys per application: the server's one key stays with the applications that
            // existed then; an application made afterwards gets its own.
            let legacy = ECPrivateKey()
            let sealed = try server.store.secretBox.seal(legacy.scalar, context: "push.vapid_key")
            try await server.store.database.raw(
                "INSERT INTO push_vapid_keys (id, private_key, created_at) VALUES ('vapid', \(bind: sealed), 0)"
            ).run()
            try await server.store.database.raw("DELETE FROM push_vapid_key_owners").run()
            for statement in Migrations.vapidPerApplicationV37(.sqlite) {
                try await server.store.database.raw(SQLQueryString(statement)).run()
            }
            let later = try await server.createApplication(client, name: "Later")
            let store = server.store
            func stored(_ id: String) async throws -> ECPrivateKey {
                try await store.vapidKey(applicationId: id, creating: ECPrivateKey(), at: 0)
            }
            #expect(try await stored(server.application.id).scalar == legacy.scalar)
            #expect(try await stored(business.applicationId).scalar == legacy.scalar)
            let own = try await stored(later.applicationId)
            #expect(own.scalar != legacy.scalar && own.publicKey != first && own.publicKey != second)
        }
    }

    @Test(
        "Status rules: 404 and 410 remove the registration, 413 trims once then fails, 429 waits Retry-After, 500 retries, a redirect is not followed",
        arguments: Backend.all)
    func statusRules(backend: Backend) async throws {
        try await Self.withWebPush(backend) { mock, base, server, client in
            var device = try await server.activatedDevice(client)
            mock.expectedKey.withLock { $0 = nil }
            func newOperation() async throws -> String {
                try await server.createOperation(client, try OperationFixtures.payment(userId: "alice")).id
            }

            for gone in [404, 410] {
                let (subscription, endpoint) = mock.subscribe(base: base)
                try await Self.register(&device, subscription, at: endpoint)
                mock.script(subscription, .init(status: gone, body: #"{"title":"Subscription expired"}"#))
                let id = try await newOperation()
                let item = try await PushDeliveryTests.settledPush(server, id)
                #expect(item.state == "abandoned")
                #expect(try await server.store.pushRegistration(activationId: device.activationId) == nil)
                let trace = try #require(try await Self.trace(server, client, operation: id).first)
                #expect(trace.outcome == "unregistered" && trace.httpStatus == gone)
                #expect(trace.reason?.contains("Subscription expired") == true)
                #expect(trace.reason?.contains(endpoint.absoluteString) == false)
            }
            let audit = try await server.store.audit(activationId: device.activationId, userId: nil, limit: 50)
            #expect(audit.filter { $0.type == "push.unregistered" }.count == 2)

            let (subscription, endpoint) = mock.subscribe(base: base)
            try await Self.register(&device, subscription, at: endpoint)
            var seen = 0
            // 413 once: sent again without the notification text, and delivered.
            mock.script(subscription, .init(status: 413))
            let trimmed = try await newOperation()
            #expect(try await PushDeliveryTests.settledPush(server, trimmed).state == "delivered")
            let pair = try await mock.wait(subscription, count: seen + 2).suffix(2)
            seen += 2
            #expect(pair.first?.json["notification"] != nil && pair.last?.json["notification"] == nil)
            #expect(pair.last?.data["operationId"] == trimmed)
            #expect(try await Self.trace(server, client, operation: trimmed).first?.httpStatus == 201)

            // 413 twice: given up.
            mock.script(subscription, .init(status: 413), .init(status: 413))
            let tooLarge = try await newOperation()
            let tooLargeItem = try await PushDeliveryTests.settledPush(server, tooLarge)
            #expect(tooLargeItem.state == "abandoned" && tooLargeItem.lastError?.contains("413") == true)
            seen += 2
            #expect(try await Self.trace(server, client, operation: tooLarge).first?.outcome == "failed")

            // 429 with Retry-After: tried again no sooner than it says, then delivered.
            mock.script(subscription, .init(status: 429, headers: ["retry-after": "1"]))
            let limited = try await newOperation()
            let limitedItem = try await PushDeliveryTests.settledPush(server, limited)
            #expect(limitedItem.state == "delivered" && limitedItem.attempts == 2)
            let limitedTrace = try await Self.trace(server, client, operation: limited)
            #expect(limitedTrace.map(\.outcome) == ["delivered", "retry"])
            #expect(limitedTrace.map(\.httpStatus) == [201, 429])
            #expect(limitedTrace[0].at.timeIntervalSince(limitedTrace[1].at) >= 0.9)
            seen += 2

            // 500: retried.
            mock.script(subscription, .init(status: 500))
            let failing = try await newOperation()
            #expect(try await PushDeliveryTests.settledPush(server, failing).state == "delivered")
            #expect(try await Self.trace(server, client, operation: failing).map(\.httpStatus) == [201, 500])
            seen += 2

            // A redirect is reported, never followed.
            let before = mock.all.count
            mock.script(subscription, .init(status: 307, headers: ["location": endpoint.absoluteString]))
            let moved = try await newOperation()
            let movedItem = try await PushDeliveryTests.settledPush(server, moved)
            #expect(
                movedItem.state == "abandoned"
                    && movedItem.lastError?.contains("redirects are not followed") == true)
            #expect(mock.all.count == before + 1)
            #expect(try await server.store.pushRegistration(activationId: device.activationId) != nil)
            _ = seen
        }
    }

    @Test("Registration: the endpoint and keys are checked; another registration replaces it; no Web Push, no key")
    func registration() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let keys = try WebPushEncryption.Subscription(
                publicKey: ECPrivateKey().publicKey, authSecret: Bytes.random(count: 16))
            let refused: [(String, String?, String?, String)] = [
                ("http://push.example.net/x", keys.p256dh, keys.auth, "must be https"),
                ("https://user:pw@push.example.net/x", keys.p256dh, keys.auth, "without credentials"),
                ("https://push.example.net/x#f", keys.p256dh, keys.auth, "without credentials or fragment"),
                ("push.example.net/x", keys.p256dh, keys.auth, "absolute URL"),
                ("https://push.example.net/" + String(repeating: "a", count: 2100), keys.p256dh, keys.auth, "2048"),
                ("https://push.example.net/x", nil, keys.auth, "p256dh and auth"),
                ("https://push.example.net/x", keys.p256dh, nil, "p256dh and auth"),
                ("https://push.example.net/x", Base64URL.encode(keys.publicKey.compressed), keys.auth, "uncompressed"),
                ("https://push.example.net/x", keys.p256dh, Base64URL.encode(Data(count: 12)), "16-byte"),
                ("https://push.example.net/x", Base64URL.encode(Data(count: 65)), keys.auth, "uncompressed"),
            ]
            for (endpoint, p256dh, auth, reason) in refused {
                let response = try await Self.register(&device, endpoint: endpoint, p256dh: p256dh, auth: auth)
                #expect(response.status == 400, "\(endpoint)")
                #expect(
                    response.text.contains("PUSH_REGISTRATION_FAILED") && response.text.contains(reason),
                    "\(response.text)")
            }
            let apnsWithKeys = try await Self.register(
                &device, endpoint: String(repeating: "ab", count: 32), p256dh: keys.p256dh, auth: keys.auth,
                platform: "apns")
            #expect(apnsWithKeys.status == 400 && apnsWithKeys.text.contains("webpush registration only"))
            #expect(try await server.store.pushRegistration(activationId: device.activationId) == nil)

            for endpoint in ["https://push.example.net/wpush/v2/abc", "http://127.0.0.1:9/x", "http://[::1]:9/y"] {
                let response = try await Self.register(
                    &device, endpoint: endpoint, p256dh: keys.p256dh, auth: keys.auth, platform: "UnifiedPush")
                #expect(response.status == 200, "\(endpoint): \(response.text)")
                #expect(try await server.store.pushRegistration(activationId: device.activationId)?.token == endpoint)
            }
            // An APNs token replaces the subscription, keys and all.
            let apns = try await Self.register(
                &device, endpoint: String(repeating: "ab", count: 32), p256dh: nil, auth: nil, platform: "apns")
            #expect(apns.status == 200)
            let replaced = try #require(try await server.store.pushRegistration(activationId: device.activationId))
            #expect(replaced.platform == .apns && replaced.webPush == nil)
            // This server sends no Web Push: no key to subscribe with.
            let key = try await client.send("GET", "/api/push/webpush/key")
            #expect(key.status == 404 && key.text.contains("--vapid-subject"))
        }
    }

    @Test("The SDK registers its own subscription keys and decrypts what the server sent through the push service")
    func sdkDecrypts() async throws {
        let mock = try WebPushServiceMock()
        try await mock.run { base in
            let server = try await TestServer.make(.sqlite, push: try Self.settings(mock))
            defer { Task { await server.shutdown() } }
            let directory = SDKClients.directory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try await server.live { http in
                let sdk = try await SDKClients.activatedClient(server, http, directory: directory)
                let push = PushService(client: sdk)
                let serverKey = try await push.webPushServerKey()
                mock.expectedKey.withLock { $0 = try? ECPublicKey(x963: try Base64URL.decode(serverKey)) }
                // The service forwards the bodies; the SDK made the keys, so the mock's subscription only names the path.
                let (subscription, endpoint) = mock.subscribe(base: base)
                try await push.registerForPush(webPushEndpoint: endpoint)
                let created = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
                let arrived = try #require(try await mock.wait(subscription, count: 1).first)
                #expect(arrived.vapidProblem == nil)
                // Not for the mock's keys: only the device can read it.
                #expect((try? arrived.plaintext.get()) == nil)
                let message = try #require(try await push.message(fromWebPush: arrived.body))
                guard case .operationCreated(let id, let name, let activationId, let title, _) = message else {
                    throw TestFailure("not a new operation: \(message)")
                }
                let registrationId = await sdk.registrationId
                #expect(id == created.id && name == created.name && activationId == registrationId)
                #expect(
                    title == (try await server.store.operation(id: created.id))?.content.form(acceptLanguage: nil).title
                )
                // Another client (a fresh keystore) cannot read it; a changed byte does not decrypt.
                var altered = arrived.body
                altered[altered.count - 1] ^= 1
                await #expect(throws: AssentError.self) { try await push.message(fromWebPush: altered) }
                // The keys survive a restart of the app.
                let reopened = try SDKClients.client(server, base: http.base, directory: directory)
                #expect(try await PushService(client: reopened).message(fromWebPush: arrived.body) == message)
            }
        }
    }

    @Test(
        "The console shows an activation's and an operation's push attempts, a removed registration's with its reason")
    func consoleTrace() async throws {
        try await Self.withWebPush(.sqlite) { mock, base, server, client in
            var device = try await server.activatedDevice(client)
            let (subscription, endpoint) = mock.subscribe(base: base)
            try await Self.register(&device, subscription, at: endpoint)
            let delivered = try await server.createOperation(
                client, try OperationFixtures.payment(userId: "alice"))
            #expect(try await PushDeliveryTests.settledPush(server, delivered.id).state == "delivered")
            mock.script(subscription, .init(status: 410, body: #"{"title":"Unregistered"}"#))
            let gone = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            #expect(try await PushDeliveryTests.settledPush(server, gone.id).state == "abandoned")

            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("console/webpush"))
            defer { Task { await browser.quit() } }
            let origin = client.base.absoluteString
            try await browser.signInToConsole(origin, apiKey: server.apiKey)
            try await browser.open("\(origin)/console/activations/\(device.activationId)")
            try await browser.expectText("#push", "not registered")
            let rows = try await browser.text("#push-deliveries tbody")
            #expect(rows.contains("HTTP 410 — registration removed") && rows.contains("Unregistered"), "\(rows)")
            #expect(rows.contains("HTTP 201 — delivered") && rows.contains(gone.id) && rows.contains("webpush"))
            #expect(!rows.contains(endpoint.absoluteString))
            try await browser.screenshot("01-activation-trace")
            try await browser.resize(Browser.phone)
            try await browser.screenshot("02-activation-trace-phone")
            _ = try await browser.screenshot(of: ".push-deliveries", "02-activation-trace-phone-table")
            try await browser.resize(Browser.desktop)
            try await browser.open("\(origin)/console/operations/\(gone.id)")
            let operationRows = try await browser.text("#push-deliveries tbody")
            #expect(operationRows.contains("HTTP 410 — registration removed"))
            #expect(operationRows.contains(device.activationId) && !operationRows.contains("HTTP 201"))
            try await browser.screenshot("03-operation-trace")
            // An operation no push went out for says so.
            let quiet = try await server.createOperation(client, try OperationFixtures.payment(userId: "alice"))
            try await browser.open("\(origin)/console/operations/\(quiet.id)")
            try await browser.expectText(
                "#push-deliveries-none", "No push attempts are on record (they are kept for 30 days).")
            let metrics = try await client.send("GET", "/metrics").text
            #expect(metrics.contains(#"assent_push_attempts_total{service="webpush",outcome="unregistered"} 1"#))
        }
    }

    @Test("assent token push-listen receives a new operation by Web Push, checked and decrypted on this machine")
    func pushListen() async throws {
        // push-listen receives on loopback, which the server reaches only when allowed (ASSENT_EGRESS_ALLOW works
        // as the flag does).
        try await CLITests.withServer(
            "push-listen",
            arguments: [
                "--vapid-subject", "mailto:push@bank.example", "--egress-allow", "127.0.0.0/8", "--egress-allow", "::1",
            ]
        ) {
            work, _, printed in
            let url = try #require(printed["url"])
            let config = try #require(printed["SDK configuration"])
            let key = try #require(printed["Web Push key (applicationServerKey, also at /api/push/webpush/key)"])
            #expect(try ECPublicKey(x963: try Base64URL.decode(key)).x963.count == 65)
            #expect(printed["Push"]?.contains("Web Push") == true)
            let environment = try CLITests.connection(printed)
            let profile = ["--profile", work.appendingPathComponent("token").path]
            let activation = try await CLITests.admin(
                ["activation", "create", "--user", "alice"], environment: environment, as: CreateActivationResponse.self
            )
            let activated = try await CLITests.run(
                ["token", "activate", "--server", url, "--config", config, "--pin-stdin", activation.activationCode]
                    + profile, input: "1234\n")
            #expect(activated.status == 0, "\(activated.errors)")

            let output = work.appendingPathComponent("listen.out")
            let notes = work.appendingPathComponent("listen.err")
            for file in [output, notes] { #expect(FileManager.default.createFile(atPath: file.path, contents: nil)) }
            let listener = Process()
            listener.executableURL = CLITests.executable
            listener.arguments = ["token", "push-listen", "--count", "1", "--json"] + profile
            listener.standardOutput = try FileHandle(forWritingTo: output)
            listener.standardError = try FileHandle(forWritingTo: notes)
            try listener.run()
            defer { if listener.isRunning { listener.terminate() } }
            var listening = false
            for _ in 0..<300 where !listening {
                try await Task.sleep(for: .milliseconds(100))
                listening = ((try? String(contentsOf: notes, encoding: .utf8)) ?? "").contains("Listening for Web Push")
            }
            #expect(listening, "\((try? String(contentsOf: notes, encoding: .utf8)) ?? "")")

            let created = try await CLITests.admin(
                [
                    "operation", "create", "--user", "alice", "--data", "A1*A100CZK*ICZ2730300000001165254011",
                    "--title", "Confirm payment", "--message", "Pay 100 CZK to Nela?",
                ], environment: environment, as: OperationInfo.self)
            for _ in 0..<300 where listener.isRunning { try await Task.sleep(for: .milliseconds(100)) }
            #expect(!listener.isRunning && listener.terminationStatus == 0)
            struct Printed: Decodable {
                var type: String
                var operationId: String
                var title: String?
                var body: String?
            }
            let line = try #require(
                (try String(contentsOf: output, encoding: .utf8)).split(separator: "\n").first, "nothing printed")
            let message = try JSONDecoder().decode(Printed.self, from: Data(line.utf8))
            #expect(message.type == "mtoken.operationInit" && message.operationId == created.id)
            #expect(message.title == "Confirm payment" && message.body == "Pay 100 CZK to Nela?")
            let noted = try String(contentsOf: notes, encoding: .utf8)
            #expect(!noted.contains("refused") && !noted.contains("did not decrypt"), "\(noted)")
            // The delivery is on record for the operator.
            let trace = try await CLITests.run(
                ["admin", "--json", "operation", "deliveries", created.id], environment: environment)
            #expect(trace.status == 0, "\(trace.errors)")
            let deliveries = try OperatorJSON.decoder().decode(PushDeliveryList.self, from: Data(trace.output.utf8))
            #expect(deliveries.deliveries.map(\.outcome) == ["delivered"])
            #expect(deliveries.deliveries.first?.service == "webpush" && deliveries.deliveries.first?.httpStatus == 201)
        }
    }
}
