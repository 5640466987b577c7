import AssentCrypto
import Logging
import Prometheus

/// One limit: at most `limit` counted events per key in each window of `window` seconds.
public struct RateLimitRule: Sendable, Equatable {
    public var limit: Int
    /// Seconds.
    public var window: Int

    public init(limit: Int, window: Int) {
        self.limit = limit
        self.window = window
    }
}

/// The limits of every guessable endpoint, with safe defaults. Counters live in the database, so processes sharing
/// a PostgreSQL database share them. A refused request gets 429 `ERR_RATE_LIMITED` with `Retry-After`.
public struct RateLimits: Sendable, Equatable {
    /// Activation attempts (`/pa/v3/activation/create`) from one client address.
    public var activationPerAddress = RateLimitRule(limit: 20, window: 300)
    /// Activation attempts naming codes that share their first two groups (`ABCDE-FGHIJ-…`): guesses at one code
    /// whose start is known.
    public var activationPerCodePrefix = RateLimitRule(limit: 5, window: 300)
    /// Requests with a wrong operator API key from one client address; once over, every request from it waits.
    public var operatorKeyFailuresPerAddress = RateLimitRule(limit: 10, window: 300)
    /// Wrong console sign-ins naming one operator account from one address; once over, that address's sign-ins to
    /// the account are refused (429) — nobody else's.
    public var operatorSignInFailuresPerAccountAndAddress = RateLimitRule(limit: 5, window: 900)
    /// Wrong console sign-ins naming one operator account, from any address; once over, every sign-in to it is
    /// slowed down (``accountSlowDown``), never refused: guessing spread over many addresses slows, and a stranger
    /// cannot lock the operator out.
    public var operatorSignInFailuresPerAccount = RateLimitRule(limit: 20, window: 900)
    /// Offline-code verifications of one operation, valid or not (beyond the operation's failure count).
    public var offlineVerificationsPerOperation = RateLimitRule(limit: 10, window: 300)
    /// Offline-code verifications for one activation.
    public var offlineVerificationsPerActivation = RateLimitRule(limit: 30, window: 300)
    /// Approval attempts of one operation that needs a proximity check.
    public var proximityChecksPerOperation = RateLimitRule(limit: 10, window: 300)
    /// Failed OpenID client authentications (token, backchannel, introspection endpoints) from one client address;
    /// once over, every client authentication from it waits.
    public var clientAuthenticationFailures = RateLimitRule(limit: 10, window: 300)
    /// Failed password logins of one account from one address; once over, that address's logins to the account are
    /// refused (429) without checking the password.
    public var loginFailuresPerUserAndAddress = RateLimitRule(limit: 5, window: 900)
    /// Failed password logins of one account from any address; once over, every login to it is slowed down
    /// (``accountSlowDown``), never refused.
    public var loginFailuresPerUser = RateLimitRule(limit: 10, window: 900)
    /// Failed password logins from one client address.
    public var loginFailuresPerAddress = RateLimitRule(limit: 50, window: 900)
    /// Wrong second-factor codes of one account across all its flows (each assertion also has its own tries).
    public var tfaFailuresPerUser = RateLimitRule(limit: 10, window: 900)
    /// Codes sent to one address or number (e-mail, SMS, voice), whoever asks.
    public var codesPerDestination = RateLimitRule(limit: 5, window: 3_600)
    /// Codes sent for one account.
    public var codesPerUser = RateLimitRule(limit: 10, window: 3_600)
    /// Passwordless sign-in requests (passkey challenges handed out) from one client address.
    public var passkeySignInsPerAddress = RateLimitRule(limit: 60, window: 300)
    /// How long a sign-in to an account over its failures from every address waits before its password is checked.
    public var accountSlowDown: Duration = .seconds(2)
    /// Whether any limit applies (tests and benchmarks that measure other things turn them off).
    public var enabled = true

    public init() {}

    /// The names `assent serve --rate-limit NAME=LIMIT/SECONDS` takes.
    public static var names: [String: WritableKeyPath<RateLimits, RateLimitRule>] {
        [
            "activation-address": \.activationPerAddress,
            "activation-code": \.activationPerCodePrefix,
            "operator-key-failures": \.operatorKeyFailuresPerAddress,
            "operator-account-failures": \.operatorSignInFailuresPerAccount,
            "operator-account-address-failures": \.operatorSignInFailuresPerAccountAndAddress,
            "client-auth-failures": \.clientAuthenticationFailures,
            "offline-operation": \.offlineVerificationsPerOperation,
            "offline-activation": \.offlineVerificationsPerActivation,
            "proximity-operation": \.proximityChecksPerOperation,
            "login-user": \.loginFailuresPerUser,
            "login-user-address": \.loginFailuresPerUserAndAddress,
            "login-address": \.loginFailuresPerAddress,
            "tfa-user": \.tfaFailuresPerUser,
            "code-destination": \.codesPerDestination,
            "code-user": \.codesPerUser,
            "passkey-address": \.passkeySignInsPerAddress,
        ]
    }

    /// Sets one rule from `NAME=LIMIT/SECONDS`, e.g. `activation-address=50/600`.
    public mutating func set(_ text: String) throws {
        let parts = text.split(separator: "=", maxSplits: 1)
        let numbers = parts.count == 2 ? parts[1].split(separator: "/") : []
        guard parts.count == 2, let path = Self.names[String(parts[0])], numbers.count == 2,
            let limit = Int(numbers[0]), let window = Int(numbers[1]), limit > 0, window > 0
        else {
            throw AssentServerError.configuration(
                "A rate limit is NAME=LIMIT/SECONDS with NAME one of "
                    + "\(Self.names.keys.sorted().joined(separator: ", ")), e.g. activation-address=50/600.")
        }
        self[keyPath: path] = RateLimitRule(limit: limit, window: window)
    }
}

/// The one rate limiter: a keyed counter per window, in the store. A key's window opens at its first counted event
/// and lasts the rule's seconds; the first event after it ends opens the next.
struct RateLimiter: Sendable {
    /// The part of the store this sees.
    let store: any RateLimitStore
    let clock: WallClock
    let logger: Logger
    let metrics: PrometheusCollectorRegistry
    /// The server's limits (whether limits apply at all, the slow-down).
    let rateLimits: RateLimits

    /// Counts one event for `key` under `rule`; throws 429 when it is over the limit (the event still counts, so
    /// hammering does not help).
    func hit(_ rule: RateLimitRule, _ scope: String, _ key: String) async throws {
        guard rateLimits.enabled else { return }
        let now = clock.millis
        let (count, windowEnd) = try await self.count(rule, scope, key, now: now)
        if count > rule.limit { throw refusal(scope, windowEnd: windowEnd, now: now) }
    }

    /// Throws 429 when `key` has used up `rule` in the current window, without counting (for limits on failures:
    /// ``recordFailure(_:_:_:)`` counts them).
    func check(_ rule: RateLimitRule, _ scope: String, _ key: String) async throws {
        guard rateLimits.enabled else { return }
        let now = clock.millis
        if let (count, windowEnd) = try await store.rateLimit(key: "\(scope):\(key)", now: now),
            count >= rule.limit
        {
            throw refusal(scope, windowEnd: windowEnd, now: now)
        }
    }

    /// Before a credential of `account` is checked: refuses (429) while `account` has used up `pair` from `address`;
    /// waits ``RateLimits/accountSlowDown`` while it has used up `perAccount` from every address together. An account
    /// is never refused as a whole, so failing its sign-ins from elsewhere cannot lock its owner out.
    func checkAccount(
        _ perAccount: RateLimitRule, _ pair: RateLimitRule, _ scope: String, account: String, address: String?
    ) async throws {
        guard rateLimits.enabled else { return }
        try await check(pair, scope + "-address", Self.pairKey(account, address))
        let now = clock.millis
        if let (count, _) = try await store.rateLimit(key: "\(scope):\(account)", now: now), count >= perAccount.limit {
            metrics.makeCounter(descriptor: Self.slowed, labels: [("scope", scope)]).increment()
            logger.notice("sign-in slowed down", metadata: ["scope": "\(scope)"])
            try await Task.sleep(for: rateLimits.accountSlowDown)
        }
    }

    /// Counts one failure of `account` from `address`, for ``checkAccount(_:_:_:account:address:)``.
    func recordAccountFailure(
        _ perAccount: RateLimitRule, _ pair: RateLimitRule, _ scope: String, account: String, address: String?
    ) async {
        await recordFailure(pair, scope + "-address", Self.pairKey(account, address))
        await recordFailure(perAccount, scope, account)
    }

    private static func pairKey(_ account: String, _ address: String?) -> String {
        "\(account)|\(address ?? "unknown")"
    }

    static var refusals: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "assent", subsystem: "rate_limit", metricName: "refusals", unitName: "total",
            helpText: "Requests a rate limit refused, by scope (such as login.address or operator.key).")
    }

    static var slowed: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "assent", subsystem: "sign_in", metricName: "slowed", unitName: "total",
            helpText: "Sign-ins slowed down because their account is over its failures from every address.")
    }

    /// Counts one failure for `key` under `rule`.
    func recordFailure(_ rule: RateLimitRule, _ scope: String, _ key: String) async {
        guard rateLimits.enabled else { return }
        do {
            _ = try await count(rule, scope, key, now: clock.millis)
        } catch {
            logger.error(
                "rate-limit write failed", metadata: ["scope": "\(scope)", "error": "\(String(reflecting: error))"])
        }
    }

    /// Counts one event in the key's open window (or opens one) and returns the count and the window's end.
    private func count(_ rule: RateLimitRule, _ scope: String, _ key: String, now: Millis) async throws
        -> (count: Int, windowEnd: Millis)
    {
        try await store.hitRateLimit(key: "\(scope):\(key)", now: now, window: Int64(rule.window) * 1000)
    }

    private func refusal(_ scope: String, windowEnd: Millis, now: Millis) -> AssentServerError {
        metrics.makeCounter(descriptor: Self.refusals, labels: [("scope", scope)]).increment()
        logger.notice("rate limited", metadata: ["scope": "\(scope)"])
        return .rateLimited(retryAfter: Int(max(1, (windowEnd - now + 999) / 1000)))
    }
}

extension ActivationCode {
    /// The first two groups (`ABCDE-FGHIJ`): the part of a code a person may have seen, which guesses at the rest
    /// share.
    var prefix: String { String(value.prefix(11)) }
}
