import AssentCrypto
import AssentModel
import Foundation
import SQLKit

/// Where one application's operation status changes go, and the key they are signed with.
public struct ApplicationWebhookRecord: Sendable, Equatable {
    public var applicationId: String
    public var url: String
    /// The HMAC-SHA256 key of `X-Assent-Signature` (sealed in the database).
    public var secret: Data
    public var updatedAt: Millis
}

/// Applications' own webhooks.
public protocol ApplicationWebhookStore: Sendable {
    func putApplicationWebhook(_ webhook: ApplicationWebhookRecord) async throws
    func applicationWebhook(applicationId: String) async throws -> ApplicationWebhookRecord?
    /// Whether any application has a webhook of its own.
    func anyApplicationWebhook() async throws -> Bool
    /// Removes it; returns whether there was one.
    func deleteApplicationWebhook(applicationId: String) async throws -> Bool
}

extension Migrations {
    /// Version 30: each application's own webhook.
    static func applicationWebhooksV30(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS application_webhooks (
                application_id TEXT PRIMARY KEY REFERENCES applications(id),
                url TEXT NOT NULL,
                secret \(dialect.blob) NOT NULL,
                updated_at \(dialect.bigint) NOT NULL
            )
            """
        ]
    }
}

extension SQLStore {
    public func putApplicationWebhook(_ w: ApplicationWebhookRecord) async throws {
        let sealed = try box.seal(w.secret, context: SealedColumn.applicationWebhookSecret.context(w.applicationId))
        try await database.raw(
            """
            INSERT INTO application_webhooks (application_id, url, secret, updated_at)
            VALUES (\(bind: w.applicationId), \(bind: w.url), \(bind: sealed), \(bind: w.updatedAt))
            ON CONFLICT (application_id) DO UPDATE SET url = excluded.url, secret = excluded.secret, \
            updated_at = excluded.updated_at
            """
        ).run()
    }

    public func applicationWebhook(applicationId: String) async throws -> ApplicationWebhookRecord? {
        try await database.raw(
            "SELECT * FROM application_webhooks WHERE application_id = \(bind: applicationId)"
        ).first().map { row in
            ApplicationWebhookRecord(
                applicationId: applicationId, url: try row.decode(column: "url", as: String.self),
                secret: try box.open(
                    try row.decode(column: "secret", as: Data.self),
                    context: SealedColumn.applicationWebhookSecret.context(applicationId)),
                updatedAt: try row.decode(column: "updated_at", as: Int64.self))
        }
    }

    public func anyApplicationWebhook() async throws -> Bool {
        try await database.raw("SELECT 1 AS present FROM application_webhooks LIMIT 1").first() != nil
    }

    public func deleteApplicationWebhook(applicationId: String) async throws -> Bool {
        !(try await database.raw(
            """
            DELETE FROM application_webhooks WHERE application_id = \(bind: applicationId) RETURNING application_id
            """
        ).all()).isEmpty
    }
}

/// An application's own webhook: its operations' status changes go there, signed with its own key, instead of to
/// the server's (`serve --webhook-url`, which keeps every application's without one of its own).
public struct ApplicationWebhookService: Sendable {
    /// The part of the store this sees.
    let store: any ApplicationWebhookStore
    let clock: WallClock
    let audit: Auditor
    let egress: Egress
    /// The server's own webhook, for applications without one.
    let webhook: WebhookSettings?
    /// Applications read so far (whether any has a webhook).
    let cache: ApplicationCache

    /// The application's webhook without its key; `nil` when it has none.
    public func info(_ application: ApplicationRecord) async throws -> ApplicationWebhookInfo? {
        try await store.applicationWebhook(applicationId: application.id).map {
            ApplicationWebhookInfo(
                applicationId: application.id, url: $0.url, secret: nil, updatedAt: Date(millis: $0.updatedAt))
        }
    }

    /// Sets the webhook; the answer carries the signing key once (the one given, or a new random one).
    /// - Throws: `ERR_REQUEST` for a URL that is not http(s) with a host or that the egress policy refuses, or a key
    ///   shorter than 16 characters.
    public func set(_ request: SetApplicationWebhookRequest, for application: ApplicationRecord, actor: String)
        async throws -> ApplicationWebhookInfo
    {
        guard let url = URL(string: request.url), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
            url.host?.isEmpty == false, request.url.count <= 2048
        else { throw AssentServerError.invalidRequest("The webhook URL is an http(s) URL with a host.") }
        do {
            _ = try await egress.check(request.url)
        } catch {
            throw AssentServerError.invalidRequest("The webhook URL is refused: \(error.message)")
        }
        let secret: String
        if let given = request.secret {
            guard given.count >= 16, given.count <= 256 else {
                throw AssentServerError.invalidRequest("A webhook signing key has 16 to 256 characters.")
            }
            secret = given
        } else {
            secret = Base64URL.encode(Bytes.random(count: 32))
        }
        let now = clock.millis
        try await store.putApplicationWebhook(
            ApplicationWebhookRecord(
                applicationId: application.id, url: request.url, secret: Data(secret.utf8), updatedAt: now))
        cache.forget(.webhook)
        await audit(
            .applicationWebhookSet, application: application.id, actor: actor,
            "Application \(application.name) (\(application.id)) sends its operations' status changes to "
                + "\(request.url).")
        return ApplicationWebhookInfo(
            applicationId: application.id, url: request.url, secret: secret, updatedAt: Date(millis: now))
    }

    /// Removes the application's own webhook.
    /// - Throws: `NOT_FOUND` when it has none.
    public func remove(_ application: ApplicationRecord, actor: String) async throws {
        guard try await store.deleteApplicationWebhook(applicationId: application.id) else {
            throw AssentServerError.notFound("The application has no webhook of its own.")
        }
        cache.forget(.webhook)
        await audit(
            .applicationWebhookRemoved, application: application.id, actor: actor,
            "Application \(application.name) (\(application.id)) no longer has a webhook of its own.")
    }

    /// Where the status changes of `applicationId`'s operations go: its own webhook, else the server's.
    func destination(_ applicationId: String) async throws -> WebhookSettings? {
        if let own = try await store.applicationWebhook(applicationId: applicationId), let url = URL(string: own.url) {
            var settings = WebhookSettings(url: url, secret: own.secret)
            if let server = webhook { settings.timeout = server.timeout }
            return settings
        }
        return webhook
    }

    /// Whether any application has a webhook of its own. Read at most every 5 seconds per process.
    func anyApplicationHasWebhook() async throws -> Bool {
        try await cache.presence(.webhook) { try await store.anyApplicationWebhook() }
    }
}
