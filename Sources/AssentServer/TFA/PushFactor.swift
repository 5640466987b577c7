import AssentModel
import Foundation

/// The push provider: an activated Assent device approves sign-ins. Opt-in (registration) asks the device to approve
/// an opt-in operation; verification creates a sign-in operation that reaches every device of the user (pushed
/// where registered, in the live stream and the pending list otherwise). The first answer wins — an operation has
/// one final status — and the others are withdrawn by the finished-operation push. Only an approval signed by an
/// opted-in device counts.
struct PushFactor: Sendable {
    let flows: TFAService
    let operations: OperationService
    /// The part of the store this sees.
    let store: any ActivationStore & OperationStore & TFAStore
    let clock: WallClock
    let tfa: TFASettings

    /// `accounts.tfa.push.optin`: names the device and asks it to approve (asking again while that request is
    /// pending answers the same operation).
    func optIn(_ request: TFAPushOptInRequest) async throws -> TFAPushSent {
        let (challenge, flow) = try await flows.challenge(request.assertion, provider: .push)
        guard challenge.mode == .register else {
            throw TFAError(
                status: .badRequest, error: .invalidAssertion,
                message: "This assertion verifies the account's push factor; opting in needs mode register.")
        }
        if let pending = try await pendingOperation(challenge) {
            return TFAPushSent(operationId: pending.id, expiresAt: Date(millis: pending.expiresAt))
        }
        guard let activation = try await store.activation(id: request.activationId),
            activation.state == .active, activation.userId == flow.userId,
            activation.applicationId == flow.applicationId
        else {
            throw TFAError(
                status: .badRequest, error: .unknownDestination,
                message: "No active device of this user has this activationId.")
        }
        let factor = TFAFactorRecord(
            id: TFATokens.id(), applicationId: flow.applicationId, userId: flow.userId, provider: .push,
            state: .pending, destination: activation.id, createdAt: clock.millis)
        try await store.insertTFAFactor(factor)
        try await store.setTFAChallengeFactor(assertionHash: challenge.assertionHash, factorId: factor.id)
        let application = try await flows.applicationRecord(id: flow.applicationId)
        return try await ask(
            challenge, flow, name: "tfa_push_optin",
            title: "Approve sign-ins with this phone?",
            message: ["Approve to use this phone to confirm sign-ins to \(application.name)."],
            text: "Opt in \(application.name)")
    }

    /// `accounts.tfa.push.sendVerification`: asks the user's devices to approve this sign-in, with what is known of
    /// it (`context`, given the application's name). Asking again while the first request is pending answers the
    /// same operation.
    func send(_ request: TFAAssertionRequest, context: ((String) -> LoginContext)? = nil) async throws -> TFAPushSent {
        let (challenge, flow) = try await flows.challenge(request.assertion, provider: .push)
        guard challenge.mode == .verify else {
            throw TFAError(
                status: .badRequest, error: .invalidAssertion,
                message: "This assertion registers a device; call /api/tfa/push/optin.")
        }
        if let pending = try await pendingOperation(challenge) {
            return TFAPushSent(
                operationId: pending.id, expiresAt: Date(millis: pending.expiresAt), number: pending.matchingNumber)
        }
        let recent = try await admit(flow)
        // One outstanding push sign-in per account: a new one withdraws the ones before.
        for outstanding in recent where outstanding.status == .pending {
            _ = try? await operations.cancel(id: outstanding.id, reason: "SUPERSEDED", actor: "tfa")
        }
        let application = try await flows.applicationRecord(id: flow.applicationId)
        let numberMatching = try await flows.policy(flow.applicationId).numberMatching ?? NumberMatching.choose
        let login = context?(application.name)
        let site = login?.site ?? application.name
        return try await ask(
            challenge, flow, name: Self.loginOperation, title: "Sign in to \(site)?",
            message: (login.map { ["\($0.line)."] } ?? [])
                + [
                    numberMatching == NumberMatching.off
                        ? "Approve only if you are signing in to \(site) right now."
                        : "Approve only if you are signing in to \(site) right now, with the number shown there."
                ],
            text: "Sign in \(site)", note: login?.line, attributes: login?.attributes ?? [],
            numberMatching: numberMatching, devices: try await optedIn(flow))
    }

    /// `accounts.tfa.push.verify` / `isVerified`: the state of the challenge's operation; once approved by an
    /// opted-in device, the proof.
    func verify(_ request: TFAAssertionRequest) async throws -> TFAPushStatus {
        let (challenge, flow) = try await flows.challenge(request.assertion, provider: .push)
        guard let id = challenge.operationId else {
            throw TFAError(
                status: .badRequest, error: .pushNotSent,
                message: "No approval was requested yet: call /api/tfa/push/send (or optin) first.")
        }
        let operation = try await operations.get(id: id)
        switch operation.status {
        case .pending:
            return TFAPushStatus(status: "PENDING")
        case .approved:
            let factors: [TFAFactorRecord]
            if challenge.mode == .register {
                guard let factorId = challenge.factorId,
                    let factor = try await store.tfaFactor(id: factorId)
                else { throw TFAError.challengeSpent() }
                factors = [factor]
            } else {
                factors = try await store.tfaFactors(applicationId: flow.applicationId, userId: flow.userId)
                    .filter { $0.provider == .push && $0.state == .active }
            }
            // A phone approves with its activation; a subscribed browser with a passkey (BrowserApprovers), which
            // leaves no activation on the operation.
            let approver =
                operation.activationId
                ?? (challenge.mode == .verify && operation.approvedWith == BrowserApprovers.approvedWith
                    ? BrowserApprovers.destination : nil)
            guard let approver, let approving = factors.first(where: { $0.destination == approver }) else {
                throw TFAError(
                    status: .forbidden, error: .pushDeviceNotOptedIn,
                    message: "The approval came from a device that is not opted in to sign-in approvals.")
            }
            if challenge.mode == .register, let factorId = challenge.factorId {
                guard
                    try await store.activateTFAFactor(
                        id: factorId, replacing: nil, at: clock.millis)
                else { throw TFAError.challengeSpent() }
            } else {
                try await store.markTFAFactorVerified(id: approving.id, at: clock.millis)
                // The factor that approved: finalizing tells a browser's approval from a phone's.
                try await store.setTFAChallengeFactor(assertionHash: challenge.assertionHash, factorId: approving.id)
            }
            let proof = try await flows.pass(challenge)
            return TFAPushStatus(status: "APPROVED", providerAssertion: proof.providerAssertion)
        case .rejected:
            // A phone answers with its activation; a browser leaves none.
            let answerer = operation.activationId == nil ? "in a browser" : "on the phone"
            throw TFAError(
                status: .forbidden, error: .pushRejected,
                message: operation.statusReason == RejectReason.fraud
                    ? "The user reported this sign-in as fraud."
                    : operation.statusReason == OperationRecord.wrongNumber
                        ? "The approval \(answerer) carried another number than the one shown: the sign-in is "
                            + "rejected."
                        : "The user rejected the sign-in \(answerer).")
        default:
            throw TFAError(
                status: .forbidden, error: .pushNotApproved,
                message: "The approval request ended without an answer (\(operation.status.rawValue)): ask again.")
        }
    }

    /// The devices opted in to approve the account's sign-ins: the only ones a sign-in request reaches (besides
    /// the account's subscribed browsers, which the database notifies by their factors).
    private func optedIn(_ flow: TFAFlowRecord) async throws -> [String] {
        try await store.tfaFactors(applicationId: flow.applicationId, userId: flow.userId)
            .filter { $0.provider == .push && $0.state == .active && !BrowserApprovers.isBrowser($0) }
            .compactMap(\.destination)
    }

    /// Push-bombing defence, before a new push sign-in: none while the account's push sign-ins are suspended after a
    /// fraud report, none in the cool-down after too many rejected or unanswered ones, and no more than the hourly
    /// number. Worked out from the account's recent push sign-ins (so every server process agrees); returns them.
    private func admit(_ flow: TFAFlowRecord) async throws -> [OperationRecord] {
        let limits = try await Limits(flows.policy(flow.applicationId), defaults: tfa)
        let now = clock.millis
        let recent = try await recentSignIns(applicationId: flow.applicationId, userId: flow.userId)
        func seconds(until end: Millis) -> Int { Int(max(1, (end - now + 999) / 1000)) }
        if let (end, _) = suspension(recent, seconds: limits.fraudSuspension) {
            throw TFAError(
                status: .forbidden, error: .pushSuspended,
                message: "Push sign-ins for this account are suspended until \(Self.clock(end)) UTC: a recent one "
                    + "was reported on the phone as fraud. Use another method.",
                retryAfter: seconds(until: end))
        }
        let windowStart = now - Millis(limits.refusalWindow) * 1000
        let refused = recent.filter {
            ($0.status == .rejected || $0.status == .expired) && ($0.finishedAt ?? 0) > windowStart
        }
        if refused.count >= limits.refusalLimit, let oldest = refused.compactMap(\.finishedAt).min() {
            let end = oldest + Millis(limits.refusalWindow) * 1000
            throw TFAError(
                status: .tooManyRequests, error: .pushLimited,
                message: "Too many push sign-ins were rejected or left unanswered: try again at \(Self.clock(end)) "
                    + "UTC, or use another method.",
                retryAfter: seconds(until: end))
        }
        let lastHour = recent.filter { $0.createdAt > now - 3_600_000 }
        if lastHour.count >= limits.perHour, let oldest = lastHour.map(\.createdAt).min() {
            throw TFAError(
                status: .tooManyRequests, error: .pushLimited,
                message: "This account asked its phone to approve too many sign-ins this hour: try again at "
                    + "\(Self.clock(oldest + 3_600_000)) UTC, or use another method.",
                retryAfter: seconds(until: oldest + 3_600_000))
        }
        return recent
    }

    /// The account's recent push sign-ins, newest first.
    private func recentSignIns(applicationId: String, userId: String) async throws -> [OperationRecord] {
        try await store.operations(userId: userId, status: nil, limit: 200).filter {
            $0.applicationId == applicationId && $0.name == Self.loginOperation
        }
    }

    /// The application's push-bombing limits: its policy's, else the server's.
    private struct Limits {
        var perHour: Int
        var refusalLimit: Int
        var refusalWindow: Int
        var fraudSuspension: Int

        init(_ policy: TFAPolicy, defaults: TFASettings) {
            perHour = policy.pushLoginsPerHour ?? defaults.pushLoginsPerHour
            refusalLimit = policy.pushRefusalLimit ?? defaults.pushRefusalLimit
            refusalWindow = policy.pushRefusalWindow ?? defaults.pushRefusalWindow
            fraudSuspension = policy.pushFraudSuspension ?? defaults.pushFraudSuspension
        }
    }

    /// Until when push sign-ins are suspended after the latest fraud report among `recent` (for `seconds`), and that
    /// sign-in.
    private func suspension(_ recent: [OperationRecord], seconds: Int) -> (until: Millis, operationId: String)? {
        let reported = recent.filter { $0.status == .rejected && $0.statusReason == RejectReason.fraud }
            .max { ($0.finishedAt ?? 0) < ($1.finishedAt ?? 0) }
        guard let reported, let at = reported.finishedAt else { return nil }
        let end = at + Millis(seconds) * 1000
        return clock.millis < end ? (end, reported.id) : nil
    }

    /// Until when the account's push sign-ins are suspended after a fraud report, and the reported sign-in (for the
    /// console's user page).
    func suspension(applicationId: String, userId: String) async throws -> (until: Millis, operationId: String)? {
        let limits = try await Limits(flows.policy(applicationId), defaults: tfa)
        return suspension(
            try await recentSignIns(applicationId: applicationId, userId: userId), seconds: limits.fraudSuspension)
    }

    /// The operation name of push sign-ins.
    static let loginOperation = "tfa_push_login"

    /// `HH:mm` (UTC) of a time.
    static func clock(_ millis: Millis) -> String {
        let seconds = Int((millis / 1000) % 86_400)
        return String(format: "%02d:%02d", seconds / 3600, (seconds % 3600) / 60)
    }

    /// The challenge's operation while the devices have not answered it: asking again answers the same one.
    private func pendingOperation(_ challenge: TFAChallengeRecord) async throws -> OperationRecord? {
        guard let id = challenge.operationId, let operation = try await store.operation(id: id),
            operation.status == .pending
        else { return nil }
        return operation
    }

    /// Creates the operation and remembers it on the challenge.
    private func ask(
        _ challenge: TFAChallengeRecord, _ flow: TFAFlowRecord, name: String, title: String, message: [String],
        text: String, note: String? = nil, attributes: [OperationAttribute] = [], numberMatching: String? = nil,
        devices: [String]? = nil
    ) async throws -> TFAPushSent {
        let application = try await flows.applicationRecord(id: flow.applicationId)
        let lifetime = max(30, Int((challenge.expiresAt - clock.millis) / 1000))
        let operation = try await operations.create(
            CreateOperationRequest(
                userId: flow.userId, name: name,
                data: OperationData(
                    template: 0,
                    fields: [.text(String(text.prefix(100)))] + (note.map { [.note(String($0.prefix(200)))] } ?? [])
                ).description,
                // In every language the server speaks: the phone shows the one it prefers.
                formData: Dictionary(
                    uniqueKeysWithValues: Languages.supported.map { language in
                        let texts = Texts(language)
                        return (
                            language,
                            FormData(
                                title: texts(title), message: message.map { texts($0) }.joined(separator: " "),
                                attributes: attributes.map { attribute in
                                    var translated = attribute
                                    translated.label = attribute.label.map { texts($0) }
                                    return translated
                                })
                        )
                    }),
                expiresIn: lifetime, numberMatching: numberMatching),
            application: application, actor: "tfa", devices: devices)
        try await store.setTFAChallengeOperation(
            assertionHash: challenge.assertionHash, operationId: operation.id)
        return TFAPushSent(
            operationId: operation.id, expiresAt: Date(millis: operation.expiresAt), number: operation.matchingNumber)
    }
}
