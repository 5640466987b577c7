import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import JWTKit
import Testing

@testable import AssentServerTesting

@Suite("Two-factor login (seed 004): accounts, the interruption, TOTP, remember device")
struct TFATests {
    @Test(
        "TOTP: registration by QR, codes from oathtool, replay refused, remember device and revocation",
        arguments: Backend.all)
    func totpEndToEnd(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let tfa = TFAClient(server: server, client: client)
            try await tfa.createAccount("alice")

            let wrong = try await tfa.login("alice", password: "wrong password")
            #expect(wrong.status == 401)
            #expect(wrong.code == "INVALID_LOGIN")
            let unknown = try await tfa.login("nobody")
            #expect(unknown.status == 401)
            #expect(unknown.code == "INVALID_LOGIN")
            // Both in the audit; a user id that is no account's is not written (it may be a password typed there).
            let failed = try await server.store.auditEvents(AuditFilter(typePrefix: "tfa.login_failed"), limit: 5)
            #expect(failed.map(\.userId) == [nil, "alice"] && !failed.contains { $0.detail.contains("nobody") })

            // No factor yet, and the default policy requires one: pending registration.
            let first = try await tfa.interruption("alice")
            #expect(first.errorCode == 403102)
            #expect(first.code == "PENDING_TFA_REGISTRATION")
            #expect(first.activeProviders.isEmpty)
            #expect(first.inactiveProviders == [.totp, .push, .passkey].map(TFAProviderInfo.init))
            let providers = try await tfa.post("/api/tfa/providers", TFAProvidersRequest(regToken: first.regToken))
                .decode(TFAProvidersResponse.self)
            #expect(providers.inactiveProviders == [.totp, .push, .passkey].map(TFAProviderInfo.init))
            let verifyFirst = try await tfa.post(
                "/api/tfa/init", TFAInitRequest(regToken: first.regToken, provider: .totp, mode: .verify))
            #expect(verifyFirst.code == "PROVIDER_NOT_REGISTERED")

            let assertion = try await tfa.start(first.regToken, .register)
            let registered = try await tfa.post("/api/tfa/totp/register", TOTPRegisterRequest(assertion: assertion))
                .decode(TOTPRegisterResponse.self)
            let repeated = try await tfa.post("/api/tfa/totp/register", TOTPRegisterRequest(assertion: assertion))
                .decode(TOTPRegisterResponse.self)
            #expect(repeated.uri == registered.uri && repeated.sctToken == registered.sctToken)
            // The QR image read back by zbarimg is the URI; the URI follows the key-URI rules.
            #expect(registered.qrCode.hasPrefix("data:image/png;base64,"))
            let png = try #require(
                Data(base64Encoded: String(registered.qrCode.dropFirst("data:image/png;base64,".count))))
            #expect(try await QRReader.scan(png: png) == registered.uri)
            let components = try #require(URLComponents(string: registered.uri))
            #expect(components.scheme == "otpauth" && components.host == "totp")
            #expect(components.path == "/\(server.application.name):alice")
            let items = Dictionary(
                uniqueKeysWithValues: (components.queryItems ?? []).map { ($0.name, $0.value ?? "") })
            #expect(items["issuer"] == server.application.name)
            #expect(items["algorithm"] == "SHA1" && items["digits"] == "6" && items["period"] == "30")
            #expect(items["secret"]?.count == 32 && items["secret"]?.contains("=") == false)

            // A wrong code says how many tries are left; the authenticator's code passes.
            let code = try await Oathtool.code(uri: registered.uri, at: server.clock.now)
            let bad = try await tfa.verify(assertion, TFACodes.other(than: code), sctToken: registered.sctToken)
            #expect(bad.status == 400)
            #expect(bad.errorCode == 400006)
            #expect(bad.fields["attemptsLeft"] as? Int == 4)
            let forged = try await tfa.verify(assertion, code, sctToken: "not-the-secret")
            #expect(forged.code == "INVALID_SCT_TOKEN")
            let proof = try await tfa.verify(assertion, code, sctToken: registered.sctToken)
                .decode(TFAProofResponse.self)
            let again = try await tfa.verify(assertion, code, sctToken: registered.sctToken)
            #expect(again.code == "ASSERTION_SPENT")

            let finalize = TFAFinalizeRequest(
                regToken: first.regToken, assertion: assertion, providerAssertion: proof.providerAssertion,
                rememberDevice: true)
            let wrongProof = try await tfa.post(
                "/api/tfa/finalize",
                TFAFinalizeRequest(regToken: first.regToken, assertion: assertion, providerAssertion: "forged"))
            #expect(wrongProof.code == "INVALID_PROVIDER_ASSERTION")
            let success = try await tfa.post("/api/tfa/finalize", finalize).decode(TFALoginSuccess.self)
            #expect(success.userId == "alice")
            let deviceToken = try #require(success.deviceToken)
            let claims = try await tfa.verifyLoginToken(success.loginToken)
            #expect(claims.sub.value == "alice")
            #expect(claims.amr == ["pwd", "otp", "mfa"])
            #expect(claims.tfa == "totp")
            // The regToken is single use.
            let replay = try await tfa.post("/api/tfa/finalize", finalize)
            #expect(replay.status == 401)
            #expect(replay.code == "INVALID_REG_TOKEN")

            // Next login without the device token: pending verification; registering another factor is refused.
            let second = try await tfa.interruption("alice")
            #expect(second.errorCode == 403101)
            #expect(second.activeProviders == [TFAProviderInfo(name: .totp)])
            let register = try await tfa.post(
                "/api/tfa/init", TFAInitRequest(regToken: second.regToken, provider: .totp, mode: .register))
            #expect(register.code == "REGISTRATION_NOT_ALLOWED")
            let verifying = try await tfa.start(second.regToken, .verify)
            // The code of the step already used is a replay.
            let used = try await tfa.verify(verifying, code)
            #expect(used.code == "CODE_ALREADY_USED")
            #expect(used.errorCode == 400006)
            server.clock.advance(by: 30)
            let next = try await Oathtool.code(uri: registered.uri, at: server.clock.now)
            let nextProof = try await tfa.verify(verifying, next).decode(TFAProofResponse.self)
            let plain = try await tfa.post(
                "/api/tfa/finalize",
                TFAFinalizeRequest(
                    regToken: second.regToken, assertion: verifying, providerAssertion: nextProof.providerAssertion)
            ).decode(TFALoginSuccess.self)
            #expect(plain.deviceToken == nil)

            // The remembered device skips the second factor, until the operator revokes it.
            let remembered = try await tfa.login("alice", deviceToken: deviceToken)
            #expect(remembered.status == 200)
            let rememberedClaims = try await tfa.verifyLoginToken(
                try remembered.decode(TFALoginSuccess.self).loginToken)
            #expect(rememberedClaims.tfa == "remembered-device")
            let devices = try await server.operatorCall(
                client, "GET", "/api/v1/tfa/accounts/alice/devices", as: RememberedDeviceList.self)
            #expect(devices.devices.count == 1)
            #expect(devices.devices.first?.lastUsedAt != nil)
            let revoked = try await client.send(
                "DELETE", "/api/v1/tfa/devices/\(devices.devices[0].id)",
                headers: ["Authorization": "Bearer \(server.apiKey)"])
            #expect(revoked.status == 204)
            let afterRevocation = try await tfa.interruption("alice", deviceToken: deviceToken)
            #expect(afterRevocation.errorCode == 403101)
            // A device token is no regToken, and a login token is no device token.
            let confused = try await tfa.post("/api/tfa/providers", TFAProvidersRequest(regToken: deviceToken))
            #expect(confused.code == "INVALID_REG_TOKEN")
            let asDevice = try await tfa.interruption("alice", deviceToken: success.loginToken)
            #expect(asDevice.errorCode == 403101)

            let account = try await server.operatorCall(
                client, "GET", "/api/v1/tfa/accounts/alice", as: TFAAccountInfo.self)
            #expect(account.hasPassword)
            #expect(account.factors.map(\.provider) == [.totp])
            #expect(account.factors.first?.lastVerification != nil)
        }
    }

    @Test(
        "Tries: five per assertion even under parallel guesses, the account's limit, expiry, password lockout",
        arguments: Backend.all)
    func triesAndLimits(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let tfa = TFAClient(server: server, client: client)
            try await tfa.createAccount("bob")
            let (uri, _) = try await tfa.registerTOTP("bob")
            server.clock.advance(by: 30)

            // Twenty parallel wrong guesses at one assertion: exactly five are compared.
            let flow = try await tfa.interruption("bob")
            let assertion = try await tfa.start(flow.regToken, .verify)
            let code = try await Oathtool.code(uri: uri, at: server.clock.now)
            let wrong = TFACodes.other(than: code)
            let codes = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<20 { group.addTask { try await tfa.verify(assertion, wrong).code } }
                return try await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(codes.filter { $0 == "INVALID_CODE" }.count == 5)
            #expect(codes.filter { $0 == "ASSERTION_SPENT" }.count == 15)
            // Even the right code is refused once the tries are gone.
            #expect(try await tfa.verify(assertion, code).code == "ASSERTION_SPENT")

            // Five more wrong codes on a new assertion reach the account's limit (10 per 15 minutes): 429.
            let retry = try await tfa.start(flow.regToken, .verify)
            for left in (0..<5).reversed() {
                #expect(try await tfa.verify(retry, wrong).fields["attemptsLeft"] as? Int == left)
            }
            let limited = try await tfa.start(flow.regToken, .verify)
            let refused = try await client.send(
                "POST", "/api/tfa/totp/verify", headers: ["Content-Type": "application/json"],
                body: try OperatorJSON.encoder().encode(TOTPVerifyRequest(assertion: limited, code: code)))
            #expect(refused.status == 429)
            #expect(refused.header("Retry-After") != nil)

            // The regToken expires with its flow.
            server.clock.advance(by: 601)
            let expired = try await tfa.post("/api/tfa/providers", TFAProvidersRequest(regToken: flow.regToken))
            #expect(expired.status == 401)
            #expect(expired.code == "INVALID_REG_TOKEN")

            // Five wrong passwords from one address refuse that address's logins to the account for the window, even
            // with the right password (another address is only slowed down: LockOutTests).
            try await tfa.createAccount("carol")
            for _ in 0..<5 { #expect(try await tfa.login("carol", password: "guess guess").status == 401) }
            #expect(try await tfa.login("carol").status == 429)
        }
    }

    @Test(
        "Policy: optional second factor, providers offered, the relying party's own first factor",
        arguments: Backend.all)
    func policyAndRelyingParty(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let tfa = TFAClient(server: server, client: client)
            let key = ["Authorization": "Bearer \(server.apiKey)", "Content-Type": "application/json"]
            let policy = try await server.operatorCall(client, "GET", "/api/v1/tfa/policy", as: TFAPolicy.self)
            // The defaults: required, every offered provider, number matching, the server's push-bombing limits.
            #expect(
                policy
                    == TFAPolicy(
                        required: true, providers: [.totp, .push, .passkey, .backup], numberMatching: "choose",
                        pushLoginsPerHour: 10,
                        pushRefusalLimit: 3, pushRefusalWindow: 900, pushFraudSuspension: 3_600))
            let unknownMode = try await client.send(
                "PUT", "/api/v1/tfa/policy", headers: key,
                body: try OperatorJSON.encoder().encode(
                    TFAPolicy(required: true, providers: [.push], numberMatching: "guess")))
            #expect(unknownMode.status == 400)
            let typed = try await server.operatorCall(
                client, "PUT", "/api/v1/tfa/policy",
                body: try OperatorJSON.encoder().encode(
                    TFAPolicy(required: true, providers: [.push], numberMatching: "type")),
                as: TFAPolicy.self)
            #expect(typed.numberMatching == "type" && typed.pushLoginsPerHour == 10)
            let zeroLimit = try await client.send(
                "PUT", "/api/v1/tfa/policy", headers: key,
                body: try OperatorJSON.encoder().encode(
                    TFAPolicy(required: true, providers: [.push], pushLoginsPerHour: 0)))
            #expect(zeroLimit.status == 400)
            let unoffered = try await client.send(
                "PUT", "/api/v1/tfa/policy", headers: key,
                body: try OperatorJSON.encoder().encode(TFAPolicy(required: true, providers: [.email])))
            #expect(unoffered.status == 409 && unoffered.errorCode == "ERR_PROVIDER_NOT_OFFERED")
            _ = try await server.operatorCall(
                client, "PUT", "/api/v1/tfa/policy",
                body: try OperatorJSON.encoder().encode(TFAPolicy(required: false, providers: [.totp])),
                as: TFAPolicy.self)

            // Optional and no factor: the password alone signs in.
            try await tfa.createAccount("dave")
            let plain = try await tfa.login("dave")
            #expect(plain.status == 200)
            let claims = try await tfa.verifyLoginToken(try plain.decode(TFALoginSuccess.self).loginToken)
            #expect(claims.amr == ["pwd"])
            #expect(claims.tfa == nil)

            // The relying party checked the password itself: Assent starts the second factor for its user.
            let started = try await server.operatorCall(
                client, "POST", "/api/v1/tfa/logins",
                body: try OperatorJSON.encoder().encode(StartTFALoginRequest(userId: "dave")),
                as: StartTFALoginResponse.self)
            #expect(started.success != nil)
            #expect(started.interruption == nil)
            _ = try await server.operatorCall(
                client, "PUT", "/api/v1/tfa/policy",
                body: try OperatorJSON.encoder().encode(TFAPolicy(required: true, providers: [.totp])),
                as: TFAPolicy.self)
            let pending = try await server.operatorCall(
                client, "POST", "/api/v1/tfa/logins",
                body: try OperatorJSON.encoder().encode(StartTFALoginRequest(userId: "frank")),
                as: StartTFALoginResponse.self)
            let interruption = try #require(pending.interruption)
            #expect(interruption.errorCode == 403102)
            let (_, success) = try await tfa.registerTOTP(interruption)
            let rpClaims = try await tfa.verifyLoginToken(success.loginToken)
            #expect(rpClaims.sub.value == "frank")
            #expect(rpClaims.amr == ["otp", "mfa"])

            // Scopes: a key without tfa:write cannot start second factors.
            let reader = try await server.operatorCall(
                client, "POST", "/api/v1/api-keys",
                body: try JSONSerialization.data(withJSONObject: ["name": "reader", "scopes": ["tfa:read"]]),
                as: CreateAPIKeyResponse.self)
            let forbidden = try await client.send(
                "POST", "/api/v1/tfa/logins",
                headers: ["Authorization": "Bearer \(reader.apiKey)", "Content-Type": "application/json"],
                body: try OperatorJSON.encoder().encode(StartTFALoginRequest(userId: "frank")))
            #expect(forbidden.status == 403)
        }
    }
}

@Suite("Password hashes")
struct PasswordHasherTests {
    @Test("RFC 7914 §12 vector: scrypt(\"password\", \"NaCl\", N=1024, r=8, p=16) verifies in the stored form")
    func rfcVector() async throws {
        // The first 32 of the RFC's 64 bytes: scrypt ends in PBKDF2, whose output blocks are independent.
        let expected = Data(
            [
                0xfd, 0xba, 0xbe, 0x1c, 0x9d, 0x34, 0x72, 0x00, 0x78, 0x56, 0xe7, 0x19, 0x0d, 0x01, 0xe9, 0xfe,
                0x7c, 0x6a, 0xd7, 0xcb, 0xc8, 0x23, 0x78, 0x30, 0xe7, 0x73, 0x76, 0x63, 0x4b, 0x37, 0x31, 0x62,
            ] as [UInt8])
        let stored =
            "scrypt$ln=10,r=8,p=16$\(Data("NaCl".utf8).base64EncodedString())$\(expected.base64EncodedString())"
        let hasher = PasswordHasher.default
        #expect(try await hasher.verify("password", against: stored))
        #expect(try await !hasher.verify("Password", against: stored))
        #expect(try await !hasher.verify("password", against: stored.replacingOccurrences(of: "ln=10", with: "ln=11")))
        #expect(try await !hasher.verify("password", against: "plain$password"))
    }

    @Test("New hashes carry their parameters and a fresh salt; the default cost (32 MiB) hashes and verifies")
    func defaults() async throws {
        // Two derivations at the default cost only: in a debug build each takes seconds of CPU.
        let first = try await PasswordHasher.default.hash("correct horse battery")
        #expect(first.hasPrefix("scrypt$ln=15,r=8,p=3$"))
        #expect(try await PasswordHasher.default.verify("correct horse battery", against: first))
        let cheap = PasswordHasher(logN: 10, r: 8, p: 1)
        let second = try await cheap.hash("correct horse battery")
        let third = try await cheap.hash("correct horse battery")
        #expect(second != third)
        #expect(try await !cheap.verify("correct horse batterY", against: second))
    }
}
