import AssentModel
import Foundation
import SQLKit

/// Applications' own rate limits (names of ``RateLimits/names`` to `LIMIT/SECONDS`), over the server's.
public protocol ApplicationRateLimitStore: Sendable {
    /// Stores the application's rules (JSON of name → `LIMIT/SECONDS`), replacing its earlier ones.
    func putApplicationRateLimits(applicationId: String, rules: String, at: Millis) async throws
    func applicationRateLimits(applicationId: String) async throws -> String?
}

extension Migrations {
    /// Version 31: each application's own rate limits.
    static func applicationRateLimitsV31(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS application_rate_limits (
                application_id TEXT PRIMARY KEY REFERENCES applications(id),
                rules TEXT NOT NULL,
                updated_at \(dialect.bigint) NOT NULL
            )
            """
        ]
    }
}

extension SQLStore {
    public func putApplicationRateLimits(applicationId: String, rules: String, at: Millis) async throws {
        try await database.raw(
            """
            INSERT INTO application_rate_limits (application_id, rules, updated_at)
            VALUES (\(bind: applicationId), \(bind: rules), \(bind: at))
            ON CONFLICT (application_id) DO UPDATE SET rules = excluded.rules, updated_at = excluded.updated_at
            """
        ).run()
    }

    public func applicationRateLimits(applicationId: String) async throws -> String? {
        try await database.raw(
            "SELECT rules FROM application_rate_limits WHERE application_id = \(bind: applicationId)"
        ).first()?.decode(column: "rules", as: String.self)
    }
}

/// Each application's own rate limits: the limits of what its people and devices do (logins, codes, second factors,
/// offline and proximity checks, passwordless sign-ins) can be set per application over the server's
/// (`serve --rate-limit`). Limits of what comes before an application is known (operator keys, OpenID client
/// authentication, activation attempts) stay the server's.
public struct ApplicationRateLimitService: Sendable {
    /// The part of the store this sees.
    let store: any ApplicationRateLimitStore
    let clock: WallClock
    let audit: Auditor
    /// The server's limits, which an application's rules start from.
    let rateLimits: RateLimits

    /// The names an application may set.
    static let names: Set<String> = [
        "login-user", "login-user-address", "login-address", "tfa-user", "code-destination", "code-user",
        "offline-operation",
        "offline-activation", "proximity-operation", "passkey-address",
    ]

    /// The rules that apply to `applicationId`: the server's, with the application's own over them.
    func rules(_ applicationId: String) async throws -> RateLimits {
        var rules = rateLimits
        for (name, text) in try await own(applicationId) {
            if let path = RateLimits.names[name], let rule = Self.rule(text) { rules[keyPath: path] = rule }
        }
        return rules
    }

    /// Every application-level limit of `application`, and whether it is its own or the server's.
    public func info(_ application: ApplicationRecord) async throws -> ApplicationRateLimitsInfo {
        let own = try await own(application.id)
        let effective = try await rules(application.id)
        return ApplicationRateLimitsInfo(
            applicationId: application.id,
            limits: Self.names.sorted().compactMap { name in
                guard let path = RateLimits.names[name] else { return nil }
                let rule = effective[keyPath: path]
                return .init(
                    name: name, limit: rule.limit, window: rule.window,
                    source: own[name] == nil ? "server" : "application")
            })
    }

    /// Sets (`NAME: "LIMIT/SECONDS"`) or removes (`NAME: ""`: the server's again) the application's own limits.
    /// - Throws: `ERR_REQUEST` naming an unknown limit or a malformed value.
    public func update(_ changes: [String: String], for application: ApplicationRecord, actor: String) async throws
        -> ApplicationRateLimitsInfo
    {
        var own = try await own(application.id)
        for (name, text) in changes.sorted(by: { $0.key < $1.key }) {
            guard Self.names.contains(name) else {
                throw AssentServerError.invalidRequest(
                    "An application's rate limit is one of \(Self.names.sorted().joined(separator: ", ")); "
                        + "\(name.prefix(64)) is not.")
            }
            if text.isEmpty {
                own[name] = nil
            } else {
                guard Self.rule(text) != nil else {
                    throw AssentServerError.invalidRequest(
                        "A rate limit is LIMIT/SECONDS, both 1 or more, e.g. 5/300; \(name) was \(text.prefix(32)).")
                }
                own[name] = text
            }
        }
        let json = String(decoding: try JSONEncoder().encode(own), as: UTF8.self)
        try await store.putApplicationRateLimits(applicationId: application.id, rules: json, at: clock.millis)
        await audit(
            .applicationRateLimitsChanged, application: application.id, actor: actor,
            "Application \(application.name) (\(application.id)) has its own rate limits: "
                + (own.isEmpty
                    ? "none"
                    : own.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                        .joined(separator: ", ")) + ".")
        return try await info(application)
    }

    private func own(_ applicationId: String) async throws -> [String: String] {
        guard let text = try await store.applicationRateLimits(applicationId: applicationId) else { return [:] }
        return (try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))) ?? [:]
    }

    /// `LIMIT/SECONDS` as a rule.
    static func rule(_ text: String) -> RateLimitRule? {
        let numbers = text.split(separator: "/", omittingEmptySubsequences: false)
        // Plain digits, no sign and no leading zero (as the OpenAPI document's pattern says).
        guard numbers.count == 2,
            numbers.allSatisfy({ $0.first != "0" && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let limit = Int(numbers[0]), let window = Int(numbers[1]), limit > 0, window > 0,
            limit <= 1_000_000, window <= 31_536_000
        else { return nil }
        return RateLimitRule(limit: limit, window: window)
    }
}
