import AssentCrypto
import AssentModel
import Foundation

/// Decides a VPN's or a host's sign-in with the account's password and second factor, on top of two-factor login
/// (``TFAService``): the same accounts, policy, rate limits, push-bombing limits and audit as a website's sign-in.
///
/// One exchange: the password (optionally followed by a TOTP or backup code in the same field) is checked; with a
/// code, the code decides at once; without one, a push goes to the person's phones — with number matching the
/// gateway shows the number in a challenge and the person answers after approving, without it Assent waits for the
/// approval — or, for an account without a phone, a challenge asks for the code. A challenge's `State` names the
/// challenge's assertion, so the answer continues this sign-in's flow only.
struct AccessService: Sendable {
    let flows: TFAService
    let totp: TOTPFactor
    let backup: BackupCodeFactor
    let push: PushFactor
    let store: any TFAStore
    let clock: WallClock
    /// How long one request waits for a push approval without number matching before it answers with a challenge.
    var pushWait: Duration = .seconds(25)
    /// How often the wait looks at the approval.
    var pushPoll: Duration = .milliseconds(200)
    /// The length of the authenticator apps' codes Assent registers (TOTPFactor).
    static let totpDigits = 6

    /// The decision for `request` in `application`. Refusals the person can act on are rejections with a sentence;
    /// a failure of Assent itself throws (the gateway then refuses: fail-closed).
    func check(_ request: AccessRequest, application: ApplicationRecord) async throws -> AccessDecision {
        try await check(request, application: application, wait: .seconds(5))
    }

    /// `wait`: how long an answer after a push waits for the phone before asking again.
    private func check(_ request: AccessRequest, application: ApplicationRecord, wait: Duration) async throws
        -> AccessDecision
    {
        let decision = try await refusing {
            if let state = request.state {
                return try await answer(request, state: state, application: application, wait: wait)
            }
            return try await first(request, application: application)
        }
        if case .challenge(_, let state) = decision, !request.challenges {
            return .reject(
                message: AccessState(state)?.waiting == .push
                    ? "The sign-in was not approved on the phone in time."
                    : "Type your password followed by the code from your authenticator app.")
        }
        return decision
    }

    // MARK: The first request

    private func first(_ request: AccessRequest, application: ApplicationRecord) async throws -> AccessDecision {
        guard UserID.isValid(request.userId), !request.typed.isEmpty else {
            return .reject(message: "Type your user name and password.")
        }
        // The readings do not depend on the account, so their number (and the time they take) tells nothing of it.
        let readings = TypedField.readings(request.typed, totpDigits: Self.totpDigits, backupCodes: true)
        // Each reading's password is tried; only the last (the whole field) counts a wrong one.
        for (index, reading) in readings.enumerated() {
            let outcome: TFAService.Outcome
            do {
                outcome = try await flows.login(
                    TFALoginRequest(application: application.id, userId: request.userId, password: reading.password),
                    address: request.clientAddress, countsFailure: index == readings.count - 1)
            } catch let error as TFAError where error.error == .invalidLogin && index < readings.count - 1 {
                continue
            }
            return try await after(outcome, request, application: application, code: reading.code, holdPush: true)
        }
        return .reject(message: "The user name or password is wrong.")
    }

    /// After the first factor: in when no second factor is due; else the typed code decides, or the second factor
    /// starts (a push held for its answer when `holdPush`, else answered with the challenge at once).
    private func after(
        _ outcome: TFAService.Outcome, _ request: AccessRequest, application: ApplicationRecord, code: String?,
        holdPush: Bool
    ) async throws -> AccessDecision {
        switch outcome {
        case .success:
            return .accept(message: "Welcome, \(request.userId).")
        case .interruption(let interruption):
            let flow = try await flows.openFlow(interruption.regToken)
            guard flow.kind == .verification else {
                return .reject(
                    message: "Your account has no second factor yet: add one where you manage your account, "
                        + "then sign in again.")
            }
            if let code { return try await verify(code, in: flow, userId: request.userId) }
            let factors = try await store.tfaFactors(applicationId: application.id, userId: request.userId)
                .filter { $0.state == .active }
            return try await secondFactor(request, flow: flow, factors: factors, holdPush: holdPush)
        }
    }

    /// `body`'s decision; a refusal the person can act on (a TFA error, a 4xx) becomes a rejection with its sentence.
    private func refusing(_ body: () async throws -> AccessDecision) async throws -> AccessDecision {
        do {
            return try await body()
        } catch let error as TFAError {
            return .reject(message: error.message)
        } catch let error as AssentServerError where (400..<500).contains(error.status) {
            return .reject(message: error.message)
        }
    }

    // MARK: A host's sign-in (PAM)

    /// A host checked the first factor itself (an SSH key, the Unix password): the second factor starts — accepted at
    /// once when the policy asks for none, else a challenge the host shows before its prompt (the push is sent and
    /// never waited for here: the person must read the number first).
    func startSecondFactor(_ request: AccessRequest, application: ApplicationRecord) async throws -> AccessDecision {
        try await refusing {
            guard UserID.isValid(request.userId) else { return .reject(message: "This user cannot sign in here.") }
            let outcome = try await flows.secondFactor(
                application: application, userId: request.userId, firstFactor: nil, deviceToken: nil)
            return try await after(outcome, request, application: application, code: nil, holdPush: false)
        }
    }

    /// The answer to ``startSecondFactor(_:application:)``'s challenge: a typed code, or nothing once the phone
    /// approved (waited for up to ``pushWait``); no further challenge — a host asks once.
    func finishSecondFactor(_ request: AccessRequest, application: ApplicationRecord) async throws -> AccessDecision {
        guard request.state != nil else { return .reject(message: "No sign-in is in progress: sign in again.") }
        let decision = try await check(request, application: application, wait: pushWait)
        if case .challenge = decision {
            return .reject(message: "The sign-in was not approved on the phone in time.")
        }
        return decision
    }

    /// After the password: a push to the person's phones when they have one, else a challenge for a code.
    private func secondFactor(
        _ request: AccessRequest, flow: TFAFlowRecord, factors: [TFAFactorRecord], holdPush: Bool
    ) async throws -> AccessDecision {
        let providers = Set(factors.map(\.provider))
        if providers.contains(.push), !request.challenges,
            try await flows.policy(flow.applicationId).numberMatching ?? NumberMatching.choose != NumberMatching.off
        {
            // The gateway cannot show the number: no push the person could not finish.
            return .reject(
                message: "This gateway cannot show the number to choose on your phone: type your password followed "
                    + "by the code from your authenticator app.")
        }
        if providers.contains(.push) {
            let started = try await flows.start(flow, provider: .push, mode: .verify)
            let site = [request.service, request.gateway].compactMap { $0 }.joined(separator: " ")
            let now = clock.now()
            let sent = try await push.send(TFAAssertionRequest(assertion: started.assertion)) { _ in
                LoginContext(site: site, userAgent: nil, address: request.clientAddress, at: now)
            }
            let state = AccessState(waiting: .push, assertion: started.assertion).text
            let codes = providers.contains(.totp) || providers.contains(.backup)
            guard holdPush else {
                return .challenge(
                    message: "Approve the sign-in on your phone"
                        + (sent.number.map { " and choose \($0) there" } ?? "") + ", then press Enter"
                        + (codes ? " (or type a code from your authenticator app)." : "."),
                    state: state)
            }
            if let number = sent.number {
                return .challenge(
                    message: "Approve the sign-in on your phone and choose \(number) there, then press Enter"
                        + (codes ? " (or type a code from your authenticator app)." : "."),
                    state: state)
            }
            return try await awaitApproval(started.assertion, flow: flow, state: state, codes: codes)
        }
        if providers.contains(.totp) || providers.contains(.backup) {
            let provider: TFAProvider = providers.contains(.totp) ? .totp : .backup
            let started = try await flows.start(flow, provider: provider, mode: .verify)
            return .challenge(
                message: provider == .totp
                    ? "Type the code from your authenticator app (or a backup code)."
                    : "Type one of your backup codes.",
                state: AccessState(waiting: .code, assertion: started.assertion).text)
        }
        return .reject(
            message: "Your account's second factors cannot be used here: approve with a phone or use an "
                + "authenticator app.")
    }

    // MARK: An answer to a challenge

    private func answer(
        _ request: AccessRequest, state text: String, application: ApplicationRecord, wait: Duration
    ) async throws -> AccessDecision {
        guard let state = AccessState(text) else {
            return .reject(message: "This answer belongs to no sign-in in progress: sign in again.")
        }
        let (_, flow) = try await flows.challenge(
            state.assertion, provider: state.waiting == .push ? .push : try await codeProvider(state.assertion))
        guard flow.applicationId == application.id, flow.userId == request.userId else {
            return .reject(message: "This answer belongs to another sign-in: sign in again.")
        }
        let typed = request.typed.trimmingCharacters(in: .whitespaces)
        if !typed.isEmpty {
            return try await verify(typed, in: flow, userId: request.userId)
        }
        guard state.waiting == .push else { return .reject(message: "Type the code to sign in.") }
        return try await awaitApproval(state.assertion, flow: flow, state: text, codes: false, wait: wait)
    }

    /// The provider of a code challenge: TOTP or backup codes.
    private func codeProvider(_ assertion: String) async throws -> TFAProvider {
        guard let challenge = try await store.tfaChallenge(assertionHash: TFATokens.hash(assertion)) else {
            throw TFAError.challengeSpent()
        }
        return challenge.provider
    }

    // MARK: Factors

    /// A typed code decides: six digits (or the authenticator's length) are a TOTP code, else a backup code.
    private func verify(_ code: String, in flow: TFAFlowRecord, userId: String) async throws -> AccessDecision {
        let isTOTP = code.allSatisfy { $0.isASCII && $0.isNumber }
        let started = try await flows.start(flow, provider: isTOTP ? .totp : .backup, mode: .verify)
        let proof: String
        if isTOTP {
            proof = try await totp.verify(TOTPVerifyRequest(assertion: started.assertion, code: code))
                .providerAssertion
        } else {
            proof = try await backup.verify(BackupCodeVerifyRequest(assertion: started.assertion, code: code))
                .providerAssertion
        }
        _ = try await flows.finalize(flow, assertion: started.assertion, providerAssertion: proof)
        return .accept(message: "Welcome, \(userId).")
    }

    /// Waits up to `wait` for the push's answer: approved lets in, rejected keeps out; still pending asks the person
    /// to approve and press Enter.
    private func awaitApproval(
        _ assertion: String, flow: TFAFlowRecord, state: String, codes: Bool, wait: Duration? = nil
    ) async throws -> AccessDecision {
        let deadline = ContinuousClock.now + (wait ?? pushWait)
        while true {
            let status = try await push.verify(TFAAssertionRequest(assertion: assertion))
            if status.status == "APPROVED", let proof = status.providerAssertion {
                _ = try await flows.finalize(flow, assertion: assertion, providerAssertion: proof)
                return .accept(message: "Welcome, \(flow.userId).")
            }
            guard ContinuousClock.now < deadline else { break }
            try await Task.sleep(for: pushPoll)
        }
        return .challenge(
            message: "Approve the sign-in on your phone, then press Enter"
                + (codes ? " (or type a code from your authenticator app)." : "."),
            state: state)
    }
}
