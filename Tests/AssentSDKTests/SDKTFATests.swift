import AssentModel
import AssentSDK
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

@Suite("SDK two-factor login (seed 004): interruptions, resolvers, biometric session")
struct SDKTFATests {
    @Test(
        "TOTP through the resolvers: register by QR, wrong and right codes, remembered device, verification",
        arguments: Backend.all)
    func totp(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { http in
            try await TFAClient(server: server, client: http).createAccount("alice")
            let tfa = TFAService(server: http.base)
            guard
                case .interrupted(.pendingTwoFactorRegistration(let providers, let factory)) =
                    try await tfa.login(userId: "alice", password: "correct horse battery")
            else { throw TestFailure("expected a registration interruption") }
            #expect(providers == [.totp, .push, .passkey])
            #expect(try await factory.providers().inactiveProviders.map(\.name) == [.totp, .push, .passkey])
            let registration = try await factory.getResolver(for: RegisterTotpResolver.self).registerTotp()
            #expect(try await QRReader.scan(png: registration.qrImage) == registration.uri)
            let code = try await Oathtool.code(uri: registration.uri, at: server.clock.now)
            #expect(
                try await registration.resolver.verifyTOTPCode(TFACodes.other(than: code))
                    == .invalidCode(attemptsLeft: 4))
            guard
                case .resolved(let session) = try await registration.resolver.verifyTOTPCode(code, rememberDevice: true)
            else { throw TestFailure("the right code did not resolve the login") }
            #expect(session.userId == "alice")
            #expect(try await tfa.authenticatedSession() == session)
            let remembered = try #require(await tfa.deviceToken)

            // The remembered app signs in with the password alone; another app is asked for the code.
            guard case .success = try await tfa.login(userId: "alice", password: "correct horse battery") else {
                throw TestFailure("the remembered device was asked again")
            }
            let other = TFAService(server: http.base)
            guard
                case .interrupted(.pendingTwoFactorVerification(let active, let verification)) =
                    try await other.login(userId: "alice", password: "correct horse battery")
            else { throw TestFailure("expected a verification interruption") }
            #expect(active == [.totp])
            server.clock.advance(by: 30)
            let next = try await Oathtool.code(uri: registration.uri, at: server.clock.now)
            guard case .resolved = try await verification.getResolver(for: VerifyTotpResolver.self).verifyTOTPCode(next)
            else { throw TestFailure("the next code did not resolve the login") }
            #expect(await other.deviceToken == nil)
            #expect(remembered.split(separator: ".").count == 3)

            // A wrong password is an error, not an interruption.
            await #expect {
                try await tfa.login(userId: "alice", password: "nope nope nope")
            } throws: { ($0 as? AssentError)?.serverCode == "INVALID_LOGIN" }
        }
    }

    @Test("E-mail and phone codes through the resolvers", arguments: Backend.all)
    func codes(_ backend: Backend) async throws {
        let smtp = try await SMTPTestServer(mode: .starttls)
        let gateway = WebhookReceiver()
        try await gateway.run { url in
            var settings = TFASettings()
            settings.mail = smtp.settings()
            settings.phoneGateway = WebhookSettings(url: url, secret: Data("gateway-secret-0123456789".utf8))
            let server = try await TestServer.make(backend, tfa: settings)
            defer { Task { await server.shutdown() } }
            try await server.live { http in
                _ = try await server.operatorCall(
                    http, "POST", "/api/v1/tfa/accounts",
                    body: try OperatorJSON.encoder().encode(
                        CreateTFAAccountRequest(
                            userId: "bob", password: "correct horse battery", emails: ["bob@bank.example"])),
                    as: TFAAccountInfo.self)
                let tfa = TFAService(server: http.base)
                guard
                    case .interrupted(.pendingTwoFactorVerification(let active, let factory)) =
                        try await tfa.login(userId: "bob", password: "correct horse battery")
                else { throw TestFailure("expected a verification interruption") }
                #expect(active == [.email])
                let emails = factory.getResolver(for: RegisteredEmailsResolver.self)
                let addresses = try await emails.getRegisteredEmails()
                #expect(addresses.map(\.obfuscated) == ["b***b@b***k.example"])
                let verify = try await emails.sendEmailCode(to: addresses[0])
                let mail = try #require(try await smtp.wait(for: 1).first)
                let code = try #require(TFACodes.code(in: mail.body))
                guard case .resolved = try await verify.verifyCode(code) else {
                    throw TestFailure("the mailed code did not resolve the login")
                }

                // A new account registers a phone by SMS.
                try await TFAClient(server: server, client: http).createAccount("carol")
                guard
                    case .interrupted(.pendingTwoFactorRegistration(_, let registration)) =
                        try await tfa.login(userId: "carol", password: "correct horse battery")
                else { throw TestFailure("expected a registration interruption") }
                let phone = try await registration.getResolver(for: RegisterPhoneResolver.self)
                    .registerPhone("+420777123456", method: .sms)
                let message = try OperatorJSON.decoder().decode(
                    PhoneMessage.self, from: try #require(try await gateway.wait(for: 1).first).body)
                #expect(try await phone.verifyCode(TFACodes.other(than: message.code)) == .invalidCode(attemptsLeft: 4))
                guard case .resolved(let session) = try await phone.verifyCode(message.code) else {
                    throw TestFailure("the SMS code did not resolve the login")
                }
                #expect(session.userId == "carol")
                guard
                    case .interrupted(.pendingTwoFactorVerification(_, let again)) =
                        try await TFAService(server: http.base).login(
                            userId: "carol", password: "correct horse battery")
                else { throw TestFailure("expected a verification interruption") }
                let phones = again.getResolver(for: RegisteredPhonesResolver.self)
                let registered = try await phones.getRegisteredPhones()
                #expect(registered.map(\.obfuscated) == ["+********3456"])
                let voice = try await phones.sendVerificationCode(to: registered[0], method: .voice)
                let spoken = try OperatorJSON.decoder().decode(
                    PhoneMessage.self, from: try #require(try await gateway.wait(for: 2).last).body)
                #expect(spoken.channel == .voice)
                guard case .resolved = try await voice.verifyCode(spoken.code) else {
                    throw TestFailure("the voice code did not resolve the login")
                }
            }
        }
    }

    @Test(
        "Push through the resolver, approved by the SDK's operations; the biometric session locks and unlocks",
        arguments: Backend.all)
    func pushAndBiometry(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let root = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: root) }
        try await server.live { http in
            try await TFAClient(server: server, client: http).createAccount("alice")
            let client = try await SDKClients.activatedClient(server, http, directory: root)
            let operations = OperationsService(client: client)
            let activationId = try #require(await client.registrationId)
            let tfa = TFAService(server: http.base)
            guard
                case .interrupted(.pendingTwoFactorRegistration(_, let factory)) =
                    try await tfa.login(userId: "alice", password: "correct horse battery")
            else { throw TestFailure("expected a registration interruption") }
            let push = factory.getResolver(for: PushTFAResolver.self)
            let optIn = try await push.optIn(activationId: activationId)
            async let waited = push.waitForApproval(interval: .milliseconds(200))
            let request = try #require(try await operations.pending().value.first { $0.id == optIn.operationId })
            try await operations.authorize(request, factor: .pin("1234"))
            let session = try await waited
            #expect(session.userId == "alice")

            // A sign-in approved on the phone.
            let web = TFAService(server: http.base)
            guard
                case .interrupted(.pendingTwoFactorVerification(let active, let verification)) =
                    try await web.login(userId: "alice", password: "correct horse battery")
            else { throw TestFailure("expected a verification interruption") }
            #expect(active == [.push])
            let approval = verification.getResolver(for: PushTFAResolver.self)
            let sent = try await approval.sendVerification()
            async let approved = approval.waitForApproval(interval: .milliseconds(200))
            let shown = try #require(try await operations.pending().value.first { $0.id == sent.operationId })
            // The website shows the number it was sent; the phone offers it among three.
            #expect(shown.numberMatching?.choices.contains(try #require(sent.number)) == true)
            try await operations.authorize(shown, factor: .pin("1234"), number: sent.number)
            #expect(try await approved.userId == "alice")

            // The biometric session: opt in, lock (no authenticated call), a failed check, unlock, opt out.
            let biometry = SimulatedBiometryProvider()
            let guarded = BiometricSession(service: web, provider: biometry)
            await #expect(throws: AssentError.self) { try await guarded.lock() }
            try await guarded.optIn()
            #expect(await guarded.isOptIn)
            let before = try await web.authenticatedSession()
            try await guarded.lock()
            #expect(await guarded.isLocked)
            await #expect {
                try await web.authenticatedSession()
            } throws: { ($0 as? AssentError)?.code == .sessionLocked }
            biometry.nextOutcome = .failure
            await #expect {
                try await guarded.unlock()
            } throws: { ($0 as? AssentError)?.code == .biometryFailed }
            #expect(await guarded.isLocked)
            biometry.nextOutcome = .success
            try await guarded.unlock(prompt: "Unlock your bank")
            #expect(await !guarded.isLocked)
            #expect(try await web.authenticatedSession() == before)
            #expect(biometry.prompts.last == "Unlock your bank")
            try await guarded.optOut()
            #expect(biometry.accounts.isEmpty)
            #expect(await !guarded.isOptIn)
        }
    }
}
