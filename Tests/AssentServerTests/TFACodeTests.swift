import AssentCrypto
import AssentModel
import AssentSDK
import AssentTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import AssentServer
@testable import AssentServerTesting

@Suite("SMTP client against aiosmtpd")
struct SMTPClientTests {
    @Test("STARTTLS and implicit TLS with AUTH: the message arrives, headers and UTF-8 body intact")
    func delivers() async throws {
        for mode in [SMTPTestServer.Mode.starttls, .tls] {
            let server = try await SMTPTestServer(mode: mode)
            let client = SMTPClient(settings: server.settings())
            try await client.send(
                to: "alice@bank.example", subject: "Přihlašovací kód", body: "Kód je 123456.\n.\nKonec\n")
            let mail = try #require(try await server.wait(for: 1).first)
            #expect(mail.from == "login@bank.example")
            #expect(mail.to == ["alice@bank.example"])
            #expect(mail.subject == "Přihlašovací kód")
            #expect(mail.contentType == "text/plain")
            #expect(mail.body.replacingOccurrences(of: "\r\n", with: "\n") == "Kód je 123456.\n.\nKonec\n")
        }
    }

    @Test(
        "Refusals: wrong password (535, permanent), credentials never in plain text, STARTTLS missing, untrusted certificate"
    )
    func refusals() async throws {
        let starttls = try await SMTPTestServer(mode: .starttls)
        let wrong = SMTPClient(settings: starttls.settings(password: "wrong"))
        await #expect {
            try await wrong.send(to: "alice@bank.example", subject: "s", body: "b")
        } throws: { ($0 as? SMTPError)?.permanent == true }

        var untrusted = starttls.settings()
        untrusted.trustRootsPEM = nil
        await #expect(throws: (any Error).self) {
            try await SMTPClient(settings: untrusted).send(to: "alice@bank.example", subject: "s", body: "b")
        }
        #expect(try starttls.mailbox().isEmpty)

        let plain = try await SMTPTestServer(mode: .plain)
        await #expect {
            try await SMTPClient(settings: plain.settings()).send(to: "alice@bank.example", subject: "s", body: "b")
        } throws: { ($0 as? SMTPError)?.message.contains("only sent over TLS") == true }
        var wantsTLS = plain.settings(username: nil, password: nil)
        wantsTLS.security = .startTLS
        await #expect {
            try await SMTPClient(settings: wantsTLS).send(to: "alice@bank.example", subject: "s", body: "b")
        } throws: { ($0 as? SMTPError)?.permanent == true }
        #expect(try plain.mailbox().isEmpty)
        // A relay on this machine without TLS or credentials is allowed.
        try await SMTPClient(settings: plain.settings(username: nil, password: nil))
            .send(to: "alice@bank.example", subject: "local", body: "b")
        #expect(try await plain.wait(for: 1).first?.subject == "local")
        // Header injection is impossible: the recipient must be a plain address.
        await #expect(throws: SMTPError.self) {
            try await SMTPClient(settings: plain.settings(username: nil, password: nil))
                .send(to: "alice@bank.example>\r\nBcc: <eve@evil.example", subject: "s", body: "b")
        }
        // What the OpenAPI document's pattern says: printable ASCII (no SMTPUTF8), one @, a dotted domain.
        for address in ["alice@bank.example", "a.b+c@x.y.z", "o'neil@bank.example"] {
            #expect(SMTPClient.isAddress(address), "\(address)")
        }
        for address in ["alíce@bank.example", "alice@bank", "alice@.bank.example", "alice@bank.example.", "a b@c.d"] {
            #expect(!SMTPClient.isAddress(address), "\(address)")
        }
    }
}

@Suite("Two-factor login by e-mail and phone codes")
struct TFACodeTests {
    @Test(
        "E-mail: operator's addresses, code read from the SMTP server's mailbox, cool-down, tries, limits",
        arguments: Backend.all)
    func email(_ backend: Backend) async throws {
        let smtp = try await SMTPTestServer(mode: .starttls)
        var tfa = TFASettings()
        tfa.mail = smtp.settings()
        var limits = RateLimits()
        limits.codesPerDestination = RateLimitRule(limit: 3, window: 3_600)
        let server = try await TestServer.make(backend, rateLimits: limits, tfa: tfa)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let flow = TFAClient(server: server, client: client)
            _ = try await server.operatorCall(
                client, "POST", "/api/v1/tfa/accounts",
                body: try OperatorJSON.encoder().encode(
                    CreateTFAAccountRequest(
                        userId: "alice", password: "correct horse battery",
                        emails: ["alice.smith@bank.example", "al@home.example"])),
                as: TFAAccountInfo.self)
            let account = try await server.operatorCall(
                client, "GET", "/api/v1/tfa/accounts/alice", as: TFAAccountInfo.self)
            #expect(account.factors.map(\.obfuscated) == ["a***h@b***k.example", "**@h***e.example"])

            let interruption = try await flow.interruption("alice")
            #expect(interruption.errorCode == 403101)
            #expect(interruption.activeProviders == [TFAProviderInfo(name: .email)])
            #expect(
                interruption.inactiveProviders == [.totp, .push, .passkey].map(TFAProviderInfo.init))
            let assertion = try await flow.start(interruption.regToken, .verify, provider: .email)
            let emails = try await flow.post("/api/tfa/email/emails", TFAAssertionRequest(assertion: assertion))
                .decode(TFAEmailsResponse.self)
            #expect(emails.emails.map(\.obfuscated) == ["a***h@b***k.example", "**@h***e.example"])
            let sent = try await flow.post(
                "/api/tfa/email/send", TFAEmailSendRequest(assertion: assertion, emailId: emails.emails[0].id)
            )
            .decode(TFACodeSent.self)
            let mail = try #require(try await smtp.wait(for: 1).first)
            #expect(mail.to == ["alice.smith@bank.example"])
            #expect(mail.subject == "Your sign-in code for \(server.application.name)")
            let code = try #require(TFACodes.code(in: mail.body))
            // A second code for the same assertion waits for the cool-down.
            let again = try await client.send(
                "POST", "/api/tfa/email/send", headers: ["Content-Type": "application/json"],
                body: try OperatorJSON.encoder().encode(
                    TFAEmailSendRequest(assertion: assertion, emailId: emails.emails[0].id)))
            #expect(again.status == 429)
            #expect(again.header("Retry-After") != nil)
            #expect(again.header("Cache-Control") == "no-store")
            let malformed = try await client.send(
                "POST", "/api/tfa/email/send", headers: ["Content-Type": "application/json"], body: Data("{".utf8))
            #expect(malformed.status == 400 && malformed.errorCode == "ERR_REQUEST")
            #expect(malformed.header("Cache-Control") == "no-store")

            let bad = try await flow.post(
                "/api/tfa/email/verify",
                TFACodeVerifyRequest(assertion: assertion, phvToken: sent.phvToken, code: TFACodes.other(than: code)))
            #expect(bad.errorCode == 400006)
            #expect(bad.fields["attemptsLeft"] as? Int == 4)
            let otherToken = try await flow.post(
                "/api/tfa/email/verify", TFACodeVerifyRequest(assertion: assertion, phvToken: "forged", code: code))
            #expect(otherToken.code == "INVALID_PHV_TOKEN")
            let proof = try await flow.post(
                "/api/tfa/email/verify", TFACodeVerifyRequest(assertion: assertion, phvToken: sent.phvToken, code: code)
            ).decode(TFAProofResponse.self)
            let success = try await flow.post(
                "/api/tfa/finalize",
                TFAFinalizeRequest(
                    regToken: interruption.regToken, assertion: assertion, providerAssertion: proof.providerAssertion)
            ).decode(TFALoginSuccess.self)
            let claims = try await flow.verifyLoginToken(success.loginToken)
            #expect(claims.amr == ["pwd", "otp", "mfa"])
            #expect(claims.tfa == "email")
            // The address that took the code was just verified; the other was not.
            let verified = try await server.operatorCall(
                client, "GET", "/api/v1/tfa/accounts/alice", as: TFAAccountInfo.self)
            #expect(verified.factors.map { $0.lastVerification != nil } == [true, false])

            // E-mail cannot be registered in a login, and the destination's limit (3 here) holds across assertions.
            for _ in 0..<2 {
                let next = try await flow.interruption("alice")
                let nextAssertion = try await flow.start(next.regToken, .verify, provider: .email)
                let nextSend = try await flow.post(
                    "/api/tfa/email/send", TFAEmailSendRequest(assertion: nextAssertion, emailId: emails.emails[0].id))
                #expect(nextSend.status == 200)
            }
            let limited = try await flow.interruption("alice")
            let limitedAssertion = try await flow.start(limited.regToken, .verify, provider: .email)
            let refused = try await client.send(
                "POST", "/api/tfa/email/send", headers: ["Content-Type": "application/json"],
                body: try OperatorJSON.encoder().encode(
                    TFAEmailSendRequest(assertion: limitedAssertion, emailId: emails.emails[0].id)))
            #expect(refused.status == 429)
            // The other address still gets its code — asked without a language, in the one the person chose
            // (Czech here), over the application's default (German).
            _ = try await server.operatorCall(
                client, "PATCH", "/api/v1/applications/\(server.application.id)/branding",
                body: try OperatorJSON.encoder().encode(UpdateApplicationBrandingRequest(language: "de")),
                as: ApplicationBrandingInfo.self)
            #expect(
                try await server.store.setTFAAccountLanguage(
                    applicationId: server.application.id, userId: "alice", language: "cs"))
            let other = try await flow.post(
                "/api/tfa/email/send", TFAEmailSendRequest(assertion: limitedAssertion, emailId: emails.emails[1].id))
            #expect(other.status == 200)
            #expect(try await smtp.wait(for: 4).last?.to == ["al@home.example"])
            let lastMail = try #require(try smtp.mailbox().last)
            #expect(lastMail.subject == "Váš přihlašovací kód pro \(server.application.name)", "\(lastMail.subject)")
            let lateCode = try #require(TFACodes.code(in: lastMail.body))
            let lateToken = try other.decode(TFACodeSent.self).phvToken

            // Five minutes later the assertion and its code are spent.
            server.clock.advance(by: 301)
            let late = try await flow.post(
                "/api/tfa/email/verify",
                TFACodeVerifyRequest(assertion: limitedAssertion, phvToken: lateToken, code: lateCode))
            #expect(late.code == "ASSERTION_SPENT")
        }
    }

    @Test(
        "Phone: register a number by SMS, verify it by voice, from the signed gateway messages", arguments: Backend.all)
    func phone(_ backend: Backend) async throws {
        let gateway = WebhookReceiver()
        try await gateway.run { url in
            let secret = Data("gateway-secret-0123456789".utf8)
            var tfa = TFASettings()
            tfa.phoneGateway = WebhookSettings(url: url, secret: secret)
            let server = try await TestServer.make(backend, tfa: tfa)
            defer { Task { await server.shutdown() } }
            try await server.live { client in
                let flow = TFAClient(server: server, client: client)
                try await flow.createAccount("bob")
                let first = try await flow.interruption("bob")
                #expect(first.errorCode == 403102)
                #expect(
                    first.inactiveProviders == [
                        TFAProviderInfo(name: .totp), TFAProviderInfo(name: .phone), TFAProviderInfo(name: .push),
                        TFAProviderInfo(name: .passkey),
                    ])
                let assertion = try await flow.start(first.regToken, .register, provider: .phone)
                let invalid = try await flow.post(
                    "/api/tfa/phone/send", TFAPhoneSendRequest(assertion: assertion, phone: "777 123 456"))
                #expect(invalid.status == 400)
                let sent = try await flow.post(
                    "/api/tfa/phone/send",
                    TFAPhoneSendRequest(assertion: assertion, phone: "+420777123456", method: .sms, lang: "cs-CZ")
                ).decode(TFACodeSent.self)
                let delivery = try #require(try await gateway.wait(for: 1).first)
                let signature = try #require(delivery.signature)
                #expect(
                    WebhookSignature.isValid(
                        signature, body: delivery.body, secret: secret,
                        now: Int64(server.clock.now.timeIntervalSince1970)))
                let message = try OperatorJSON.decoder().decode(PhoneMessage.self, from: delivery.body)
                #expect(message.to == "+420777123456")
                #expect(message.channel == .sms)
                #expect(message.lang == "cs")
                #expect(message.text.contains(message.code))
                let proof = try await flow.post(
                    "/api/tfa/phone/verify",
                    TFACodeVerifyRequest(assertion: assertion, phvToken: sent.phvToken, code: message.code)
                ).decode(TFAProofResponse.self)
                let success = try await flow.post(
                    "/api/tfa/finalize",
                    TFAFinalizeRequest(
                        regToken: first.regToken, assertion: assertion, providerAssertion: proof.providerAssertion)
                ).decode(TFALoginSuccess.self)
                #expect(try await flow.verifyLoginToken(success.loginToken).amr == ["pwd", "sms", "mfa"])

                // Registered: the next login verifies it, by voice this time.
                let second = try await flow.interruption("bob")
                #expect(second.activeProviders == [TFAProviderInfo(name: .phone)])
                let verifying = try await flow.start(second.regToken, .verify, provider: .phone)
                let phones = try await flow.post("/api/tfa/phone/phones", TFAAssertionRequest(assertion: verifying))
                    .decode(TFAPhonesResponse.self)
                let registeredAt = try #require(
                    try await server.store.tfaFactors(applicationId: server.application.id, userId: "bob").first?
                        .lastVerifiedAt)
                #expect(phones.phones.first?.lastVerification != nil)
                #expect(phones.phones.count == 1)
                #expect(phones.phones.first?.obfuscated == "+********3456")
                #expect(phones.phones.first?.lastMethod == .sms)
                let voice = try await flow.post(
                    "/api/tfa/phone/send",
                    TFAPhoneSendRequest(assertion: verifying, phoneId: phones.phones[0].id, method: .voice)
                ).decode(TFACodeSent.self)
                let spoken = try OperatorJSON.decoder().decode(
                    PhoneMessage.self, from: try #require(try await gateway.wait(for: 2).last).body)
                #expect(spoken.channel == .voice)
                #expect(spoken.lang == "en")
                let voiceProof = try await flow.post(
                    "/api/tfa/phone/verify",
                    TFACodeVerifyRequest(assertion: verifying, phvToken: voice.phvToken, code: spoken.code)
                ).decode(TFAProofResponse.self)
                _ = try await flow.post(
                    "/api/tfa/finalize",
                    TFAFinalizeRequest(
                        regToken: second.regToken, assertion: verifying, providerAssertion: voiceProof.providerAssertion
                    )
                ).decode(TFALoginSuccess.self)
                // The sign-in by voice is the phone's latest verification.
                let verifiedAt = try #require(
                    try await server.store.tfaFactors(applicationId: server.application.id, userId: "bob").first?
                        .lastVerifiedAt)
                #expect(verifiedAt > registeredAt)
                // A code is single use with its assertion.
                let replay = try await flow.post(
                    "/api/tfa/phone/verify",
                    TFACodeVerifyRequest(assertion: verifying, phvToken: voice.phvToken, code: spoken.code))
                #expect(replay.code == "ASSERTION_SPENT")
            }
        }
    }
}

@Suite("Two-factor login by push approval on an Assent device")
struct TFAPushTests {
    @Test(
        "Opt in by approving on the SDK, then every sign-in is approved or rejected there; only opted-in devices count",
        arguments: Backend.all)
    func push(_ backend: Backend) async throws {
        let webhooks = WebhookReceiver()
        let secret = Data("webhook-secret-of-the-tests".utf8)
        try await webhooks.run { webhookURL in
            try await push(backend, webhooks, WebhookSettings(url: webhookURL, secret: secret))
        }
    }

    func push(_ backend: Backend, _ webhooks: WebhookReceiver, _ webhook: WebhookSettings) async throws {
        let server = try await TestServer.make(backend, webhook: webhook)
        defer { Task { await server.shutdown() } }
        let root = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: root) }
        try await server.live { http in
            let flow = TFAClient(server: server, client: http)
            try await flow.createAccount("alice")
            let phone = try await SDKClients.activatedClient(
                server, http, directory: root.appendingPathComponent("phone"))
            let tablet = try await SDKClients.activatedClient(
                server, http, directory: root.appendingPathComponent("tablet"))
            let phoneId = try #require(await phone.registrationId)
            let operations = OperationsService(client: phone)
            let tabletOperations = OperationsService(client: tablet)

            // Opt in the phone: it shows the opt-in request and approves it with the PIN.
            let first = try await flow.interruption("alice")
            #expect(first.inactiveProviders.contains(TFAProviderInfo(name: .push)))
            let optIn = try await flow.start(first.regToken, .register, provider: .push)
            let stranger = try await flow.post(
                "/api/tfa/push/optin", TFAPushOptInRequest(assertion: optIn, activationId: "not-a-device"))
            #expect(stranger.code == "UNKNOWN_DESTINATION")
            let asked = try await flow.post(
                "/api/tfa/push/optin", TFAPushOptInRequest(assertion: optIn, activationId: phoneId)
            ).decode(TFAPushSent.self)
            #expect(
                try await flow.post("/api/tfa/push/verify", TFAAssertionRequest(assertion: optIn))
                    .decode(TFAPushStatus.self).status == "PENDING")
            let request = try #require(try await operations.pending().value.first { $0.id == asked.operationId })
            #expect(request.formData.title == "Approve sign-ins with this phone?")
            try await operations.authorize(request, factor: .pin("1234"))
            let optedIn = try await flow.post("/api/tfa/push/verify", TFAAssertionRequest(assertion: optIn))
                .decode(TFAPushStatus.self)
            #expect(optedIn.status == "APPROVED")
            let success = try await flow.post(
                "/api/tfa/finalize",
                TFAFinalizeRequest(
                    regToken: first.regToken, assertion: optIn,
                    providerAssertion: try #require(optedIn.providerAssertion))
            ).decode(TFALoginSuccess.self)
            #expect(try await flow.verifyLoginToken(success.loginToken).amr == ["pwd", "hwk", "mfa"])
            func pushVerifiedAt() async throws -> Millis? {
                try await server.store.tfaFactors(applicationId: server.application.id, userId: "alice")
                    .first { $0.provider == .push }?.lastVerifiedAt
            }
            let optedInAt = try #require(try await pushVerifiedAt())

            // A sign-in reaches only the opted-in phone: the tablet neither lists it nor may approve it.
            let second = try await flow.interruption("alice")
            #expect(second.activeProviders == [TFAProviderInfo(name: .push)])
            let verifying = try await flow.start(second.regToken, .verify, provider: .push)
            let sent = try await flow.post("/api/tfa/push/send", TFAAssertionRequest(assertion: verifying))
                .decode(TFAPushSent.self)
            let again = try await flow.post("/api/tfa/push/send", TFAAssertionRequest(assertion: verifying))
                .decode(TFAPushSent.self)
            #expect(again.operationId == sent.operationId)
            #expect(try await operations.pending().value.contains { $0.id == sent.operationId })
            #expect(try await tabletOperations.pending().value.contains { $0.id == sent.operationId } == false)
            await #expect(throws: AssentError.self) { _ = try await tabletOperations.detail(id: sent.operationId) }
            // One outstanding push sign-in per account: a new one withdraws it.
            let third = try await flow.interruption("alice")
            let superseding = try await flow.start(third.regToken, .verify, provider: .push)
            let newer = try await flow.post("/api/tfa/push/send", TFAAssertionRequest(assertion: superseding))
                .decode(TFAPushSent.self)
            let withdrawn = try await server.store.operation(id: sent.operationId)
            #expect(withdrawn?.status == .canceled && withdrawn?.statusReason == "SUPERSEDED")
            #expect(try await operations.pending().value.map(\.id).contains(newer.operationId))
            let old = try await flow.post("/api/tfa/push/verify", TFAAssertionRequest(assertion: verifying))
            #expect(old.code == "PUSH_NOT_APPROVED")

            // Rejected on the phone: the website hears so.
            try await operations.reject(id: newer.operationId, reason: RejectReason.unexpectedOperation)
            let refusal = try await flow.post("/api/tfa/push/verify", TFAAssertionRequest(assertion: superseding))
            #expect(refusal.code == "PUSH_REJECTED")
            #expect(refusal.status == 403)

            // Number matching: the website shows a number; the phone offers three, and another one rejects the sign-in.
            let fifth = try await flow.interruption("alice")
            let mismatching = try await flow.start(fifth.regToken, .verify, provider: .push)
            let mismatch = try await flow.post("/api/tfa/push/send", TFAAssertionRequest(assertion: mismatching))
                .decode(TFAPushSent.self)
            let wrongOne = try #require(try await operations.pending().value.first { $0.id == mismatch.operationId })
            let number = try #require(mismatch.number)
            let choices = try #require(wrongOne.numberMatching?.choices)
            #expect(wrongOne.numberMatching?.mode == "choose" && choices.count == 3 && Set(choices).count == 3)
            #expect(choices.contains(number) && choices.allSatisfy { (10...99).contains($0) })
            do {
                try await operations.authorize(wrongOne, factor: .pin("1234"))
                Issue.record("An approval without the number was accepted.")
            } catch let error as AssentError {
                #expect(error.code == .numberMissing, "no number: refused, nothing counted")
            }
            let wrongNumber: Int = try #require(choices.first { $0 != number })
            do {
                try await operations.authorize(wrongOne, factor: .pin("1234"), number: wrongNumber)
                Issue.record("A wrong number was accepted.")
            } catch let error as AssentError {
                #expect(error.code == .numberMismatch)
            }
            let wrongVerdict = try await flow.post("/api/tfa/push/verify", TFAAssertionRequest(assertion: mismatching))
            #expect(wrongVerdict.code == "PUSH_REJECTED")
            #expect(String(decoding: wrongVerdict.body, as: UTF8.self).contains("another number"))
            let audited = try await server.store.auditEvents(AuditFilter(), limit: 200)
            #expect(audited.contains { $0.type == "operation.number_mismatch" })
            let mismatched = try await server.store.operation(id: mismatch.operationId)
            #expect(mismatched?.status == .rejected && mismatched?.statusReason == "WRONG_NUMBER")
            #expect(mismatched?.failedAttempts == 0, "the missing number counted nothing")

            // Approved on the phone with the right number: signed in.
            let fourth = try await flow.interruption("alice")
            let approving = try await flow.start(fourth.regToken, .verify, provider: .push)
            // The website passes on what it knows of the person's browser: the phone shows it, and signs it.
            let safari =
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 "
                + "Safari/605.1.15"
            let approval = try await flow.post(
                "/api/tfa/push/send",
                TFAPushSendRequest(assertion: approving, userAgent: safari, ipAddress: "203.0.113.7")
            ).decode(TFAPushSent.self)
            let shown = try #require(try await operations.pending().value.first { $0.id == approval.operationId })
            #expect(shown.formData.title == "Sign in to \(server.application.name)?")
            let context = Dictionary(
                shown.formData.attributes.map { ($0.id, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
            #expect(context["login.site"] == server.application.name)
            #expect(context["login.browser"] == "Safari on macOS" && context["login.address"] == "203.0.113.7")
            #expect(context["login.time"]?.hasSuffix(" UTC") == true)
            #expect(shown.data.contains("Safari on macOS — 203.0.113.7 — "), "the context is in the signed data")
            #expect(shown.formData.message.hasPrefix("Safari on macOS — 203.0.113.7 — "))
            try await operations.authorize(shown, factor: .pin("1234"), number: approval.number)
            let approved = try await flow.post("/api/tfa/push/verify", TFAAssertionRequest(assertion: approving))
                .decode(TFAPushStatus.self)
            let signedIn = try await flow.post(
                "/api/tfa/finalize",
                TFAFinalizeRequest(
                    regToken: fourth.regToken, assertion: approving,
                    providerAssertion: try #require(approved.providerAssertion))
            ).decode(TFALoginSuccess.self)
            #expect(try await flow.verifyLoginToken(signedIn.loginToken).tfa == "push")
            // The approved sign-in is the phone's latest verification.
            let lastSignIn = try #require(try await pushVerifiedAt())
            #expect(lastSignIn > optedInAt)

            /// Starts a push sign-in; the answer to push/send.
            func pushSignIn() async throws -> (assertion: String, answer: TFAClient.Answer) {
                let interruption = try await flow.interruption("alice")
                let assertion = try await flow.start(interruption.regToken, .verify, provider: .push)
                return (assertion, try await flow.post("/api/tfa/push/send", TFAAssertionRequest(assertion: assertion)))
            }
            // Push bombing: a third rejected (or unanswered) sign-in within 15 minutes starts a cool-down.
            let rejectedThird = try await pushSignIn()
            try await operations.reject(
                id: try rejectedThird.answer.decode(TFAPushSent.self).operationId, reason: RejectReason.unknown)
            let coolingDown = try await pushSignIn().answer
            #expect(coolingDown.status == 429 && coolingDown.code == "PUSH_LIMITED", "\(coolingDown.fields)")
            server.clock.advance(by: 901)

            // "This wasn't me": the sign-in is denied, push sign-ins are suspended, the event is recorded.
            let reported = try await pushSignIn()
            let reportedId = try reported.answer.decode(TFAPushSent.self).operationId
            try await operations.reject(id: reportedId, reason: RejectReason.fraud)
            let denied = try await flow.post("/api/tfa/push/verify", TFAAssertionRequest(assertion: reported.assertion))
            #expect(denied.code == "PUSH_REJECTED")
            let suspended = try await pushSignIn().answer
            #expect(suspended.status == 403 && suspended.code == "PUSH_SUSPENDED", "\(suspended.fields)")
            let events = try await server.store.auditEvents(AuditFilter(typePrefix: "security."), limit: 10)
            #expect(events.contains { $0.type == "security.fraud_reported" && $0.userId == "alice" })
            // The relying party's webhook receives it, signed, besides the status change.
            var fraudWebhook: WebhookPayload?
            for _ in 0..<200 where fraudWebhook == nil {
                fraudWebhook = webhooks.deliveries.withLock { $0 }.lazy.compactMap { delivery -> WebhookPayload? in
                    guard let signature = delivery.signature,
                        WebhookSignature.isValid(
                            signature, body: delivery.body, secret: webhook.secret,
                            now: Int64(Date().timeIntervalSince1970), tolerance: 86_400 * 2)
                    else { return nil }
                    return try? OperatorJSON.decoder().decode(WebhookPayload.self, from: delivery.body)
                }.first { $0.event == "security.fraud_reported" }
                if fraudWebhook == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(fraudWebhook?.operationId == reportedId && fraudWebhook?.userId == "alice")
            #expect(fraudWebhook?.status == .rejected && fraudWebhook?.statusReason == RejectReason.fraud)
            // The operator sees it on the user's console page.
            try await Application(router: server.router).test(.router) { client in
                let signedIn = try await PageAnswer.consoleSignIn(client, ["apiKey": server.apiKey])
                let cookie: String = try #require(signedIn.consoleSession)
                let page = try await PageAnswer.fetch(client, .get, "/console/users/alice", cookie: cookie)
                #expect(page.body.contains("id=\"fraud-notice\""), "\(page.body.prefix(300))")
                #expect(
                    page.body.contains("alice reported a sign-in as fraud on their phone (operation \(reportedId))"))
            }
            server.clock.advance(by: 3_601)
            #expect(try await pushSignIn().answer.status == 200, "the suspension ends")
        }
    }
}

extension TFAPushTests {
    @Test("Push sign-ins per account per hour are limited, as the application's policy says")
    func hourlyLimit() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        let root = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: root) }
        try await server.live { http in
            let flow = TFAClient(server: server, client: http)
            try await flow.createAccount("alice")
            let policy = try await server.operatorCall(
                http, "PUT", "/api/v1/tfa/policy",
                body: try OperatorJSON.encoder().encode(
                    TFAPolicy(required: true, providers: [.totp, .push], pushLoginsPerHour: 2)),
                as: TFAPolicy.self)
            #expect(policy.pushLoginsPerHour == 2 && policy.pushRefusalLimit == 3)
            let phone = try await SDKClients.activatedClient(server, http, directory: root)
            // The phone's factor put in place directly (the opt-in is the test above's).
            try await server.store.insertTFAFactor(
                TFAFactorRecord(
                    id: "push", applicationId: server.application.id, userId: "alice", provider: .push,
                    state: .active, destination: await phone.registrationId, createdAt: server.environment.nowMillis))
            var answers: [TFAClient.Answer] = []
            for _ in 0..<3 {
                let interruption = try await flow.interruption("alice")
                let assertion = try await flow.start(interruption.regToken, .verify, provider: .push)
                answers.append(try await flow.post("/api/tfa/push/send", TFAAssertionRequest(assertion: assertion)))
            }
            #expect(answers.map(\.status) == [200, 200, 429])
            #expect(answers[2].code == "PUSH_LIMITED")
            server.clock.advance(by: 3_601)
            let interruption = try await flow.interruption("alice")
            let assertion = try await flow.start(interruption.regToken, .verify, provider: .push)
            #expect(try await flow.post("/api/tfa/push/send", TFAAssertionRequest(assertion: assertion)).status == 200)
        }
    }
}

@Suite("Login context on the phone")
struct LoginContextTests {
    @Test("User-Agent strings read as browser and system; the line and the time")
    func userAgents() {
        let cases: [(String, String?)] = [
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 "
                    + "Safari/537.36 Edg/131.0.0.0", "Edge on Windows"
            ),
            (
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 "
                    + "Safari/537.36", "Chrome on Linux"
            ),
            ("Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "Firefox on Linux"),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
                    + "Version/18.1 Mobile/15E148 Safari/604.1", "Safari on iOS"
            ),
            (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 "
                    + "Mobile Safari/537.36", "Chrome on Android"
            ),
            ("curl/8.5.0", nil),
        ]
        for (agent, expected) in cases {
            #expect(LoginContext.describe(agent) == expected, "\(agent)")
        }
        let context = LoginContext(
            site: "Example Bank", userAgent: cases[0].0, address: "203.0.113.7",
            at: Date(timeIntervalSince1970: 1_764_165_720))
        #expect(context.line == "Edge on Windows — 203.0.113.7 — 14:02 UTC")
        #expect(context.attributes.map(\.label) == ["Site", "Browser", "Address", "Time"])
    }
}
