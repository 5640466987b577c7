import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// A browser as an approver of push sign-ins, through the Web Push service written for the tests: a subscribed
/// browser gets every push sign-in of its account (encrypted, with VAPID), the link in the notification opens a page
/// that is answered with the account's passkey (user verification, bound to the sign-in), and the sign-in goes on;
/// rejecting, a wrong number, a forged link, another account's passkey and an unverified user are refused; a
/// subscription the push service declares gone removes the browser.
@Suite("Browsers that approve sign-ins")
struct BrowserApprovalTests {
    /// A TFA account with a passkey made by `authenticator` (registered in a sign-in flow).
    static func accountWithPasskey(_ tfa: TFAClient, _ userId: String, _ authenticator: SoftwareAuthenticator)
        async throws
    {
        try await tfa.createAccount(userId)
        let first = try await tfa.interruption(userId)
        let assertion = try await tfa.start(first.regToken, .register, provider: .passkey)
        let options = try await tfa.post("/api/tfa/passkey/options", TFAAssertionRequest(assertion: assertion))
            .decode(PasskeyOptionsResponse.self).publicKey
        let registered = try await tfa.post(
            "/api/tfa/passkey/register",
            PasskeyRegisterRequest(assertion: assertion, credential: try authenticator.create(options), name: "Laptop"))
        guard registered.status == 200 else { throw TestFailure("passkey: \(registered.status)") }
        let proof = try registered.decode(TFAProofResponse.self).providerAssertion
        _ = try await tfa.post(
            "/api/tfa/finalize",
            TFAFinalizeRequest(regToken: first.regToken, assertion: assertion, providerAssertion: proof))
    }

    /// A push sign-in of `userId` started through the TFA API: its assertion and what was sent.
    static func pushSignIn(_ tfa: TFAClient, _ userId: String) async throws
        -> (assertion: String, sent: TFAPushSent, regToken: String)
    {
        let interruption = try await tfa.interruption(userId)
        let assertion = try await tfa.start(interruption.regToken, .verify, provider: .push)
        let answer = try await tfa.post(
            "/api/tfa/push/send",
            TFAPushSendRequest(
                assertion: assertion, userAgent: "Mozilla/5.0 (Macintosh) Firefox/133.0", ipAddress: "198.51.100.7"))
        guard answer.status == 200 else {
            throw TestFailure("push/send: \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        }
        return (assertion, try answer.decode(TFAPushSent.self), interruption.regToken)
    }

    /// The notification of the browser's push about `operationId` with `event` (`operation.created` or
    /// `operation.finished`), decrypted by the test service.
    static func notification(
        _ mock: WebPushServiceMock, _ subscription: WebPushServiceMock.Subscription, operationId: String,
        finished: Bool
    ) async throws -> (WebPushServiceMock.Received, [String: Any]) {
        let type = finished ? PushMessage.operationFinishedType : PushMessage.operationInitType
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let received = mock.requests(subscription).first(where: {
                $0.data["operationId"] == operationId && $0.data["messageType"] == type
            }) {
                return (received, received.json["notification"] as? [String: Any] ?? [:])
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("no \(type) push for \(operationId)")
    }

    /// The path and query of the approval link, and its token.
    static func link(_ url: String) throws -> (path: String, token: String) {
        let components = try #require(URLComponents(string: url))
        let token = try #require(components.queryItems?.first { $0.name == "t" }?.value)
        return (components.path + "?" + (components.percentEncodedQuery ?? ""), token)
    }

    static func form(_ client: HTTPClient, _ path: String, _ fields: [String: String]) async throws
        -> HTTPClient.Response
    {
        try await client.send(
            "POST", path, headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: FormEncoding.encode(fields))
    }

    @Test(
        "A push sign-in reaches the subscribed browser; its page approves with a passkey and the number; reject, wrong number, forged link, another's passkey, no user verification and a gone subscription",
        arguments: Backend.all)
    func approveInBrowser(_ backend: Backend) async throws {
        try await WebPushDeliveryTests.withWebPush(backend) { mock, base, server, client in
            let tfa = TFAClient(server: server, client: client)
            let port = try #require(client.base.port)
            let authenticator = SoftwareAuthenticator(origin: "http://localhost:\(port)")
            try await Self.accountWithPasskey(tfa, "alice", authenticator)
            let key = try await WebPushDeliveryTests.serverKey(client)
            mock.expectedKey.withLock { $0 = key }
            let approvers = Services(server.environment).approvers

            // Subscribing: the endpoint and keys are checked; an account without a passkey cannot.
            let (subscription, endpoint) = mock.subscribe(base: base)
            let keys = try subscription.keys
            let chrome =
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"
            await #expect(throws: AssentServerError.self) {
                try await approvers.subscribe(
                    server.application, userId: "alice", endpoint: "http://push.example/x", p256dh: keys.p256dh,
                    auth: keys.auth, userAgent: chrome)
            }
            await #expect(throws: AssentServerError.self) {
                try await approvers.subscribe(
                    server.application, userId: "alice", endpoint: endpoint.absoluteString, p256dh: keys.auth,
                    auth: keys.auth, userAgent: chrome)
            }
            try await tfa.createAccount("bob")
            let noPasskey = await #expect(throws: AssentServerError.self) {
                try await approvers.subscribe(
                    server.application, userId: "bob", endpoint: endpoint.absoluteString, p256dh: keys.p256dh,
                    auth: keys.auth, userAgent: chrome)
            }
            #expect(noPasskey?.message.contains("Add a passkey first") == true)
            let factor = try await approvers.subscribe(
                server.application, userId: "alice", endpoint: endpoint.absoluteString, p256dh: keys.p256dh,
                auth: keys.auth, userAgent: chrome)
            // The same endpoint again replaces it.
            let browser = try await approvers.subscribe(
                server.application, userId: "alice", endpoint: endpoint.absoluteString, p256dh: keys.p256dh,
                auth: keys.auth, userAgent: chrome)
            let factors = try await server.store.tfaFactors(applicationId: server.application.id, userId: "alice")
            #expect(factors.filter(BrowserApprovers.isBrowser).map(\.id) == [browser.id] && factor.id != browser.id)
            #expect(BrowserApprovers.subscription(of: browser)?.label == "Chrome on Linux")
            // The operator sees what it is, never its endpoint.
            let account = try await server.operatorCall(
                client, "GET", "/api/v1/tfa/accounts/alice", as: TFAAccountInfo.self)
            let listed = try #require(account.factors.first { $0.id == browser.id })
            #expect(listed.provider == .push && listed.obfuscated == "browser: Chrome on Linux")

            // A sign-in: the browser is offered as push; the request reaches it encrypted, with VAPID.
            let interruption = try await tfa.interruption("alice")
            #expect(interruption.activeProviders.map(\.name).contains(.push))
            let (assertion, sent, regToken) = try await Self.pushSignIn(tfa, "alice")
            let (created, notification) = try await Self.notification(
                mock, subscription, operationId: sent.operationId, finished: false)
            #expect(created.vapidProblem == nil && created.headers["urgency"] == "high")
            #expect(notification["title"] as? String == "Sign in to \(server.application.name)?")
            #expect(notification["tag"] as? String == sent.operationId)
            // The request is written in every language the server speaks: a Czech phone shows it in Czech.
            let request = try #require(try await server.store.operation(id: sent.operationId))
            let czech = request.content.form(acceptLanguage: "cs")
            #expect(czech.title == "Přihlásit se do \(server.application.name)?", "\(czech.title)")
            #expect(czech.message.contains("Schvalte jen tehdy, když se právě teď přihlašujete do"), "\(czech.message)")
            #expect(request.content.form(acceptLanguage: "de").title == "Bei \(server.application.name) anmelden?")
            let url = try #require(notification["url"] as? String)
            #expect(url.hasPrefix("/approve-sign-in/\(sent.operationId)?t="))
            let (path, token) = try Self.link(url)
            let approvePath = BrowserApprovers.path(sent.operationId)

            // The page: the sign-in's context and the three numbers, one of them the one shown.
            let page = try await client.send("GET", path)
            #expect(page.status == 200 && page.text.contains("Approve this sign-in?"))
            #expect(page.text.contains("<dt>Browser</dt><dd>Firefox on macOS</dd>"), "\(page.text)")
            #expect(page.text.contains("<dt>Address</dt><dd>198.51.100.7</dd>"))
            let number = try #require(sent.number)
            #expect(page.text.contains("value=\"\(number)\" id=\"number-\(number)\""))
            // In the browser's language: a Czech browser reads the question, the choice and the refusal in Czech.
            let czechPage = try await client.send("GET", path, headers: ["Accept-Language": "cs,en;q=0.5"])
            #expect(
                czechPage.text.contains("<html lang=\"cs\">") && czechPage.text.contains("Schválit toto přihlášení?"))
            #expect(czechPage.text.contains("Zvolte číslo, které ukazuje přihlašovací stránka"))
            #expect(czechPage.text.contains("Nepřihlašuji se: zamítnout"), "\(czechPage.text)")
            #expect(czechPage.text.contains("data-prompt=\"Postupujte podle výzvy prohlížeče…\""))
            // A forged or foreign link opens nothing.
            let forged = try await client.send("GET", "\(approvePath)?t=\(token.dropLast(2))xx")
            #expect(forged.status == 403 && forged.text.contains("invalid"))
            let otherOperation = try await client.send("GET", "/approve-sign-in/other?t=\(token)")
            #expect(otherOperation.status == 403)

            // Options: the account's passkey, user verification required, bound to this sign-in.
            let optionsAnswer = try await Self.form(client, "\(approvePath)/options", ["t": token])
            #expect(optionsAnswer.status == 200, "\(optionsAnswer.text)")
            let options = try JSONDecoder().decode(PasskeyOptionsResponse.self, from: optionsAnswer.body).publicKey
            #expect(options.userVerification == "required" && options.allowCredentials?.count == 1)
            let noOptions = try await Self.form(client, "\(approvePath)/options", ["t": "nope"])
            #expect(noOptions.status == 403)

            // Another account's passkey, and one without user verification, are refused; nothing changes.
            let bobs = SoftwareAuthenticator(origin: "http://localhost:\(port)")
            try await Self.accountWithPasskey(tfa, "carol", bobs)
            let foreign = try await Self.form(
                client, approvePath,
                [
                    "t": token, "number": "\(number)",
                    // Carol's authenticator answers whatever the options allow, as a stolen one would.
                    "credential": try Self.json(try bobs.get(Self.unrestricted(options))),
                ])
            #expect(foreign.status == 400 && foreign.text.contains("not registered for this account"))
            authenticator.verifiesUser = false
            let unverifiedOptions = try JSONDecoder().decode(
                PasskeyOptionsResponse.self,
                from: try await Self.form(client, "\(approvePath)/options", ["t": token]).body
            ).publicKey
            let unverified = try await Self.form(
                client, approvePath,
                [
                    "t": token, "number": "\(number)",
                    "credential": try Self.json(try authenticator.get(unverifiedOptions)),
                ])
            #expect(unverified.status == 400 && unverified.text.contains("refused"))
            authenticator.verifiesUser = true
            #expect(try await server.store.operation(id: sent.operationId)?.status == .pending)

            // Alice reads German (chosen on /account): the browser's notifications follow it, a browser telling none.
            #expect(
                try await server.store.setTFAAccountLanguage(
                    applicationId: server.application.id, userId: "alice", language: "de"))
            // Approved with the passkey and the number: the sign-in goes on; the notification is replaced.
            let fresh = try JSONDecoder().decode(
                PasskeyOptionsResponse.self,
                from: try await Self.form(client, "\(approvePath)/options", ["t": token]).body
            ).publicKey
            let approved = try await Self.form(
                client, approvePath,
                ["t": token, "number": "\(number)", "credential": try Self.json(try authenticator.get(fresh))])
            #expect(
                approved.status == 200 && approved.text.contains("Approved: the sign-in goes on"), "\(approved.text)")
            let czechOutcome = try await client.send("GET", path, headers: ["Accept-Language": "cs"])
            #expect(czechOutcome.text.contains("Přihlášení schváleno"), "\(czechOutcome.text)")
            #expect(czechOutcome.text.contains("Schváleno: přihlášení pokračuje tam, kde začalo."))
            let operation = try #require(try await server.store.operation(id: sent.operationId))
            #expect(
                operation.status == .approved && operation.activationId == nil && operation.approvedWith == "passkey")
            let verified = try await tfa.post("/api/tfa/push/verify", TFAAssertionRequest(assertion: assertion))
            let status = try verified.decode(TFAPushStatus.self)
            #expect(status.status == "APPROVED")
            // The login says how: a browser's approval with a passkey, never a phone's.
            let success = try await tfa.post(
                "/api/tfa/finalize",
                TFAFinalizeRequest(
                    regToken: regToken, assertion: assertion,
                    providerAssertion: try #require(status.providerAssertion))
            ).decode(TFALoginSuccess.self)
            let claims = try await tfa.verifyLoginToken(success.loginToken)
            #expect(claims.tfa == "push-browser" && claims.amr == ["pwd", "user", "mfa"])
            let (finished, outcome) = try await Self.notification(
                mock, subscription, operationId: sent.operationId, finished: true)
            #expect(outcome["title"] as? String == "Anmeldung bestätigt" && outcome["url"] == nil, "\(outcome)")
            #expect(finished.headers["urgency"] == "normal" && finished.headers["topic"] == created.headers["topic"])
            // Answered once: the page shows the outcome, a second answer changes nothing.
            let again = try await client.send("GET", path)
            #expect(again.text.contains("Approved: the sign-in goes on") && !again.text.contains("passkey-start"))
            let trace = try await WebPushDeliveryTests.trace(server, client, operation: sent.operationId, count: 2)
            #expect(trace.count == 2 && trace.allSatisfy { $0.activationId == "browser:\(browser.id)" })
            #expect(trace.allSatisfy { $0.outcome == "delivered" && $0.httpStatus == 201 })
            let audit = try await server.store.auditEvents(AuditFilter(typePrefix: "tfa.browser_"), limit: 20)
            #expect(audit.contains { $0.type == "tfa.browser_subscribed" && $0.userId == "alice" })
            #expect(
                audit.contains {
                    $0.type == "tfa.browser_answered" && $0.detail.contains("approved on browser \(browser.id)")
                })

            // Rejected in the browser: the sign-in is refused and says where.
            let rejecting = try await Self.pushSignIn(tfa, "alice")
            let (_, rejectNotice) = try await Self.notification(
                mock, subscription, operationId: rejecting.sent.operationId, finished: false)
            let rejectToken = try Self.link(try #require(rejectNotice["url"] as? String)).token
            let rejected = try await Self.form(
                client, "\(BrowserApprovers.path(rejecting.sent.operationId))/reject", ["t": rejectToken])
            #expect(rejected.status == 200 && rejected.text.contains("Rejected: nobody was signed in."))
            let refused = try await tfa.post(
                "/api/tfa/push/verify", TFAAssertionRequest(assertion: rejecting.assertion))
            #expect(refused.status == 403 && refused.code == "PUSH_REJECTED")
            #expect((refused.fields["message"] as? String)?.contains("in a browser") == true)

            // Another number than the one shown rejects the sign-in.
            let wrong = try await Self.pushSignIn(tfa, "alice")
            let (_, wrongNotice) = try await Self.notification(
                mock, subscription, operationId: wrong.sent.operationId, finished: false)
            let wrongToken = try Self.link(try #require(wrongNotice["url"] as? String)).token
            let wrongPath = BrowserApprovers.path(wrong.sent.operationId)
            let wrongOptions = try JSONDecoder().decode(
                PasskeyOptionsResponse.self,
                from: try await Self.form(client, "\(wrongPath)/options", ["t": wrongToken]).body
            ).publicKey
            let choices = try #require(try await server.store.operation(id: wrong.sent.operationId)?.numberChoices)
            let other = try #require(choices.first { $0 != wrong.sent.number })
            let mismatch = try await Self.form(
                client, wrongPath,
                [
                    "t": wrongToken, "number": "\(other)",
                    "credential": try Self.json(try authenticator.get(wrongOptions)),
                ])
            #expect(mismatch.status == 400 && mismatch.text.contains("not the one the sign-in page showed"))
            let mismatched = try await server.store.operation(id: wrong.sent.operationId)
            #expect(mismatched?.status == .rejected && mismatched?.statusReason == "WRONG_NUMBER")

            // The push service says the subscription is gone: the browser is removed, and audited. (Once the
            // rejection's notice has gone out, so that the sign-in's own message meets the answer.)
            _ = try await Self.notification(mock, subscription, operationId: wrong.sent.operationId, finished: true)
            mock.script(subscription, .init(status: 410, body: #"{"title":"Unsubscribed"}"#))
            let gone = try await Self.pushSignIn(tfa, "alice")
            _ = try await Self.notification(mock, subscription, operationId: gone.sent.operationId, finished: false)
            for _ in 0..<200 where try await server.store.tfaFactor(id: browser.id) != nil {
                try await Task.sleep(for: .milliseconds(25))
            }
            #expect(try await server.store.tfaFactor(id: browser.id) == nil)
            // Audited right after the removal.
            var removed: [AuditEvent] = []
            for _ in 0..<200 {
                removed = try await server.store.auditEvents(AuditFilter(typePrefix: "push.unregistered"), limit: 5)
                if removed.contains(where: { $0.detail.contains(browser.id) }) { break }
                try await Task.sleep(for: .milliseconds(25))
            }
            #expect(removed.contains { $0.userId == "alice" && $0.detail.contains(browser.id) })
            // Its links open nothing any more.
            #expect(try await client.send("GET", path).status == 403)
        }
    }

    /// `options` without their list of allowed credentials.
    static func unrestricted(_ options: PasskeyOptions) -> PasskeyOptions {
        var open = options
        open.allowCredentials = nil
        return open
    }

    static func json(_ credential: some Encodable) throws -> String {
        String(decoding: try JSONEncoder().encode(credential), as: UTF8.self)
    }
}

/// The same in headless Chromium: `/account` subscribes the browser (permission, service worker, the server's VAPID
/// key — the browser's own push service stood in for by the test service, whose subscription the page's
/// `pushManager.subscribe` returns), the service worker shows the pushed request as a notification (delivered with
/// DevTools' `ServiceWorker.deliverPushMessage`, as the browser's push service would), the link opens the approval
/// page, the virtual authenticator's passkey approves with the number, and the outcome replaces the notification.
@Suite("A browser that approves sign-ins, in a real browser", .serialized)
struct BrowserApprovalBrowserTests {
    @Test("Subscribe on /account, see the request as a notification, approve it with a passkey, see the outcome")
    func approveInChromium() async throws {
        try await WebPushDeliveryTests.withWebPush(.sqlite) { mock, base, server, client in
            let tfa = TFAClient(server: server, client: client)
            try await tfa.createAccount("alice")
            let (uri, _) = try await tfa.registerTOTP("alice")
            let key = try await WebPushDeliveryTests.serverKey(client)
            mock.expectedKey.withLock { $0 = key }
            let port = try #require(client.base.port)
            let origin = "http://localhost:\(port)"
            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("browser-approval"))
            defer { Task { await browser.quit() } }
            _ = try await browser.addVirtualAuthenticator()

            // Signed in to /account with two factors; a passkey first (the browser approves with it).
            try await AccountPageTests.openAccount(browser, base: origin, server: server, totp: uri)
            try await browser.type("#name", "Laptop")
            try await browser.click("#passkey-start")
            try await browser.expectText("#notice", "Passkey added.")

            // Subscribing: notifications allowed, the service worker registered, the subscription made for the
            // server's key and posted.
            try await browser.devTools(
                "Browser.grantPermissions", ["origin": origin, "permissions": ["notifications"]])
            let (subscription, endpoint) = mock.subscribe(base: base)
            let keys = try subscription.keys
            try await browser.execute(
                """
                PushManager.prototype.subscribe = function (options) {
                    var key = new Uint8Array(options.applicationServerKey);
                    sessionStorage.setItem("subscribedWith", btoa(String.fromCharCode.apply(null, key)));
                    return Promise.resolve({ toJSON: function () {
                        return { endpoint: "\(endpoint.absoluteString)",
                                 keys: { p256dh: "\(keys.p256dh)", auth: "\(keys.auth)" } };
                    } });
                };
                """)
            try await browser.click("#browser-push-start")
            try await browser.expectText("#notice", containing: "This browser now gets your sign-in requests")
            try await browser.expectText("#approving-browsers .item-name", "Chrome on Linux")
            let subscribedWith = try await browser.execute("return sessionStorage.getItem('subscribedWith');")
            #expect(subscribedWith as? String == key.x963.base64EncodedString())
            try await browser.screenshot("01-subscribed")
            try await browser.expectPhoneLayout("01-subscribed-phone")
            try await browser.resize(Browser.desktop)
            let factor = try #require(
                try await server.store.tfaFactors(applicationId: server.application.id, userId: "alice")
                    .first(where: BrowserApprovers.isBrowser))
            let scope = try await browser.executeAsync(
                """
                var done = arguments[arguments.length - 1];
                navigator.serviceWorker.getRegistration("/web/assets/").then(function (registration) {
                    done(registration && registration.active ? registration.scope : null);
                });
                """)
            #expect(scope as? String == "\(origin)/web/assets/")

            // A sign-in on the hosted pages of another origin (another site's cookies, as another computer's):
            // the push method waits for the browser; the request arrives, and the service worker shows it.
            let elsewhere = "http://127.0.0.1:\(port)"
            try await browser.open("\(elsewhere)/login")
            try await browser.type("#userId", "alice")
            try await browser.type("#password", "correct horse battery")
            try await browser.click("#submit")
            try await browser.click("#provider-push")
            try await browser.expectText("#status", containing: "We sent a sign-in request to your browser.")
            let number = try #require(Int(try await browser.text("#number")))
            try await browser.screenshot("02-waiting-elsewhere")
            let created = try #require(try await mock.wait(subscription, count: 1).first)
            let operationId = try #require(created.data["operationId"])
            let notification = try #require(created.json["notification"] as? [String: Any])
            // Back on the subscribed origin, the browser's push service hands the message to the worker.
            try await browser.open("\(origin)/account")
            let url = try #require(notification["url"] as? String)
            try await Self.deliver(browser, origin: origin, try created.plaintext.get())
            let shown = try await Self.notifications(browser)
            #expect(shown.count == 1, "\(shown)")
            #expect(shown.first?["title"] as? String == "Sign in to \(server.application.name)?")
            #expect(shown.first?["tag"] as? String == operationId)
            #expect(shown.first?["url"] as? String == "\(origin)\(url)")

            // Its link opens the approval page: the number shown where the sign-in started, and the passkey.
            try await browser.open("\(origin)\(url)")
            try await browser.expectText("h1", "Approve this sign-in?")
            try await browser.expectText("#operation-title", "Sign in to \(server.application.name)?")
            try await browser.screenshot("03-approve")
            try await browser.expectPhoneLayout("03-approve-phone")
            try await browser.resize(Browser.desktop)
            // The button checks that a number was chosen.
            try await browser.click("#passkey-start")
            #expect(try await server.store.operation(id: operationId)?.status == .pending)
            try await browser.click("#number-\(number)")
            try await browser.click("#passkey-start")
            try await browser.expectText(
                "#status", "Approved: the sign-in goes on where it started. You can close this tab.")
            try await browser.screenshot("04-approved")
            // Where the sign-in waits, it goes on by itself.
            try await browser.open("\(elsewhere)/login/push")
            try await browser.element("#signed-in", seconds: 60)
            try await browser.expectText("#methods", "password and approval in your browser")
            try await browser.screenshot("05-signed-in-elsewhere")

            // The outcome replaces the notification.
            let (finished, _) = try await BrowserApprovalTests.notification(
                mock, subscription, operationId: operationId, finished: true)
            try await browser.open("\(origin)/account")
            try await Self.deliver(browser, origin: origin, try finished.plaintext.get())
            let replaced = try await Self.notifications(browser)
            #expect(replaced.count == 1 && replaced.first?["title"] as? String == "Sign-in approved", "\(replaced)")

            // Removed on /account: no more requests.
            try await browser.expectText("#approving-browsers .item-detail", containing: "last approved")
            try await browser.click("#remove-\(factor.id)")
            try await browser.expectText("#notice", "Removed.")
            #expect(try await browser.exists("#approving-browsers") == false)
            #expect(try await server.store.tfaFactor(id: factor.id) == nil)
        }
    }

    /// Hands `data` to the page's service worker as a push message, as the browser's push service would.
    static func deliver(_ browser: Browser, origin: String, _ data: Data) async throws {
        let before = try await notifications(browser).count
        try await browser.devTools("ServiceWorker.enable")
        try await browser.devTools(
            "ServiceWorker.deliverPushMessage",
            [
                // Chromium numbers a profile's registrations from 0: the test's browser has this one alone.
                "origin": origin, "registrationId": "0",
                "data": String(decoding: data, as: UTF8.self),
            ])
        // The worker shows it asynchronously: wait until the list changed (or replaced one, for the same tag).
        for _ in 0..<100 {
            let now = try await notifications(browser)
            if now.count != before || now.contains(where: { ($0["title"] as? String)?.hasPrefix("Sign-in ") == true }) {
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// The notifications the service worker shows: title, body, tag, url.
    static func notifications(_ browser: Browser) async throws -> [[String: Any]] {
        try await browser.executeAsync(
            """
            var done = arguments[arguments.length - 1];
            navigator.serviceWorker.getRegistration("/web/assets/").then(function (registration) {
                return registration ? registration.getNotifications() : [];
            }).then(function (list) {
                done(list.map(function (n) {
                    return { title: n.title, body: n.body, tag: n.tag, url: n.data && n.data.url };
                }));
            });
            """) as? [[String: Any]] ?? []
    }
}
