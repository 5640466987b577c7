import AssentModel
import Foundation

/// Where a person is in the hosted login, kept sealed in the login session.
struct LoginState: Codable, Sendable, Equatable {
    enum Step: String, Codable, Sendable, CaseIterable {
        case signIn, chooseFactor, chooseDestination, enterCode, waitForPush, passkey, consent, signedIn

        /// The page that shows this step.
        var path: String {
            switch self {
            case .signIn: "/login"
            case .chooseFactor: "/login/factor"
            case .chooseDestination: "/login/destination"
            case .enterCode: "/login/code"
            case .waitForPush: "/login/push"
            case .passkey: "/login/passkey"
            case .consent: "/login/consent"
            case .signedIn: "/login/done"
            }
        }

        /// The step `path` shows, if one does.
        init?(path: String) {
            guard let step = Self.allCases.first(where: { $0.path == path }) else { return nil }
            self = step
        }
    }

    /// The application's id.
    var application: String
    var step = Step.signIn
    var userId: String?
    var regToken: String?
    /// Whether the account registers its first factor (403102) rather than verifying one (403101).
    var registration = false
    /// The providers offered: the account's own when verifying, the registrable ones when registering.
    var providers: [TFAProvider] = []
    var provider: TFAProvider?
    var assertion: String?
    var phvToken: String?
    var sctToken: String?
    /// A TOTP registration's QR code (PNG data URL) and secret (Base32, for typing in).
    var qrCode: String?
    var secret: String?
    /// Where the code went, obfuscated.
    var destination: String?
    var operationId: String?
    /// The number the phone asks for (number matching).
    var number: Int?
    /// A passkey step's options for the browser (JSON of ``PasskeyOptionsResponse``).
    var passkeyOptions: String?
    /// After sign-in: what the login token was verified with, in words (``LoginPages/methods(of:)``).
    var methods: [String] = []
    /// A sentence for the next page (shown once).
    var message: String?
    /// A sentence that informs rather than warns, for the next page (shown once).
    var notice: String?
    /// After sign-in: what the session's single sign-on offers other clients.
    var signIn: SignInFacts?
    /// The OpenID client's request this sign-in serves, answered with a code once the person is signed in.
    var authorization: AuthorizationRequest?
    /// Where the browser goes next instead of the step's page (the client, told that the person declined).
    var pendingRedirect: String?
    /// A page of this server the person goes back to once signed in (only `/account`).
    var returnTo: String?
    /// The languages asked for (`ui_locales` of the client's request or of `/login`), before the browser's.
    var uiLocales: String?
    /// The language the signed-in account's owner chose (``TFAAccountRecord/language``), read at sign-in.
    var accountLanguage: String?
    /// The activation a person started on `/account` for a new phone, while its QR code is shown.
    var newPhone: String?
    /// Set while the signed-in person passes a further factor (``stepUp(regToken:providers:userId:notice:)``): the
    /// sign-in it ends in adds to the session's, it does not replace it.
    var steppingUp: Bool?

    init(application: String) { self.application = application }

    /// A fresh start at the password form of the same application, still serving the same client's request and
    /// keeping the session's sign-in for single sign-on until another replaces it.
    func restarted() -> LoginState {
        var state = LoginState(application: application)
        state.authorization = authorization
        state.signIn = signIn
        state.methods = methods
        state.returnTo = returnTo
        state.uiLocales = uiLocales
        return state
    }

    /// A step-up: the signed-in person passes one of `providers` (of the flow `regToken`) before going on; the
    /// password is not asked again.
    mutating func stepUp(regToken: String, providers: [TFAProvider], userId: String, notice: String) {
        step = .chooseFactor
        self.regToken = regToken
        registration = false
        self.providers = providers
        self.userId = userId
        self.notice = notice
        steppingUp = true
    }

    /// Forgets the chosen provider's part.
    mutating func clearFactor() {
        (provider, assertion, phvToken, sctToken, qrCode, secret, destination, operationId, number, passkeyOptions) =
            (nil, nil, nil, nil, nil, nil, nil, nil, nil, nil)
    }
}

/// The hosted sign-in's decisions, apart from HTTP and the database: which step follows which, what a person's
/// form asks of the services, what their answers change, and where the browser goes for the OpenID client the
/// sign-in serves. The state is ``LoginState``; the events are ``Event``; ``transition(_:on:)`` answers the next
/// state and the ``Action`` that follows — a check a service makes (whose answer is the next event), or the end of
/// the request (show the step's page, redirect).
///
/// ``LoginPages`` is the interpreter: it turns a request into an event, carries out each action with the two-factor
/// services and feeds their answers back, then renders or redirects. Nothing here reads a clock, a database or a
/// random number, so every transition is tested without a server (`LoginFlowTests`), like the operation and
/// activation transitions.
struct LoginFlow: Sendable {
    /// This provider's issuer, named in the error redirects to a client (RFC 9207's `iss`).
    let issuer: String

    // MARK: Events and actions

    /// The forms of the sign-in pages, each posted to its step's path.
    enum Form: CaseIterable, Sendable {
        case password, factor, destination, code, push, passkey, consent

        /// The step whose page shows the form.
        var step: LoginState.Step {
            switch self {
            case .password: .signIn
            case .factor: .chooseFactor
            case .destination: .chooseDestination
            case .code: .enterCode
            case .push: .waitForPush
            case .passkey: .passkey
            case .consent: .consent
            }
        }

        /// The path the form is posted to: its step's page.
        var path: String { step.path }

        /// The form posted to `path`, if one is.
        init?(path: String) {
            guard let form = Self.allCases.first(where: { $0.path == path }) else { return nil }
            self = form
        }

        /// What the person did, read from the form's fields (the password and a passkey's credential stay with the
        /// request: the flow only learns whether they came).
        func event(_ fields: [String: String]) -> Event {
            let remember = fields["remember"] != nil
            switch self {
            case .password:
                return .passwordEntered(userId: fields["userId"] ?? "", password: !(fields["password"] ?? "").isEmpty)
            case .factor:
                return .factorChosen(fields["provider"].flatMap(TFAProvider.init(rawValue:)))
            case .destination:
                return .destinationChosen(
                    Destination(
                        emailId: fields["emailId"], phoneId: fields["phoneId"], phone: fields["phone"],
                        method: fields["method"].flatMap(TFAPhoneMethod.init(rawValue:)),
                        activationId: fields["activationId"]))
            case .code: return .codeEntered(fields["code"] ?? "", remember: remember)
            case .push: return .pushContinued(remember: remember)
            case .passkey: return .passkeyUsed(credential: !(fields["credential"] ?? "").isEmpty, remember: remember)
            case .consent: return .consentDecided(allow: fields["decision"] == "allow")
            }
        }
    }

    /// What the destination page posted: the address, number or phone chosen, or a new number.
    struct Destination: Equatable, Sendable {
        var emailId: String?
        var phoneId: String?
        /// A new number, as typed (when setting up the phone factor).
        var phone: String?
        var method: TFAPhoneMethod?
        var activationId: String?
    }

    /// A second factor the password asked for.
    struct SecondFactor: Equatable, Sendable {
        var regToken: String
        /// Whether the account sets up its first factor (403102) rather than verifying one (403101).
        var registration: Bool
        /// The providers the flow offers: the account's own when verifying, the registrable ones when registering.
        var providers: [TFAProvider]
        /// The language the account's owner chose.
        var accountLanguage: String?
    }

    /// A finished sign-in: who, with what, and the facts of its login token.
    struct SignedIn: Equatable, Sendable {
        var userId: String
        /// What the login token was verified with, in words (``LoginPages/methods(of:)``).
        var methods: [String]
        /// The login token's facts, with a new session id (kept from the session's sign-in when it is the same
        /// person).
        var facts: SignInFacts
        var accountLanguage: String?
        /// The backup codes left, when a backup code finished the sign-in.
        var backupCodesLeft: Int? = nil
    }

    /// What a provider's part prepared before the person can pass it.
    enum Prepared: Equatable, Sendable {
        /// An authenticator app's registration: its QR code (PNG data URL), the secret's token and the secret
        /// (Base32, for typing in).
        case totp(qrCode: String, sctToken: String, secret: String?)
        /// A push approval request sent; `number` is the one the phone asks for (number matching).
        case push(operationId: String, number: Int?)
        /// A passkey ceremony's options for the browser (JSON).
        case passkey(options: String)
    }

    /// What happened: a form the person posted, or the answer of a check an action asked for.
    enum Event: Sendable, Equatable {
        /// The password form (`password`: whether one was typed; the flow never sees it).
        case passwordEntered(userId: String, password: Bool)
        /// The method chosen on the factor page (`nil`: none the page could have offered).
        case factorChosen(TFAProvider?)
        /// "Use another method" from a provider's page.
        case anotherMethod
        case destinationChosen(Destination)
        case codeEntered(String, remember: Bool)
        /// Continue on the push page.
        case pushContinued(remember: Bool)
        /// The passkey step's form (`credential`: whether the browser sent one).
        case passkeyUsed(credential: Bool, remember: Bool)
        case consentDecided(allow: Bool)

        /// The password was right, and a second factor is needed.
        case secondFactorNeeded(SecondFactor)
        case signedIn(SignedIn)
        /// The provider's part started for `provider` (its assertion).
        case factorStarted(TFAProvider, assertion: String)
        case factorPrepared(Prepared)
        /// A code went out; `destination` obfuscated (`nil`: the one the form gave, already kept).
        case codeSent(destination: String?, phvToken: String)
        /// The chosen phone was asked to approve sign-ins from now on.
        case phoneAsked(operationId: String)
        /// The address, number or phone chosen is not one of the account's.
        case notOffered
        /// The factor was passed; its proof finalizes the flow.
        case factorPassed(proof: String, remember: Bool, backupCodesLeft: Int?)
        /// The push page's Continue before the phone answered.
        case notApprovedYet
        /// The browser's passkey answer could not be read.
        case passkeyUnreadable
        /// The passkey was refused; the challenge on the page is spent, `options` the new one (while tries last).
        case passkeyRefused(TFAError, options: String?)
        /// A two-factor check refused.
        case failed(TFAError)
        /// A passwordless sign-in (a passkey alone) refused: the password form again, with the reason.
        case passwordlessRefused(TFAError)
        /// A service refused with a sentence (a limit, a bad value).
        case refused(String)

        /// The form is handled: where does the browser go now?
        case proceed
        /// A step-up's flow (its `regToken`) and the account's active providers.
        case stepUpOffered(regToken: String, providers: [TFAProvider])
        /// Whether the client's request needs the person's consent first.
        case consentChecked(needed: Bool)
    }

    /// What the controller does next.
    enum Action: Equatable, Sendable {
        /// Nothing more for this form: the browser goes on (``Event/proceed``).
        case done
        /// Check the password of `userId` (the controller has it from the form).
        case checkPassword(userId: String)
        case startFactor(regToken: String, TFAProvider, registration: Bool)
        /// Register an authenticator app (its QR code and secret).
        case registerTOTP(assertion: String)
        /// Send the push approval request (naming `site`, the client or the application).
        case sendPush(assertion: String, site: String?)
        case passkeyOptions(assertion: String)
        /// Send a code to the account's address `emailId` (checked to be one of the account's).
        case sendEmail(assertion: String, emailId: String?)
        /// Send a code to the account's number `phoneId`, or to `newNumber` when setting up.
        case sendPhone(assertion: String, method: TFAPhoneMethod, phoneId: String?, newNumber: String?)
        /// Ask the phone to approve sign-ins from now on.
        case optIn(assertion: String, activationId: String)
        case verify(Verification, remember: Bool)
        case finalize(regToken: String, assertion: String, proof: String, remember: Bool, backupCodesLeft: Int?)
        /// Remember the person's consent to the client's request.
        case grantConsent(AuthorizationRequest, userId: String)
        /// Send the browser to this address (a step's page, the client, `/account`).
        case redirect(String)
        /// Ask for a further factor of the signed-in `userId` (``Event/stepUpOffered(regToken:providers:)``).
        case stepUp(userId: String)
        case checkConsent(AuthorizationRequest, userId: String)
        /// Issue the client's code and send the browser to it.
        case issueCode(AuthorizationRequest, SignInFacts)
    }

    /// A check of what the person entered or did.
    enum Verification: Equatable, Sendable {
        case totp(assertion: String, code: String, sctToken: String?)
        case code(TFAProvider, assertion: String, phvToken: String, code: String)
        case backup(assertion: String, code: String)
        case push(assertion: String)
        case passkey(assertion: String, registration: Bool)
    }

    // MARK: Transitions

    /// The steps at which `form` is taken; posted at another step it changes nothing and the browser goes to
    /// where the sign-in is.
    static func steps(accepting form: Form) -> Set<LoginState.Step> {
        switch form {
        case .password: [.signIn]
        // A method is chosen again from any provider's page.
        case .factor: [.chooseFactor, .chooseDestination, .enterCode, .waitForPush, .passkey]
        case .destination: [.chooseDestination]
        case .code: [.enterCode]
        case .push: [.waitForPush]
        case .passkey: [.passkey]
        case .consent: [.consent]
        }
    }

    /// The next state and what follows, for `event` at `state`.
    func transition(_ state: LoginState, on event: Event) -> (state: LoginState, action: Action) {
        var next = state
        let action = apply(event, to: &next)
        return (next, action)
    }

    private func apply(_ event: Event, to state: inout LoginState) -> Action {
        switch event {
        case .passwordEntered(let typed, let password):
            let userId = typed.trimmingCharacters(in: .whitespaces)
            state.userId = userId
            guard !userId.isEmpty, password else { return state.say("Enter your user name and your password.") }
            return .checkPassword(userId: userId)

        case .secondFactorNeeded(let needed):
            state.accountLanguage = needed.accountLanguage
            state.regToken = needed.regToken
            state.registration = needed.registration
            state.providers = needed.providers.filter { Self.meets($0, state.authorization?.assurance) }
            state.step = .chooseFactor
            if state.providers.isEmpty {
                state.message = "This account has no second factor this application accepts: ask the service's support."
            }
            return .done

        case .signedIn(let signedIn):
            Self.signIn(&state, signedIn)
            return .done

        case .factorChosen(let provider):
            guard let regToken = state.regToken, let provider, state.providers.contains(provider) else {
                return state.say("Choose one of the methods shown.")
            }
            return .startFactor(regToken: regToken, provider, registration: state.registration)

        case .factorStarted(let provider, let assertion):
            state.clearFactor()
            state.provider = provider
            state.assertion = assertion
            switch (provider, state.registration) {
            case (.totp, false), (.backup, _):
                state.step = .enterCode
                return .done
            case (.totp, true): return .registerTOTP(assertion: assertion)
            case (.push, false): return .sendPush(assertion: assertion, site: state.authorization?.clientName)
            case (.passkey, _): return .passkeyOptions(assertion: assertion)
            case (.email, _), (.phone, _), (.push, true):
                state.step = .chooseDestination
                return .done
            }

        case .factorPrepared(let prepared):
            switch prepared {
            case .totp(let qrCode, let sctToken, let secret):
                (state.qrCode, state.sctToken, state.secret) = (qrCode, sctToken, secret)
                state.step = .enterCode
            case .push(let operationId, let number):
                (state.operationId, state.number) = (operationId, number)
                state.step = .waitForPush
            case .passkey(let options):
                state.passkeyOptions = options
                state.step = .passkey
            }
            return .done

        case .anotherMethod:
            if [.chooseDestination, .enterCode, .waitForPush, .passkey].contains(state.step) {
                // The abandoned part expires on its own.
                state.clearFactor()
                state.step = .chooseFactor
            }
            return .done

        case .destinationChosen(let chosen):
            return destination(chosen, &state)

        case .codeSent(let destination, let phvToken):
            state.phvToken = phvToken
            if let destination { state.destination = destination }
            state.step = .enterCode
            return .done

        case .phoneAsked(let operationId):
            state.operationId = operationId
            state.step = .waitForPush
            return .done

        case .notOffered:
            return state.say(
                state.provider == .email ? "Choose one of the addresses shown." : "Choose one of the numbers shown.")

        case .codeEntered(let typed, let remember):
            guard let assertion = state.assertion, let provider = state.provider else { return .done }
            let code = typed.filter { !$0.isWhitespace }
            guard !code.isEmpty else { return state.say("Enter the code.") }
            switch provider {
            case .totp:
                return .verify(.totp(assertion: assertion, code: code, sctToken: state.sctToken), remember: remember)
            case .email, .phone:
                guard let phvToken = state.phvToken else { return .done }
                return .verify(
                    .code(provider, assertion: assertion, phvToken: phvToken, code: code), remember: remember)
            case .backup:
                return .verify(.backup(assertion: assertion, code: code), remember: remember)
            case .push, .passkey:
                return .done
            }

        case .pushContinued(let remember):
            guard let assertion = state.assertion else { return .done }
            return .verify(.push(assertion: assertion), remember: remember)

        case .notApprovedYet:
            return state.say("Not approved yet: approve the request on your phone, then continue.")

        case .passkeyUsed(let credential, let remember):
            guard let assertion = state.assertion, credential else {
                return state.say("Your browser sent no passkey: try again, or use another method.")
            }
            return .verify(.passkey(assertion: assertion, registration: state.registration), remember: remember)

        case .passkeyUnreadable:
            return state.say("Your browser sent something that is not a passkey: try again, or use another method.")

        case .passkeyRefused(let error, let options):
            if let options { state.passkeyOptions = options }
            Self.absorb(error, into: &state)
            return .done

        case .factorPassed(let proof, let remember, let left):
            guard let regToken = state.regToken, let assertion = state.assertion else { return .done }
            return .finalize(
                regToken: regToken, assertion: assertion, proof: proof, remember: remember, backupCodesLeft: left)

        case .failed(let error):
            Self.absorb(error, into: &state)
            return .done

        case .refused(let sentence):
            return state.say(sentence)

        case .passwordlessRefused(let error):
            state = state.restarted()
            return state.say(error.message)

        case .consentDecided(let allow):
            guard let request = state.authorization, let signIn = state.signIn else { return .done }
            state.step = .signedIn
            guard allow else {
                state.authorization = nil
                state.pendingRedirect = request.errorLocation(
                    .accessDenied, "The person did not allow this client.", issuer: issuer)
                return .done
            }
            // Asked as prompt=consent wanted: not again for this request.
            state.authorization?.prompt.removeAll { $0 == "consent" }
            return .grantConsent(request, userId: signIn.userId)

        case .proceed:
            return proceed(&state)

        case .stepUpOffered(let regToken, let active):
            guard let request = state.authorization, let wanted = request.assurance, let userId = state.signIn?.userId
            else { return .redirect(state.step.path) }
            let providers = active.filter { Self.meets($0, wanted) }
            guard !providers.isEmpty else {
                state.authorization = nil
                return .redirect(
                    request.errorLocation(
                        .accessDenied, "The account has no second factor that meets \(wanted.acr).", issuer: issuer))
            }
            state.stepUp(
                regToken: regToken, providers: providers, userId: userId,
                notice: wanted == .phone
                    ? "\(request.clientName) asks you to approve this sign-in on your phone."
                    : "\(request.clientName) asks for a second factor.")
            return .redirect(state.step.path)

        case .consentChecked(let needed):
            guard let request = state.authorization, let signIn = state.signIn else {
                return .redirect(state.step.path)
            }
            if needed {
                state.step = .consent
                return .redirect(state.step.path)
            }
            state.authorization = nil
            return .issueCode(request, signIn)
        }
    }

    /// The destination form: where the code goes, or which phone is asked.
    private func destination(_ chosen: Destination, _ state: inout LoginState) -> Action {
        guard let assertion = state.assertion else { return .done }
        switch state.provider {
        case .email:
            return .sendEmail(assertion: assertion, emailId: chosen.emailId)
        case .phone:
            let method = chosen.method ?? .sms
            guard state.registration else {
                return .sendPhone(assertion: assertion, method: method, phoneId: chosen.phoneId, newNumber: nil)
            }
            let number = (chosen.phone ?? "").filter { !" -()".contains($0) }
            guard CodeFactor.isE164(number) else {
                return state.say(
                    "Enter the number in international form: + and the country code, e.g. +420 601 234 567.")
            }
            state.destination = CodeFactor.obfuscatePhone(number)
            return .sendPhone(assertion: assertion, method: method, phoneId: nil, newNumber: number)
        case .push:
            guard let activationId = chosen.activationId, !activationId.isEmpty else {
                return state.say("Choose the phone that will approve your sign-ins.")
            }
            return .optIn(assertion: assertion, activationId: activationId)
        case .totp, .passkey, .backup, nil:
            state.step = .chooseFactor
            return .done
        }
    }

    /// Where a handled form sends the browser: a redirect the flow holds (a client told the person declined, a
    /// page of this server to return to), the step's page, or — signed in for a client's request — on to the
    /// client with a code when the sign-in is strong enough and allowed, else a further factor or the consent page.
    private func proceed(_ state: inout LoginState) -> Action {
        if let redirect = state.pendingRedirect {
            state.pendingRedirect = nil
            return .redirect(redirect)
        }
        if state.step == .signedIn, state.authorization == nil, let target = state.returnTo {
            state.returnTo = nil
            return .redirect(target)
        }
        guard state.step == .signedIn, let request = state.authorization, let signIn = state.signIn else {
            return .redirect(state.step.path)
        }
        if let hinted = request.hintedUserId, hinted != signIn.userId {
            // Core §3.1.2.1: the person the hint names did not sign in.
            state.authorization = nil
            return .redirect(
                request.errorLocation(
                    .loginRequired, "The person who signed in is not the one id_token_hint names.", issuer: issuer))
        }
        if let wanted = request.assurance, signIn.assurance < wanted {
            // A step-up: a second factor that makes it so, the password not asked again.
            return .stepUp(userId: signIn.userId)
        }
        return .checkConsent(request, userId: signIn.userId)
    }

    /// A finished sign-in: the session starts over signed in, keeping its client's request and — for the same person
    /// — the session's identity for the clients it serves; a step-up adds its factor to the sign-in it stepped up
    /// (no password was asked: a passkey sign-in stepped up is still no `pwd`).
    private static func signIn(_ state: inout LoginState, _ signedIn: SignedIn) {
        let previous = state.signIn
        let steppedUp = state.steppingUp == true
        let previousMethods = state.methods
        state = state.restarted()
        state.userId = signedIn.userId
        state.step = .signedIn
        state.methods = signedIn.methods
        if steppedUp, previous?.userId == signedIn.userId {
            state.methods =
                previousMethods + state.methods.filter { $0 != "password" && !previousMethods.contains($0) }
        }
        var facts = signedIn.facts
        if let previous, previous.userId == signedIn.userId {
            facts = steppedUp ? facts.steppedUp(from: previous) : facts
            facts.sessionId = previous.sessionId
        }
        state.signIn = facts
        state.accountLanguage = signedIn.accountLanguage
        if let left = signedIn.backupCodesLeft, left <= BackupCodeFactor.lowWater {
            state.notice =
                left == 0
                ? "That was your last backup code: make new ones now, so that you are not locked out."
                : "Only \(left) backup \(left == 1 ? "code is" : "codes are") left: make new ones soon."
        }
    }

    /// Turns a flow error into the message of the step the person continues at.
    static func absorb(_ error: TFAError, into state: inout LoginState) {
        switch error.error {
        case .invalidRegToken:
            state = state.restarted()
            state.message = "Your sign-in expired: sign in again."
        case .invalidLogin:
            // The form asks for a user name.
            state.message = "The user name or the password is wrong."
        case .assertionSpent, .invalidAssertion, .pushNotSent, .totpNotRegistered:
            state.clearFactor()
            state.step = .chooseFactor
            state.message = "That verification expired or used all its tries: choose a method again."
        case .pushRejected, .pushNotApproved, .pushDeviceNotOptedIn:
            state.clearFactor()
            state.step = .chooseFactor
            // The API speaks to a relying party about its user; the page speaks to the person.
            let answerer = error.message.contains("a browser") ? "in your browser" : "on your phone"
            state.message =
                switch error.error {
                case .pushRejected:
                    error.message.contains("fraud")
                        ? "You reported this sign-in as fraud on your phone: it was stopped."
                        : error.message.contains("another number")
                            ? "The number chosen \(answerer) was not the one shown here: the sign-in was stopped."
                            : "You rejected the sign-in \(answerer)."
                case .pushNotApproved: "The request on your phone expired or was withdrawn: choose a method again."
                default: "A phone that does not approve your sign-ins answered: approve on the phone you set up."
                }
        default:
            state.message = error.message
            if error.attemptsLeft == 0 {
                state.clearFactor()
                state.step = .chooseFactor
            }
        }
    }

    /// Whether verifying `provider` gives a sign-in the strength a client asks for: approval on a phone is the only
    /// factor that meets ``SignInAssurance/phone``; any factor meets the others.
    static func meets(_ provider: TFAProvider, _ wanted: SignInAssurance?) -> Bool {
        wanted != .phone || provider == .push
    }

    // MARK: Pages

    /// What a `GET` of `step`'s page shows.
    enum Visit: Equatable, Sendable {
        /// The page; `changed`: the state changed and is stored.
        case render(changed: Bool)
        /// The session is elsewhere: its step's page.
        case redirect(String)
    }

    /// A visit of `step`'s page: the page when the session is at that step (the factor page also from a
    /// provider's page: "use another method"), else its own step's page.
    func visit(_ state: LoginState, _ step: LoginState.Step) -> (state: LoginState, visit: Visit) {
        var next = state
        if step == .chooseFactor { _ = apply(.anotherMethod, to: &next) }
        guard next.step == step else { return (next, .redirect(next.step.path)) }
        return (next, .render(changed: next.step != state.step))
    }

    /// The password form's page for `application` when the session holds `state`: the signed-in page for a
    /// signed-in session of the same application, else the form — starting over, keeping the name typed and the
    /// single sign-on of the same application (another application's page starts empty).
    func signInPage(
        _ state: LoginState, application: String, expired: Bool, uiLocales: String?, toAccount: Bool
    ) -> (state: LoginState, visit: Visit) {
        if state.step == .signedIn && state.application == application {
            return (state, .redirect(LoginState.Step.signedIn.path))
        }
        let sameApplication = state.application == application
        var next = sameApplication ? state.restarted() : LoginState(application: application)
        next.message = state.message ?? (expired ? "The page expired: sign in again." : nil)
        if sameApplication { next.userId = state.userId }
        if let uiLocales { next.uiLocales = uiLocales }
        if toAccount { next.returnTo = "/account" }
        return (next, .render(changed: true))
    }

    // MARK: The authorization endpoint

    /// What the authorization endpoint does with a valid request.
    enum Authorize: Equatable, Sendable {
        /// Back to the client with this error (`prompt=none` that cannot be answered without the person).
        case redirect(String)
        /// The session's sign-in serves the request: on with this state (``Event/proceed``).
        case signedIn(LoginState)
        /// The person signs in (again) on the hosted pages, for this request.
        case signIn(LoginState)
    }

    /// Whether a sign-in of the session may answer `request` without asking for the password again: not when the
    /// client asks for a fresh sign-in (`prompt=login`), when `max_age` has passed since it at `now`, or when
    /// `id_token_hint` names someone else; and only within the client's application. (A sign-in weaker than
    /// `acr_values` ask is stepped up with a second factor.)
    static func serves(_ request: AuthorizationRequest, _ signIn: SignInFacts?, applicationId: String?, now: Millis)
        -> Bool
    {
        guard let signIn, applicationId == request.applicationId, !request.prompt.contains("login"),
            request.hintedUserId == nil || request.hintedUserId == signIn.userId
        else { return false }
        if let maxAge = request.maxAge, now - signIn.authTime > Millis(maxAge) * 1000 { return false }
        return true
    }

    /// The authorization endpoint's decision (OpenID Connect Core §3.1.2) for `request` and the session's state
    /// (`nil`: no session) at `now`: a signed-in session answers it (a code, a step-up, consent), `prompt=none`
    /// never shows a page, else the person signs in for it — the session's sign-in serving others meanwhile.
    /// `needsConsent` answers whether the client needs the person's consent (asked only for `prompt=none`).
    func authorize(
        _ request: AuthorizationRequest, session: LoginState?, now: Millis,
        needsConsent: (_ userId: String) async throws -> Bool
    ) async rethrows -> Authorize {
        // The session's sign-in, also while the person is part-way through another one.
        let signIn = session?.application == request.applicationId ? session?.signIn : nil
        let none = request.prompt.contains("none")
        if let session, let signIn, Self.serves(request, signIn, applicationId: session.application, now: now) {
            if none, let wanted = request.assurance, signIn.assurance < wanted {
                return .redirect(
                    request.errorLocation(
                        .interactionRequired, "The request needs a second factor the session has not verified.",
                        issuer: issuer))
            }
            if none, try await needsConsent(signIn.userId) {
                return .redirect(
                    request.errorLocation(
                        .consentRequired, "The person has not allowed this client yet.", issuer: issuer))
            }
            var state = session.restarted()
            state.step = .signedIn
            state.userId = signIn.userId
            state.authorization = request
            return .signedIn(state)
        }
        if none {
            return .redirect(
                request.errorLocation(
                    .loginRequired,
                    signIn == nil
                        ? "The person is not signed in."
                        : request.hintedUserId.map { $0 != signIn?.userId } == true
                            ? "The person signed in is not the one id_token_hint names."
                            : "The request needs the person to sign in again.",
                    issuer: issuer))
        }
        var state = LoginState(application: request.applicationId)
        state.authorization = request
        state.signIn = signIn
        state.methods = session?.methods ?? []
        state.userId = request.loginHint ?? request.hintedUserId ?? signIn?.userId
        state.uiLocales = request.uiLocales
        return .signIn(state)
    }

    // MARK: The account page

    /// Whether `/account` opens for the session.
    enum AccountGate: Equatable, Sendable {
        /// A fresh sign-in with a second factor: the page, for this person.
        case open(userId: String)
        /// A fresh sign-in with a password alone: a second factor first, with this state (back to `/account`
        /// after).
        case secondFactor(LoginState)
        /// Sign in again, with this state (back to `/account` after).
        case signInAgain(LoginState)
    }

    /// `/account` opens for a sign-in with a second factor at most `freshness` milliseconds old at `now`; a fresh
    /// password-only sign-in passes one of the account's factors first (`stepUp` starts that flow: its `regToken`
    /// and the account's active providers); anything else — also an account without a factor — signs in again.
    static func accountGate(
        _ state: LoginState, now: Millis, freshness: Millis,
        stepUp: (_ userId: String) async throws -> (regToken: String, providers: [TFAProvider])
    ) async rethrows -> AccountGate {
        if state.step == .signedIn, let signIn = state.signIn, now - signIn.authTime <= freshness {
            if signIn.assurance >= .secondFactor { return .open(userId: signIn.userId) }
            let (regToken, providers) = try await stepUp(signIn.userId)
            if !providers.isEmpty {
                var next = state
                next.stepUp(
                    regToken: regToken, providers: providers, userId: signIn.userId,
                    notice: "Confirm it is you with a second factor to manage your account's security.")
                next.returnTo = "/account"
                return .secondFactor(next)
            }
        }
        return .signInAgain(signInAgain(state))
    }

    private static func signInAgain(_ state: LoginState) -> LoginState {
        var next = state.restarted()
        next.userId = state.signIn?.userId ?? state.userId
        next.returnTo = "/account"
        next.notice = "Sign in again to manage your account's security."
        return next
    }
}

extension LoginState {
    /// Sets the message for the next page and answers that nothing more follows.
    fileprivate mutating func say(_ message: String) -> LoginFlow.Action {
        self.message = message
        return .done
    }
}
