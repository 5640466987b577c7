import AssentCrypto
import AssentModel
import Crypto
import Foundation

/// The code providers: e-mail (addresses the operator registered) and phone (numbers the user registers, codes by
/// SMS or voice). A code is 6 random digits, valid ``TFASettings/challengeLifetime`` (5 minutes), with
/// ``TFASettings/attemptsPerChallenge`` tries; sending is limited per destination, per account, and by a resend
/// cool-down per assertion. The code row and its outbox message are written by one statement.
struct CodeFactor: Sendable {
    let flows: TFAService
    /// The part of the store this sees.
    let store: any TFAStore & ApplicationBrandingStore
    let clock: WallClock
    let audit: Auditor
    let tfa: TFASettings
    /// Wakes the outbox dispatcher when a code waits to be sent.
    let outboxWakeup: Wakeup
    let applicationLimits: ApplicationRateLimitService

    // MARK: E-mail

    /// `accounts.tfa.email.getEmails`.
    func emails(_ request: TFAAssertionRequest) async throws -> TFAEmailsResponse {
        let (_, flow) = try await flows.challenge(request.assertion, provider: .email)
        let factors = try await active(.email, flow)
        return TFAEmailsResponse(
            emails: factors.map {
                TFAEmail(
                    id: $0.id, obfuscated: Self.obfuscateEmail($0.destination ?? ""),
                    lastVerification: $0.lastVerifiedAt.map(Date.init(millis:)))
            })
    }

    /// `accounts.tfa.email.sendVerificationCode`.
    func sendEmail(_ request: TFAEmailSendRequest) async throws -> TFACodeSent {
        let (challenge, flow) = try await flows.challenge(request.assertion, provider: .email)
        guard let factor = try await active(.email, flow).first(where: { $0.id == request.emailId }) else {
            throw TFAError(
                status: .badRequest, error: .unknownDestination, message: "The account has no address with this id.")
        }
        return try await send(challenge, flow, factor, channel: "email", lang: request.lang)
    }

    // MARK: Phone

    /// `accounts.tfa.phone.getRegisteredPhoneNumbers`.
    func phones(_ request: TFAAssertionRequest) async throws -> TFAPhonesResponse {
        let (_, flow) = try await flows.challenge(request.assertion, provider: .phone)
        return TFAPhonesResponse(
            phones: try await active(.phone, flow).map {
                TFARegisteredPhone(
                    id: $0.id, obfuscated: Self.obfuscatePhone($0.destination ?? ""),
                    lastMethod: $0.lastMethod.flatMap(TFAPhoneMethod.init(rawValue:)),
                    lastVerification: $0.lastVerifiedAt.map(Date.init(millis:)))
            })
    }

    /// `accounts.tfa.phone.sendVerificationCode`: to a new number (registration) or a registered one.
    func sendPhone(_ request: TFAPhoneSendRequest) async throws -> TFACodeSent {
        let (challenge, flow) = try await flows.challenge(request.assertion, provider: .phone)
        let factor: TFAFactorRecord
        switch challenge.mode {
        case .register:
            guard let phone = request.phone, Self.isE164(phone) else {
                throw AssentServerError.invalidRequest(
                    "phone is an E.164 number: + and 7 to 15 digits, the first not 0 (e.g. +420777123456).")
            }
            if let id = challenge.factorId, let pending = try await store.tfaFactor(id: id),
                pending.destination == phone, pending.state == .pending
            {
                factor = pending
            } else {
                factor = TFAFactorRecord(
                    id: TFATokens.id(), applicationId: flow.applicationId, userId: flow.userId, provider: .phone,
                    state: .pending, destination: phone, createdAt: clock.millis)
                try await store.insertTFAFactor(factor)
                try await store.setTFAChallengeFactor(
                    assertionHash: challenge.assertionHash, factorId: factor.id)
            }
        case .verify:
            guard let registered = try await active(.phone, flow).first(where: { $0.id == request.phoneId }) else {
                throw TFAError(
                    status: .badRequest, error: .unknownDestination,
                    message: "The account has no number with this phoneId.")
            }
            factor = registered
        }
        let sent = try await send(challenge, flow, factor, channel: request.method.rawValue, lang: request.lang)
        try await store.setTFAFactorMethod(id: factor.id, method: request.method.rawValue)
        return sent
    }

    // MARK: Verification

    /// `accounts.tfa.email.completeVerification` / `accounts.tfa.phone.completeVerification`.
    func verify(_ request: TFACodeVerifyRequest, provider: TFAProvider) async throws -> TFAProofResponse {
        let (challenge, flow) = try await flows.challenge(request.assertion, provider: provider)
        let tokenHash = TFATokens.hash(request.phvToken)
        guard request.phvToken.utf8.count <= 128, let code = try await store.tfaCode(tokenHash: tokenHash),
            code.assertionHash == challenge.assertionHash
        else {
            throw TFAError(
                status: .badRequest, error: .invalidPhvToken,
                message: "The phvToken names no code of this assertion: send a code first.")
        }
        try await flows.checkFailureLimit(flow)
        guard let left = try await store.takeTFACodeAttempt(tokenHash: tokenHash, at: clock.millis)
        else {
            throw TFAError(
                status: .badRequest, error: .codeSpent,
                message: "This code expired or used all its tries: send a new one.")
        }
        guard Bytes.constantTimeEqual(Data(request.code.utf8), Data(code.code.utf8)) else {
            await flows.recordFailure(flow)
            throw TFAError.invalidCode(attemptsLeft: left)
        }
        if challenge.mode == .register {
            guard
                try await store.activateTFAFactor(
                    id: code.factorId, replacing: nil, at: clock.millis)
            else { throw TFAError.challengeSpent() }
        } else {
            try await store.markTFAFactorVerified(id: code.factorId, at: clock.millis)
        }
        return try await flows.pass(challenge)
    }

    // MARK: Support

    private func active(_ provider: TFAProvider, _ flow: TFAFlowRecord) async throws -> [TFAFactorRecord] {
        try await store.tfaFactors(applicationId: flow.applicationId, userId: flow.userId)
            .filter { $0.provider == provider && $0.state == .active }
    }

    /// Creates and queues a code after the limits: the cool-down of this assertion and destination, the
    /// destination's and the account's.
    private func send(
        _ challenge: TFAChallengeRecord, _ flow: TFAFlowRecord, _ factor: TFAFactorRecord, channel: String,
        lang: String?
    ) async throws -> TFACodeSent {
        let settings = tfa
        let limiter = flows.limiter
        let rules = try await applicationLimits.rules(flow.applicationId)
        try await limiter.hit(
            RateLimitRule(limit: 1, window: settings.resendCooldown), "code.resend",
            "\(Base64URL.encode(challenge.assertionHash)):\(factor.id)")
        try await limiter.hit(
            rules.codesPerDestination, "code.destination", Self.destinationKey(factor.destination ?? ""))
        try await limiter.hit(rules.codesPerUser, "code.user", "\(flow.applicationId):\(flow.userId)")
        let now = clock.millis
        let token = TFATokens.bearer()
        let expiresAt = min(flow.expiresAt, now + Millis(settings.challengeLifetime) * 1000)
        // The language the caller asked for (if the texts are written in it), else the account's own, else the
        // application's default.
        var language = lang.flatMap(Languages.supportedPrimary)
        if language == nil {
            language = try await Languages.of(
                applicationId: flow.applicationId, userId: flow.userId, in: store)
        }
        try await store.insertTFACode(
            TFACodeRecord(
                id: TFATokens.id(), tokenHash: token.hash, assertionHash: challenge.assertionHash, factorId: factor.id,
                channel: channel, code: Self.newCode(), lang: CodeMessages.language(language),
                attemptsLeft: settings.attemptsPerChallenge, createdAt: now, expiresAt: expiresAt))
        outboxWakeup.signal()
        await audit(
            .tfaCodeSent, userId: flow.userId, application: flow.applicationId, actor: "user",
            "A code went by \(channel) to factor \(factor.id).")
        return TFACodeSent(phvToken: token.value, expiresAt: Date(millis: expiresAt))
    }

    /// Six uniformly random digits.
    static func newCode() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(format: "%06d", Int.random(in: 0..<1_000_000, using: &generator))
    }

    /// The rate-limit key of a destination: a digest, so the limits table holds no addresses.
    static func destinationKey(_ destination: String) -> String {
        Base64URL.encode(Data(SHA256.hash(data: Data(destination.lowercased().utf8)).prefix(16)))
    }

    /// `+` and 7 to 15 digits, the first not 0.
    static func isE164(_ text: String) -> Bool {
        let digits = text.dropFirst()
        return text.first == "+" && (7...15).contains(digits.count) && digits.first != "0"
            && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// `a***e@e***e.com`: the first and last character of the local part and of the domain's name.
    static func obfuscateEmail(_ address: String) -> String {
        guard let at = address.lastIndex(of: "@") else { return "***" }
        func hide(_ part: Substring) -> String {
            part.count <= 2 ? String(repeating: "*", count: max(1, part.count)) : "\(part.first!)***\(part.last!)"
        }
        let domain = address[address.index(after: at)...]
        let dot = domain.lastIndex(of: ".")
        let name = dot.map { domain[..<$0] } ?? domain
        let suffix = dot.map { String(domain[$0...]) } ?? ""
        return "\(hide(address[..<at]))@\(hide(name))\(suffix)"
    }

    /// `+*********3456`: the last four digits.
    static func obfuscatePhone(_ number: String) -> String {
        "+" + String(repeating: "*", count: max(0, number.count - 5)) + number.suffix(4)
    }
}

/// The texts of code messages, per language (English when the language is not known).
enum CodeMessages {
    static let languages = Languages.supported

    static func language(_ requested: String?) -> String {
        let code = requested.map { String($0.prefix(2)).lowercased() } ?? "en"
        return languages.contains(code) ? code : "en"
    }

    /// The e-mail's subject, from the language's catalogue.
    static func subject(_ lang: String, application: String) -> String {
        Texts.fill(Texts(lang).template("Your sign-in code for {{application}}"), ["application": application])
    }

    /// The message, from the language's catalogue.
    static func text(_ lang: String, code: String, application: String, minutes: Int) -> String {
        Texts.fill(
            Texts(lang).template(
                "Your sign-in code for {{application}} is {{code}}. It expires in {{minutes}} minutes. If you are not "
                    + "signing in, do not share it with anyone."),
            ["application": application, "code": code, "minutes": String(minutes)])
    }
}
