import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

/// Passkeys through `/api/tfa`, answered by a software authenticator the way a browser on the server's own origin
/// answers: registration as the second factor of an account without one, verification in a later login, and a
/// passwordless sign-in; then what must be refused — a replayed answer, another origin, a counter set back (and the
/// credential blocked from then on), no user verification where it is required, a removed passkey, a policy
/// without passwordless sign-in.
@Suite("Passkeys over the two-factor API")
struct PasskeyTests {
    @Test(
        "Register, verify, sign in without a password; replay, origin, counter, UV, removal and policy refused",
        arguments: Backend.all)
    func passkeys(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let tfa = TFAClient(server: server, client: client)
            let port = try #require(client.base.port)
            let authenticator = SoftwareAuthenticator(origin: "http://localhost:\(port)")
            try await tfa.createAccount("alice")

            // Registration: the account has no factor, passkey is offered; the options name this server.
            let first = try await tfa.interruption("alice")
            #expect(first.inactiveProviders.contains(TFAProviderInfo(name: .passkey)))
            let registering = try await tfa.start(first.regToken, .register, provider: .passkey)
            let creation = try await tfa.post("/api/tfa/passkey/options", TFAAssertionRequest(assertion: registering))
                .decode(PasskeyOptionsResponse.self).publicKey
            #expect(creation.rp == .init(id: "localhost", name: server.application.name))
            #expect(try Base64URL.decode(creation.challenge).count == 32)
            let user = try #require(creation.user)
            #expect(user.name == "alice" && user.id != Base64URL.encode(Data("alice".utf8)))
            #expect(try Base64URL.decode(user.id).count == 32)
            #expect(creation.pubKeyCredParams?.map(\.alg) == [-7, -8, -257])
            #expect(creation.authenticatorSelection?.residentKey == "required")
            #expect(creation.attestation == "none")
            let made = try authenticator.create(creation)
            let registered = try await tfa.post(
                "/api/tfa/passkey/register",
                PasskeyRegisterRequest(assertion: registering, credential: made, name: "Laptop"))
            #expect(registered.status == 200, "\(String(decoding: registered.body, as: UTF8.self))")
            let proof = try registered.decode(TFAProofResponse.self)
            let success = try await tfa.post(
                "/api/tfa/finalize",
                TFAFinalizeRequest(
                    regToken: first.regToken, assertion: registering, providerAssertion: proof.providerAssertion)
            ).decode(TFALoginSuccess.self)
            let claims = try await tfa.verifyLoginToken(success.loginToken)
            #expect(claims.amr == ["pwd", "hwk", "user", "mfa"] && claims.tfa == "passkey")
            // The same credential again is refused; the operator sees the passkey as a factor with its name.
            let factors = try await server.store.tfaFactors(applicationId: server.application.id, userId: "alice")
            #expect(factors.map(\.provider) == [.passkey] && factors.first?.destination == "Laptop")

            // A later login verifies with the passkey: the options list the account's credential.
            let second = try await tfa.interruption("alice")
            #expect(second.activeProviders == [TFAProviderInfo(name: .passkey)])
            let verifying = try await tfa.start(second.regToken, .verify, provider: .passkey)
            let request = try await tfa.post("/api/tfa/passkey/options", TFAAssertionRequest(assertion: verifying))
                .decode(PasskeyOptionsResponse.self).publicKey
            #expect(request.rpId == "localhost" && request.allowCredentials?.map(\.id) == [made.id])
            let answer = try authenticator.get(request)
            let verified = try await tfa.post(
                "/api/tfa/passkey/verify", PasskeyVerifyRequest(assertion: verifying, credential: answer))
            #expect(verified.status == 200, "\(String(decoding: verified.body, as: UTF8.self))")
            // The same answer again: its challenge is spent.
            let again = try await tfa.start(second.regToken, .verify, provider: .passkey)
            let replayed = try await tfa.post(
                "/api/tfa/passkey/verify", PasskeyVerifyRequest(assertion: again, credential: answer))
            #expect(replayed.code == "PASSKEY_CHALLENGE")

            // Passwordless: no user name; the credential names the account.
            let options = try await tfa.post("/api/tfa/passkey/login/options", PasskeyLoginOptionsRequest())
                .decode(PasskeyOptionsResponse.self).publicKey
            #expect(options.userVerification == "required" && options.allowCredentials == nil)
            let signedIn = try await tfa.post(
                "/api/tfa/passkey/login", PasskeyLoginRequest(credential: try authenticator.get(options)))
            #expect(signedIn.status == 200, "\(String(decoding: signedIn.body, as: UTF8.self))")
            let passwordless = try await tfa.verifyLoginToken(try signedIn.decode(TFALoginSuccess.self).loginToken)
            #expect(passwordless.sub.value == "alice" && passwordless.amr == ["hwk", "user", "mfa"])
            // Naming the account lists none of its credentials to whoever asks (WebAuthn §14.6.3).
            let named = try await tfa.post(
                "/api/tfa/passkey/login/options", PasskeyLoginOptionsRequest(userId: "alice")
            ).decode(PasskeyOptionsResponse.self).publicKey
            #expect(named.allowCredentials == nil)
            // An answer without the user handle cannot name its account: refused (WebAuthn §7.2 step 6).
            var anonymous = try authenticator.get(try await signInOptions(tfa))
            anonymous.response.userHandle = nil
            let handleless = try await tfa.post("/api/tfa/passkey/login", PasskeyLoginRequest(credential: anonymous))
            #expect(handleless.code == "PASSKEY_UNKNOWN" && handleless.status == 400, "\(handleless.code ?? "")")

            // Another origin (a phishing page relaying the challenge) is refused.
            authenticator.origin = "https://login.example.net"
            let phished = try await tfa.post(
                "/api/tfa/passkey/login",
                PasskeyLoginRequest(credential: try authenticator.get(try await signInOptions(tfa))))
            #expect(phished.code == "PASSKEY_REFUSED" && phished.status == 400)
            #expect((phished.fields["message"] as? String)?.contains("origin") == true)
            authenticator.origin = "http://localhost:\(port)"

            // No user verification: refused for a passwordless sign-in.
            authenticator.verifiesUser = false
            let unverified = try await tfa.post(
                "/api/tfa/passkey/login",
                PasskeyLoginRequest(credential: try authenticator.get(try await signInOptions(tfa))))
            #expect(unverified.code == "PASSKEY_REFUSED")
            authenticator.verifiesUser = true

            // A counter set back (a copied key): refused, audited, and the credential blocked from then on.
            let cloned = try await tfa.post(
                "/api/tfa/passkey/login",
                PasskeyLoginRequest(credential: try authenticator.get(try await signInOptions(tfa), signCount: 1)))
            #expect(cloned.code == "PASSKEY_REFUSED")
            let blocked = try await tfa.post(
                "/api/tfa/passkey/login",
                PasskeyLoginRequest(credential: try authenticator.get(try await signInOptions(tfa), signCount: 100)))
            #expect(blocked.code == "PASSKEY_FLAGGED" && blocked.status == 403)
            let audit = try await server.store.auditEvents(AuditFilter(typePrefix: "passkey."), limit: 50)
            #expect(audit.contains { $0.type == "passkey.counter_went_back" && $0.userId == "alice" })
            #expect(audit.contains { $0.type == "passkey.added" })

            // A removed passkey is unknown; its credential row went with its factor.
            try await tfa.createAccount("bob")
            let bobAuthenticator = SoftwareAuthenticator(origin: "http://localhost:\(port)")
            let bob = try await tfa.interruption("bob")
            let bobAssertion = try await tfa.start(bob.regToken, .register, provider: .passkey)
            let bobOptions = try await tfa.post(
                "/api/tfa/passkey/options", TFAAssertionRequest(assertion: bobAssertion)
            )
            .decode(PasskeyOptionsResponse.self).publicKey
            #expect(
                try await tfa.post(
                    "/api/tfa/passkey/register",
                    PasskeyRegisterRequest(assertion: bobAssertion, credential: try bobAuthenticator.create(bobOptions))
                ).status == 200)
            let bobFactor = try #require(
                try await server.store.tfaFactors(applicationId: server.application.id, userId: "bob").first)
            let key = ["Authorization": "Bearer \(server.apiKey)", "Content-Type": "application/json"]
            let deleted = try await client.send(
                "DELETE", "/api/v1/tfa/accounts/bob/factors/\(bobFactor.id)", headers: key)
            #expect(deleted.status == 204)
            #expect(try await server.store.passkeys(applicationId: server.application.id, userId: "bob").isEmpty)
            let removed = try await tfa.post(
                "/api/tfa/passkey/login",
                PasskeyLoginRequest(credential: try bobAuthenticator.get(try await signInOptions(tfa))))
            #expect(removed.code == "PASSKEY_UNKNOWN")

            // A policy a browser could not follow is refused with the reason.
            var policy = try await server.operatorCall(client, "GET", "/api/v1/tfa/policy", as: TFAPolicy.self)
            for (passkeys, reason) in [
                (PasskeyPolicy(userVerification: "always"), "userVerification"),
                (PasskeyPolicy(attestation: "indirect"), "attestation"),
                (
                    PasskeyPolicy(relyingPartyId: "bank.example", origins: ["https://evil.example"]),
                    "not on the relying party"
                ),
                (PasskeyPolicy(origins: ["https://login.bank.example/path"]), "origins are origins"),
            ] {
                policy.passkeys = passkeys
                let refused = try await client.send(
                    "PUT", "/api/v1/tfa/policy", headers: key, body: try OperatorJSON.encoder().encode(policy))
                #expect(refused.status == 400 && refused.text.contains(reason), "\(refused.text)")
            }
            // A policy without passwordless sign-in.
            policy.passkeys = PasskeyPolicy(firstFactor: false)
            let put = try await client.send(
                "PUT", "/api/v1/tfa/policy", headers: key, body: try OperatorJSON.encoder().encode(policy))
            #expect(put.status == 200, "\(put.text)")
            let refused = try await tfa.post("/api/tfa/passkey/login/options", PasskeyLoginOptionsRequest())
            #expect(refused.code == "PASSKEY_NOT_ALLOWED" && refused.status == 403)

            // Direct attestation: only authenticators whose attestation chains to a root the operator configured.
            // This server has none, so an authenticator that attests nothing (`none`) is refused.
            policy.passkeys = PasskeyPolicy(attestation: "direct")
            let direct = try await client.send(
                "PUT", "/api/v1/tfa/policy", headers: key, body: try OperatorJSON.encoder().encode(policy))
            #expect(direct.status == 200, "\(direct.text)")
            try await tfa.createAccount("carol")
            let carol = try await tfa.interruption("carol")
            let carolAssertion = try await tfa.start(carol.regToken, .register, provider: .passkey)
            let carolOptions = try await tfa.post(
                "/api/tfa/passkey/options", TFAAssertionRequest(assertion: carolAssertion)
            ).decode(PasskeyOptionsResponse.self).publicKey
            #expect(carolOptions.attestation == "direct")
            let unattested = try await tfa.post(
                "/api/tfa/passkey/register",
                PasskeyRegisterRequest(
                    assertion: carolAssertion,
                    credential: try SoftwareAuthenticator(origin: "http://localhost:\(port)").create(carolOptions)))
            #expect(unattested.code == "PASSKEY_REFUSED", "\(String(decoding: unattested.body, as: UTF8.self))")
            #expect((unattested.fields["message"] as? String)?.contains("attestation it trusts") == true)
            #expect(try await server.store.passkeys(applicationId: server.application.id, userId: "carol").isEmpty)
        }
    }

    @Test("Attestation roots per format: FORMAT=FILE names one format, a bare FILE every one; mistakes named")
    func attestationRootsPerFormat() throws {
        let files = [
            "a.pem": Data(try TestCertificates.make().caPEM.utf8),
            "b.pem": Data(try TestCertificates.make().caPEM.utf8),
            "empty.pem": Data("no certificate here".utf8),
        ]
        let read = { (path: String) in files[path] }
        let roots = try TFASettings.attestationRoots(["packed=a.pem", "apple=b.pem", "tpm=a.pem"], read: read)
        #expect(Set(roots.keys) == ["packed", "apple", "tpm"])
        #expect(roots["packed"]?.count == 1 && roots["packed"] == roots["tpm"] && roots["apple"] != roots["packed"])
        let everywhere = try TFASettings.attestationRoots(["a.pem", "apple=b.pem"], read: read)
        #expect(everywhere["android-key"]?.count == 1 && everywhere["apple"]?.count == 2 && everywhere["none"] == nil)
        #expect(try TFASettings.attestationRoots([], read: read).isEmpty)
        for (values, sentence) in [
            (["fido=a.pem"], "fido is not an attestation format"), (["missing.pem"], "Cannot read"),
            (["packed=empty.pem"], "holds no PEM certificates"),
        ] {
            #expect {
                _ = try TFASettings.attestationRoots(values, read: read)
            } throws: { error in
                (error as? AssentServerError)?.message.contains(sentence) == true
            }
        }
    }

    private func signInOptions(_ tfa: TFAClient) async throws -> PasskeyOptions {
        try await tfa.post("/api/tfa/passkey/login/options", PasskeyLoginOptionsRequest())
            .decode(PasskeyOptionsResponse.self).publicKey
    }
}
