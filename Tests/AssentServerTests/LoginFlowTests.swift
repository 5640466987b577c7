import AssentCrypto
import AssentModel
import Foundation
import Testing

@testable import AssentServer

/// The hosted sign-in's decisions as a pure function of its state: every form at every step, every provider's
/// start, every flow refusal, the client's request after a sign-in, the authorization endpoint and the account
/// page's gate — no HTTP, no database.
@Suite("The hosted sign-in's flow, without a server")
struct LoginFlowTests {
    typealias Step = LoginState.Step
    let flow = LoginFlow(issuer: "https://id.example")

    static let factorSteps: Set<Step> = [.chooseDestination, .enterCode, .waitForPush, .passkey]

    /// The facts of a login token with these claims (the flow reads them; nothing here is signed).
    static func facts(_ userId: String, tfa: String?, amr: [String] = ["pwd"], at: Millis = 1_000, session: String)
        -> SignInFacts
    {
        var claims: [String: Any] = ["amr": amr]
        if let tfa { claims["tfa"] = tfa }
        let payload = try! JSONSerialization.data(withJSONObject: claims)
        var facts = SignInFacts(loginToken: "e30.\(Base64URL.encode(payload)).sig", userId: userId, at: at)
        facts.sessionId = session
        return facts
    }

    static func request(
        prompt: [String] = [], assurance: SignInAssurance? = nil, hint: String? = nil, maxAge: Int? = nil,
        thirdParty: Bool? = nil
    ) -> AuthorizationRequest {
        AuthorizationRequest(
            clientId: "shop", clientName: "Shop", applicationId: "app", redirectUri: "https://shop.example/cb",
            scope: "openid", state: "s1", nonce: nil, codeChallenge: nil, prompt: prompt, maxAge: maxAge,
            assurance: assurance, loginHint: nil, hintedUserId: hint, thirdParty: thirdParty)
    }

    /// A state at `step` in the middle of a second factor (`provider` chosen, its assertion held).
    static func state(
        _ step: Step, provider: TFAProvider? = .totp, registration: Bool = false,
        providers: [TFAProvider] = TFAProvider.allCases
    ) -> LoginState {
        var state = LoginState(application: "app")
        state.step = step
        state.userId = "alice"
        state.regToken = "reg"
        state.registration = registration
        state.providers = providers
        if Self.factorSteps.contains(step) {
            state.provider = provider
            state.assertion = "as"
            state.phvToken = "phv"
            state.operationId = "op"
        }
        return state
    }

    /// A signed-in state of `userId` with `facts`.
    static func signedIn(_ facts: SignInFacts, authorization: AuthorizationRequest? = nil) -> LoginState {
        var state = LoginState(application: "app")
        state.step = .signedIn
        state.userId = facts.userId
        state.signIn = facts
        state.methods = ["password"]
        state.authorization = authorization
        return state
    }

    // MARK: Forms and steps

    @Test("Each form is taken at exactly its steps; posted at any other it changes nothing")
    func formsAtSteps() {
        let expected: [LoginFlow.Form: Set<Step>] = [
            .password: [.signIn],
            .factor: [.chooseFactor, .chooseDestination, .enterCode, .waitForPush, .passkey],
            .destination: [.chooseDestination], .code: [.enterCode], .push: [.waitForPush], .passkey: [.passkey],
            .consent: [.consent],
        ]
        for form in LoginFlow.Form.allCases {
            for step in Step.allCases {
                #expect(
                    LoginFlow.steps(accepting: form).contains(step) == expected[form]!.contains(step),
                    "\(form) at \(step)")
            }
        }
        // No step but the signed-in page takes no form at all.
        for step in Step.allCases where step != .signedIn {
            #expect(LoginFlow.Form.allCases.contains { LoginFlow.steps(accepting: $0).contains(step) }, "\(step)")
        }
    }

    @Test("Each form is posted to its step's page and read into its event; the password never reaches the flow")
    func formsRead() {
        for form in LoginFlow.Form.allCases {
            #expect(LoginFlow.Form(path: form.path) == form)
            #expect(Step(path: form.path) == form.step, "\(form)")
            #expect(LoginFlow.steps(accepting: form).contains(form.step), "\(form) is taken on its own page")
        }
        for step in Step.allCases { #expect(Step(path: step.path) == step) }
        #expect(Step(path: "/login/nowhere") == nil)
        #expect(LoginFlow.Form(path: "/login/done") == nil && LoginFlow.Form(path: "/login/push/events") == nil)
        let fields = [
            "userId": " alice", "password": "secret", "provider": "email", "emailId": "e1", "phoneId": "p1",
            "phone": "+420601234567", "method": "voice", "activationId": "a1", "code": "123 456", "remember": "on",
            "credential": "{}", "decision": "allow",
        ]
        let expected: [LoginFlow.Form: LoginFlow.Event] = [
            .password: .passwordEntered(userId: " alice", password: true), .factor: .factorChosen(.email),
            .destination: .destinationChosen(
                LoginFlow.Destination(
                    emailId: "e1", phoneId: "p1", phone: "+420601234567", method: .voice, activationId: "a1")),
            .code: .codeEntered("123 456", remember: true), .push: .pushContinued(remember: true),
            .passkey: .passkeyUsed(credential: true, remember: true), .consent: .consentDecided(allow: true),
        ]
        for form in LoginFlow.Form.allCases { #expect(form.event(fields) == expected[form], "\(form)") }
        // Missing or unknown values.
        #expect(
            LoginFlow.Form.password.event(["userId": "alice"]) == .passwordEntered(userId: "alice", password: false))
        #expect(LoginFlow.Form.factor.event(["provider": "carrier-pigeon"]) == .factorChosen(nil))
        #expect(LoginFlow.Form.consent.event([:]) == .consentDecided(allow: false))
        #expect(LoginFlow.Form.passkey.event([:]) == .passkeyUsed(credential: false, remember: false))
    }

    @Test("A visit shows its step's page, or goes to where the session is; the factor page abandons a provider's part")
    func visits() {
        for current in Step.allCases {
            for visited in Step.allCases {
                let before = Self.state(current)
                let (after, visit) = flow.visit(before, visited)
                if visited == current {
                    #expect(visit == .render(changed: false) && after == before, "\(visited) at \(current)")
                } else if visited == .chooseFactor, Self.factorSteps.contains(current) {
                    #expect(visit == .render(changed: true), "\(visited) at \(current)")
                    #expect(after.step == .chooseFactor && after.provider == nil && after.assertion == nil)
                    #expect(after.phvToken == nil && after.operationId == nil && after.regToken == "reg")
                } else {
                    #expect(visit == .redirect(current.path) && after == before, "\(visited) at \(current)")
                }
            }
        }
    }

    @Test("The password form: both fields or a sentence; the name trimmed; the check asked for")
    func password() {
        let start = LoginState(application: "app")
        var (state, action) = flow.transition(start, on: .passwordEntered(userId: "  alice ", password: true))
        #expect(action == .checkPassword(userId: "alice") && state.userId == "alice" && state.message == nil)
        for (name, password) in [("", true), ("   ", true), ("alice", false)] {
            (state, action) = flow.transition(start, on: .passwordEntered(userId: name, password: password))
            #expect(action == .done && state.step == .signIn)
            #expect(state.message == "Enter your user name and your password.")
        }
    }

    @Test("A right password that needs a second factor offers what meets the client's request, or says none does")
    func secondFactor() {
        var start = LoginState(application: "app")
        let needed = LoginFlow.SecondFactor(
            regToken: "reg", registration: true, providers: [.totp, .push, .email], accountLanguage: "cs")
        var (state, action) = flow.transition(start, on: .secondFactorNeeded(needed))
        #expect(action == .done && state.step == .chooseFactor && state.registration)
        #expect(state.providers == [.totp, .push, .email] && state.regToken == "reg" && state.accountLanguage == "cs")
        // A client asking for approval on a phone: only push meets it; without push, nothing does.
        start.authorization = Self.request(assurance: .phone)
        (state, _) = flow.transition(start, on: .secondFactorNeeded(needed))
        #expect(state.providers == [.push] && state.message == nil)
        var withoutPush = needed
        withoutPush.providers = [.totp]
        (state, _) = flow.transition(start, on: .secondFactorNeeded(withoutPush))
        #expect(state.providers.isEmpty && state.step == .chooseFactor)
        #expect(state.message?.hasPrefix("This account has no second factor") == true)
    }

    // MARK: Providers

    @Test("Choosing a method starts only one the page offered")
    func choose() {
        let start = Self.state(.chooseFactor, providers: [.totp, .email])
        var (state, action) = flow.transition(start, on: .factorChosen(.email))
        #expect(action == .startFactor(regToken: "reg", .email, registration: false) && state == start)
        for chosen in [TFAProvider.push, nil] {
            (state, action) = flow.transition(start, on: .factorChosen(chosen))
            #expect(action == .done && state.message == "Choose one of the methods shown.")
        }
        var expired = start
        expired.regToken = nil
        (_, action) = flow.transition(expired, on: .factorChosen(.email))
        #expect(action == .done)
    }

    @Test("Every provider's start, verifying and setting up: the step it leads to or what it prepares first")
    func starts() {
        for provider in TFAProvider.allCases {
            for registration in [false, true] {
                var start = Self.state(.chooseFactor, registration: registration)
                start.authorization = Self.request()
                start.qrCode = "left over"
                let (state, action) = flow.transition(start, on: .factorStarted(provider, assertion: "a1"))
                #expect(state.provider == provider && state.assertion == "a1" && state.qrCode == nil)
                let expected: (Step, LoginFlow.Action) =
                    switch (provider, registration) {
                    case (.totp, false), (.backup, _): (.enterCode, .done)
                    case (.totp, true): (.chooseFactor, .registerTOTP(assertion: "a1"))
                    case (.push, false): (.chooseFactor, .sendPush(assertion: "a1", site: "Shop"))
                    case (.passkey, _): (.chooseFactor, .passkeyOptions(assertion: "a1"))
                    case (.email, _), (.phone, _), (.push, true): (.chooseDestination, .done)
                    }
                #expect(state.step == expected.0 && action == expected.1, "\(provider) registration \(registration)")
            }
        }
        let prepared: [(LoginFlow.Prepared, Step)] = [
            (.totp(qrCode: "qr", sctToken: "sct", secret: "JBSW"), .enterCode),
            (.push(operationId: "op9", number: 42), .waitForPush), (.passkey(options: "{}"), .passkey),
        ]
        for (ready, step) in prepared {
            let (state, action) = flow.transition(Self.state(.chooseFactor), on: .factorPrepared(ready))
            #expect(action == .done && state.step == step)
        }
        let (totp, _) = flow.transition(
            Self.state(.chooseFactor), on: .factorPrepared(.totp(qrCode: "qr", sctToken: "sct", secret: "JBSW")))
        #expect(totp.qrCode == "qr" && totp.sctToken == "sct" && totp.secret == "JBSW")
        let (push, _) = flow.transition(
            Self.state(.chooseFactor), on: .factorPrepared(.push(operationId: "op9", number: 42)))
        #expect(push.operationId == "op9" && push.number == 42)
    }

    @Test("Where a code goes or which phone is asked: the account's own, or a new number in international form")
    func destinations() {
        var form = LoginFlow.Destination(emailId: "e1", phoneId: "p1", method: .voice, activationId: "act")
        var (state, action) = flow.transition(
            Self.state(.chooseDestination, provider: .email), on: .destinationChosen(form))
        #expect(action == .sendEmail(assertion: "as", emailId: "e1"))
        (_, action) = flow.transition(Self.state(.chooseDestination, provider: .phone), on: .destinationChosen(form))
        #expect(action == .sendPhone(assertion: "as", method: .voice, phoneId: "p1", newNumber: nil))
        (_, action) = flow.transition(Self.state(.chooseDestination, provider: .push), on: .destinationChosen(form))
        #expect(action == .optIn(assertion: "as", activationId: "act"))
        // A new number: written any way a person writes it, refused unless it is international.
        let setUp = Self.state(.chooseDestination, provider: .phone, registration: true)
        form.phone = "+420 (601) 234-567"
        form.method = nil
        (state, action) = flow.transition(setUp, on: .destinationChosen(form))
        #expect(action == .sendPhone(assertion: "as", method: .sms, phoneId: nil, newNumber: "+420601234567"))
        #expect(state.destination == CodeFactor.obfuscatePhone("+420601234567"))
        form.phone = "601 234 567"
        (state, action) = flow.transition(setUp, on: .destinationChosen(form))
        #expect(action == .done && state.message?.hasPrefix("Enter the number in international form") == true)
        form.activationId = ""
        (state, action) = flow.transition(Self.state(.chooseDestination, provider: .push), on: .destinationChosen(form))
        #expect(action == .done && state.message == "Choose the phone that will approve your sign-ins.")
        for provider in [TFAProvider.totp, .passkey, .backup] {
            (state, action) = flow.transition(
                Self.state(.chooseDestination, provider: provider), on: .destinationChosen(form))
            #expect(action == .done && state.step == .chooseFactor)
        }
        // A choice that is not the account's.
        (state, _) = flow.transition(Self.state(.chooseDestination, provider: .email), on: .notOffered)
        #expect(state.message == "Choose one of the addresses shown." && state.step == .chooseDestination)
        (state, _) = flow.transition(Self.state(.chooseDestination, provider: .phone), on: .notOffered)
        #expect(state.message == "Choose one of the numbers shown.")
        // Sent: the code's page, naming where it went (or the new number already named).
        (state, _) = flow.transition(
            Self.state(.chooseDestination, provider: .email), on: .codeSent(destination: "a***@x.cz", phvToken: "p2"))
        #expect(state.step == .enterCode && state.destination == "a***@x.cz" && state.phvToken == "p2")
        (state, _) = flow.transition(
            Self.state(.chooseDestination, provider: .push), on: .phoneAsked(operationId: "o2"))
        #expect(state.step == .waitForPush && state.operationId == "o2")
    }

    @Test("A code is checked by its provider; an empty one asks again; push and passkey steps take no code")
    func codes() {
        for provider in TFAProvider.allCases {
            let (state, action) = flow.transition(
                Self.state(.enterCode, provider: provider), on: .codeEntered(" 123 456 ", remember: true))
            let expected: LoginFlow.Action =
                switch provider {
                case .totp: .verify(.totp(assertion: "as", code: "123456", sctToken: nil), remember: true)
                case .email, .phone:
                    .verify(.code(provider, assertion: "as", phvToken: "phv", code: "123456"), remember: true)
                case .backup: .verify(.backup(assertion: "as", code: "123456"), remember: true)
                case .push, .passkey: .done
                }
            #expect(action == expected && state.message == nil, "\(provider)")
            let (empty, none) = flow.transition(
                Self.state(.enterCode, provider: provider), on: .codeEntered("  ", remember: false))
            #expect(none == .done && empty.message == "Enter the code.")
        }
        var noToken = Self.state(.enterCode, provider: .email)
        noToken.phvToken = nil
        #expect(flow.transition(noToken, on: .codeEntered("1", remember: false)).action == .done)
        // Passed: the flow is finalized with the proof.
        let (_, finalize) = flow.transition(
            Self.state(.enterCode), on: .factorPassed(proof: "pa", remember: true, backupCodesLeft: 3))
        #expect(
            finalize == .finalize(regToken: "reg", assertion: "as", proof: "pa", remember: true, backupCodesLeft: 3))
    }

    @Test("The push page continues once approved; the passkey step needs the browser's credential")
    func pushAndPasskey() {
        var (state, action) = flow.transition(
            Self.state(.waitForPush, provider: .push), on: .pushContinued(remember: false))
        #expect(action == .verify(.push(assertion: "as"), remember: false))
        (state, action) = flow.transition(Self.state(.waitForPush, provider: .push), on: .notApprovedYet)
        #expect(action == .done && state.step == .waitForPush && state.message?.hasPrefix("Not approved yet") == true)
        let passkey = Self.state(.passkey, provider: .passkey, registration: true)
        (_, action) = flow.transition(passkey, on: .passkeyUsed(credential: true, remember: true))
        #expect(action == .verify(.passkey(assertion: "as", registration: true), remember: true))
        (state, action) = flow.transition(passkey, on: .passkeyUsed(credential: false, remember: true))
        #expect(action == .done && state.message?.hasPrefix("Your browser sent no passkey") == true)
        (state, _) = flow.transition(passkey, on: .passkeyUnreadable)
        #expect(state.message?.hasPrefix("Your browser sent something that is not a passkey") == true)
        // Refused with tries left: new options on the same step; with none left: the choice again.
        let refused = TFAError(
            status: .badRequest, error: .passkeyRefused, message: "Not that passkey.", attemptsLeft: 2)
        (state, _) = flow.transition(passkey, on: .passkeyRefused(refused, options: "{\"new\":1}"))
        #expect(state.step == .passkey && state.passkeyOptions == "{\"new\":1}" && state.message == "Not that passkey.")
        var last = refused
        last.attemptsLeft = 0
        (state, _) = flow.transition(passkey, on: .passkeyRefused(last, options: nil))
        #expect(state.step == .chooseFactor && state.passkeyOptions == nil)
    }

    @Test("Every flow refusal: where the person continues and what they read")
    func refusals() {
        let reset: Set<TFAFlowErrorCode> = [.assertionSpent, .invalidAssertion, .pushNotSent, .totpNotRegistered]
        let push: Set<TFAFlowErrorCode> = [.pushRejected, .pushNotApproved, .pushDeviceNotOptedIn]
        for code in TFAFlowErrorCode.allCases {
            for attemptsLeft in [nil, 1, 0] {
                let error = TFAError(status: .badRequest, error: code, message: "m", attemptsLeft: attemptsLeft)
                let start = Self.state(.enterCode)
                let (state, action) = flow.transition(start, on: .failed(error))
                #expect(action == .done)
                switch code {
                case .invalidRegToken:
                    #expect(state.step == .signIn && state.regToken == nil)
                    #expect(state.message == "Your sign-in expired: sign in again.")
                case .invalidLogin:
                    #expect(state.step == .enterCode && state.message == "The user name or the password is wrong.")
                case _ where reset.contains(code):
                    #expect(state.step == .chooseFactor && state.assertion == nil, "\(code)")
                    #expect(state.message?.hasPrefix("That verification expired") == true)
                case _ where push.contains(code):
                    #expect(state.step == .chooseFactor && state.assertion == nil && state.message != "m", "\(code)")
                default:
                    #expect(state.message == "m", "\(code)")
                    #expect(
                        state.step == (attemptsLeft == 0 ? .chooseFactor : .enterCode), "\(code) \(attemptsLeft ?? -1)")
                }
            }
        }
        // The push refusals speak to the person, naming where they answered.
        func read(_ code: TFAFlowErrorCode, _ message: String) -> String? {
            flow.transition(
                Self.state(.waitForPush), on: .failed(TFAError(status: .conflict, error: code, message: message))
            ).state.message
        }
        #expect(
            read(.pushRejected, "The user reported fraud.")
                == "You reported this sign-in as fraud on your phone: it was stopped.")
        #expect(
            read(.pushRejected, "The user rejected it in a browser.") == "You rejected the sign-in in your browser.")
        #expect(
            read(.pushRejected, "The user chose another number.")?.hasPrefix("The number chosen on your phone") == true)
        #expect(read(.pushNotApproved, "")?.hasPrefix("The request on your phone expired") == true)
        #expect(read(.pushDeviceNotOptedIn, "")?.hasPrefix("A phone that does not approve your sign-ins") == true)
        // A service's refusal is the page's message, nothing else changes.
        let (refused, action) = flow.transition(Self.state(.enterCode), on: .refused("Too many attempts."))
        #expect(action == .done && refused.step == .enterCode && refused.message == "Too many attempts.")
        var restarted = Self.state(.signIn)
        restarted.authorization = Self.request()
        let (passwordless, _) = flow.transition(
            restarted, on: .passwordlessRefused(TFAError(status: .badRequest, error: .passkeyUnknown, message: "x")))
        #expect(passwordless.step == .signIn && passwordless.message == "x" && passwordless.authorization != nil)
    }

    // MARK: Signed in

    @Test("A sign-in: a new session identity for a new person, the same for the same one; a step-up adds its factor")
    func signIns() {
        let previous = Self.facts("alice", tfa: nil, at: 500, session: "S1")
        let fresh = Self.facts("alice", tfa: TFAProvider.push.rawValue, at: 900, session: "S2")
        let signedIn = LoginFlow.SignedIn(
            userId: "alice", methods: ["password", "approval on your phone"], facts: fresh, accountLanguage: "de")
        // Nobody signed in before: the new identity.
        var (state, action) = flow.transition(Self.state(.enterCode), on: .signedIn(signedIn))
        #expect(action == .done && state.step == .signedIn && state.signIn == fresh && state.accountLanguage == "de")
        #expect(state.regToken == nil && state.assertion == nil && state.methods == signedIn.methods)
        // The same person again: the session's identity stays.
        var again = Self.signedIn(previous)
        again.step = .enterCode
        (state, _) = flow.transition(again, on: .signedIn(signedIn))
        #expect(state.signIn?.sessionId == "S1" && state.signIn?.authTime == 900)
        // Someone else: theirs.
        (state, _) = flow.transition(
            again,
            on: .signedIn(
                LoginFlow.SignedIn(userId: "bob", methods: [], facts: Self.facts("bob", tfa: nil, session: "S3"))))
        #expect(state.signIn?.sessionId == "S3" && state.userId == "bob")
        // A step-up: the first sign-in's time and methods, the factor added, the stronger assurance.
        var steppingUp = Self.signedIn(previous)
        steppingUp.stepUp(regToken: "r", providers: [.push], userId: "alice", notice: "n")
        (state, _) = flow.transition(steppingUp, on: .signedIn(signedIn))
        #expect(state.methods == ["password", "approval on your phone"] && state.steppingUp == nil)
        #expect(state.signIn?.authTime == 500 && state.signIn?.assurance == .phone && state.signIn?.sessionId == "S1")
        #expect(state.signIn?.amr == ["pwd", "hwk", "mfa"])
    }

    @Test("A backup code: a warning when two or fewer are left, the last one said so")
    func backupCodes() {
        for left in 0...4 {
            let signedIn = LoginFlow.SignedIn(
                userId: "alice", methods: [], facts: Self.facts("alice", tfa: "backup", session: "S"),
                backupCodesLeft: left)
            let notice = flow.transition(Self.state(.enterCode, provider: .backup), on: .signedIn(signedIn)).state
                .notice
            switch left {
            case 0: #expect(notice?.hasPrefix("That was your last backup code") == true)
            case 1: #expect(notice == "Only 1 backup code is left: make new ones soon.")
            case 2: #expect(notice == "Only 2 backup codes are left: make new ones soon.")
            default: #expect(notice == nil)
            }
        }
    }

    // MARK: The client's request

    @Test("After a form: a held redirect, a page to return to, the step's page, or the client's request decides")
    func proceed() {
        let mfa = Self.facts("alice", tfa: "totp", session: "S")
        var state = Self.state(.enterCode)
        state.pendingRedirect = "https://shop.example/cb?error=access_denied"
        var action: LoginFlow.Action
        (state, action) = flow.transition(state, on: .proceed)
        #expect(action == .redirect("https://shop.example/cb?error=access_denied") && state.pendingRedirect == nil)
        (_, action) = flow.transition(Self.state(.enterCode), on: .proceed)
        #expect(action == .redirect("/login/code"))
        var toAccount = Self.signedIn(mfa)
        toAccount.returnTo = "/account"
        (state, action) = flow.transition(toAccount, on: .proceed)
        #expect(action == .redirect("/account") && state.returnTo == nil)
        (_, action) = flow.transition(Self.signedIn(mfa), on: .proceed)
        #expect(action == .redirect("/login/done"))
        // For a client: the hinted person only; a strong enough sign-in; then consent decides.
        (state, action) = flow.transition(Self.signedIn(mfa, authorization: Self.request(hint: "bob")), on: .proceed)
        guard case .redirect(let location) = action else { Issue.record("\(action)"); return }
        #expect(location.hasPrefix("https://shop.example/cb?") && location.contains("error=login_required"))
        #expect(location.contains("iss=https") && state.authorization == nil)
        let phone = Self.request(assurance: .phone)
        (_, action) = flow.transition(Self.signedIn(mfa, authorization: phone), on: .proceed)
        #expect(action == .stepUp(userId: "alice"))
        (_, action) = flow.transition(
            Self.signedIn(mfa, authorization: Self.request(assurance: .secondFactor)), on: .proceed)
        #expect(action == .checkConsent(Self.request(assurance: .secondFactor), userId: "alice"))
        // The step-up offered: push meets a phone's assurance; without it the client hears access_denied.
        (state, action) = flow.transition(
            Self.signedIn(mfa, authorization: phone), on: .stepUpOffered(regToken: "r2", providers: [.totp, .push]))
        #expect(action == .redirect("/login/factor") && state.step == .chooseFactor && state.providers == [.push])
        #expect(state.steppingUp == true && state.notice == "Shop asks you to approve this sign-in on your phone.")
        (state, action) = flow.transition(
            Self.signedIn(mfa, authorization: phone), on: .stepUpOffered(regToken: "r2", providers: [.totp]))
        guard case .redirect(let denied) = action else { Issue.record("\(action)"); return }
        #expect(denied.contains("error=access_denied") && state.authorization == nil)
        // Consent: the page when needed, else the code.
        let request = Self.request()
        (state, action) = flow.transition(Self.signedIn(mfa, authorization: request), on: .consentChecked(needed: true))
        #expect(action == .redirect("/login/consent") && state.step == .consent)
        (state, action) = flow.transition(
            Self.signedIn(mfa, authorization: request), on: .consentChecked(needed: false))
        #expect(action == .issueCode(request, mfa) && state.authorization == nil)
    }

    @Test("The consent page: allowed → remembered and asked no more for this request; declined → the client told")
    func consent() {
        let mfa = Self.facts("alice", tfa: "totp", session: "S")
        var asking = Self.signedIn(mfa, authorization: Self.request(prompt: ["consent"]))
        asking.step = .consent
        var (state, action) = flow.transition(asking, on: .consentDecided(allow: true))
        #expect(action == .grantConsent(Self.request(prompt: ["consent"]), userId: "alice"))
        #expect(state.step == .signedIn && state.authorization?.prompt == [])
        (state, action) = flow.transition(asking, on: .consentDecided(allow: false))
        #expect(action == .done && state.step == .signedIn && state.authorization == nil)
        #expect(state.pendingRedirect?.contains("error=access_denied") == true)
        #expect(flow.transition(state, on: .proceed).action == .redirect(state.pendingRedirect!))
    }

    // MARK: The authorization endpoint

    @Test("The authorization endpoint: the session's sign-in answers, prompt=none never shows a page, else sign in")
    func authorize() async {
        let mfa = Self.facts("alice", tfa: "totp", at: 10_000, session: "S")
        let session = Self.signedIn(mfa)
        func decide(_ request: AuthorizationRequest, _ session: LoginState?, consent: Bool = false) async
            -> LoginFlow.Authorize
        {
            await flow.authorize(request, session: session, now: 20_000) { _ in consent }
        }
        // Signed in: on with the session's sign-in (its identity kept).
        guard case .signedIn(let served) = await decide(Self.request(), session) else { Issue.record(); return }
        #expect(served.step == .signedIn && served.signIn == mfa && served.authorization == Self.request())
        // prompt=none: the errors a client can act on.
        func error(_ decision: LoginFlow.Authorize) -> String? {
            guard case .redirect(let location) = decision else { return nil }
            return URLComponents(string: location)?.queryItems?.first { $0.name == "error" }?.value
        }
        #expect(error(await decide(Self.request(prompt: ["none"]), nil)) == "login_required")
        #expect(error(await decide(Self.request(prompt: ["none"], hint: "bob"), session)) == "login_required")
        #expect(error(await decide(Self.request(prompt: ["none"], maxAge: 5), session)) == "login_required")
        #expect(
            error(await decide(Self.request(prompt: ["none"], assurance: .phone), session)) == "interaction_required")
        #expect(error(await decide(Self.request(prompt: ["none"]), session, consent: true)) == "consent_required")
        guard case .signedIn = await decide(Self.request(prompt: ["none"]), session) else { Issue.record(); return }
        // A fresh sign-in: prompt=login, max_age passed, another person, another application — the session's sign-in
        // kept for the others meanwhile, the hinted or signed-in name filled in.
        for request in [Self.request(prompt: ["login"]), Self.request(maxAge: 5), Self.request(hint: "bob")] {
            guard case .signIn(let state) = await decide(request, session) else { Issue.record(); continue }
            #expect(state.step == .signIn && state.authorization == request && state.signIn == mfa)
            #expect(state.userId == (request.hintedUserId ?? "alice"))
        }
        var elsewhere = session
        elsewhere.application = "other"
        guard case .signIn(let fresh) = await decide(Self.request(), elsewhere) else { Issue.record(); return }
        #expect(fresh.signIn == nil && fresh.application == "app" && fresh.userId == nil)
    }

    @Test("The account page: a fresh two-factor sign-in opens it; a password alone passes a factor; else sign in again")
    func accountGate() async {
        let freshness: Millis = 600_000
        let mfa = Self.facts("alice", tfa: "totp", at: 1_000_000, session: "S")
        let password = Self.facts("alice", tfa: nil, at: 1_000_000, session: "S")
        func gate(_ state: LoginState, now: Millis, providers: [TFAProvider] = [.totp]) async -> LoginFlow.AccountGate {
            await LoginFlow.accountGate(state, now: now, freshness: freshness) { _ in ("r", providers) }
        }
        #expect(await gate(Self.signedIn(mfa), now: 1_500_000) == .open(userId: "alice"))
        guard case .secondFactor(let stepUp) = await gate(Self.signedIn(password), now: 1_500_000) else {
            Issue.record()
            return
        }
        #expect(stepUp.step == .chooseFactor && stepUp.returnTo == "/account" && stepUp.providers == [.totp])
        for (state, now, providers) in [
            (Self.signedIn(mfa), Millis(1_700_000), [TFAProvider.totp]), (Self.signedIn(password), 1_500_000, []),
            (Self.state(.enterCode), 1_500_000, [.totp]),
        ] {
            guard case .signInAgain(let again) = await gate(state, now: now, providers: providers) else {
                Issue.record()
                continue
            }
            #expect(again.step == .signIn && again.returnTo == "/account" && again.userId == "alice")
            #expect(again.notice == "Sign in again to manage your account's security.")
        }
    }

    // MARK: A whole sign-in

    @Test("A whole sign-in for a client, answering the flow's checks as the services would")
    func walk() {
        var state = LoginState(application: "app")
        state.authorization = Self.request(thirdParty: true)
        let facts = Self.facts("alice", tfa: "totp", session: "S")
        var action = LoginFlow.Action.done
        var trail: [Step] = []
        /// The service's answer to each check.
        func answer(_ action: LoginFlow.Action) -> LoginFlow.Event? {
            switch action {
            case .checkPassword:
                .secondFactorNeeded(
                    .init(regToken: "reg", registration: false, providers: [.totp, .email], accountLanguage: nil))
            case .startFactor(_, let provider, _): .factorStarted(provider, assertion: "a")
            case .verify: .factorPassed(proof: "p", remember: false, backupCodesLeft: nil)
            case .finalize: .signedIn(.init(userId: "alice", methods: ["password", "authenticator app"], facts: facts))
            case .checkConsent: .consentChecked(needed: true)
            default: nil
            }
        }
        func run(_ event: LoginFlow.Event) {
            var event: LoginFlow.Event? = event
            while let next = event {
                (state, action) = flow.transition(state, on: next)
                trail.append(state.step)
                event = answer(action)
            }
        }
        run(.passwordEntered(userId: "alice", password: true))
        #expect(state.step == .chooseFactor)
        run(.factorChosen(.totp))
        #expect(state.step == .enterCode)
        run(.codeEntered("123456", remember: false))
        #expect(state.step == .signedIn && state.authorization != nil)
        run(.proceed)
        #expect(state.step == .consent && action == .redirect("/login/consent"))
        run(.consentDecided(allow: true))
        #expect(action == .grantConsent(Self.request(thirdParty: true), userId: "alice"))
        run(.consentChecked(needed: false))
        #expect(action == .issueCode(Self.request(thirdParty: true), facts) && state.authorization == nil)
        #expect(trail.first == .signIn && trail.contains(.enterCode) && trail.last == .signedIn)
    }
}
