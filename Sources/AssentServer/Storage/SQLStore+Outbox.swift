import AssentCrypto
import AssentModel
import Foundation
import SQLKit

extension SQLStore {
    // MARK: Outbox

    public func claimOutboxItems(channels: [OutboxChannel], owner: String, now: Millis, until: Millis, limit: Int)
        async throws -> [OutboxItem]
    {
        guard !channels.isEmpty else { return [] }
        // A look first: under load every write wakes the dispatcher, and a claim is a write.
        var due = SQLQueryString("SELECT id FROM outbox WHERE ")
        Self.appendDue(to: &due, channels: channels, now: now)
        due.appendInterpolation(unsafeRaw: " LIMIT 1")
        guard try await database.raw(due).first() != nil else { return [] }
        // The outer condition is checked again on each row after the inner selection, so of two processes
        // claiming at once only one leases a row (PostgreSQL re-evaluates it on the locked row; SQLite has one
        // writer).
        var query = SQLQueryString("UPDATE outbox SET lease_owner = ")
        query.appendInterpolation(bind: owner)
        query.appendInterpolation(unsafeRaw: ", lease_until = ")
        query.appendInterpolation(bind: until)
        query.appendInterpolation(unsafeRaw: " WHERE id IN (SELECT id FROM outbox WHERE ")
        Self.appendDue(to: &query, channels: channels, now: now)
        query.appendInterpolation(
            unsafeRaw: " ORDER BY id LIMIT \(max(1, limit))) AND state = 'pending' AND lease_until <= ")
        query.appendInterpolation(bind: now)
        query.appendInterpolation(unsafeRaw: " RETURNING *")
        return try await database.raw(query).all().map(decodeOutboxItem).sorted { $0.id < $1.id }
    }

    /// The condition of a message due now on one of `channels` and not leased (index `outbox_channel_due`).
    private static func appendDue(to query: inout SQLQueryString, channels: [OutboxChannel], now: Millis) {
        query.appendInterpolation(unsafeRaw: "state = 'pending' AND channel IN (")
        for (index, channel) in channels.enumerated() {
            if index > 0 { query.appendInterpolation(unsafeRaw: ", ") }
            query.appendInterpolation(bind: channel.rawValue)
        }
        query.appendInterpolation(unsafeRaw: ") AND next_attempt_at <= ")
        query.appendInterpolation(bind: now)
        query.appendInterpolation(unsafeRaw: " AND lease_until <= ")
        query.appendInterpolation(bind: now)
    }

    public func recordOutboxAttempt(id: Int64, owner: String, attempts: Int, result: OutboxAttempt, now: Millis)
        async throws
    {
        let (state, next, error): (String, Millis, String?) =
            switch result {
            case .delivered: ("delivered", now, nil)
            case .retry(let error, let at): ("pending", at, error)
            case .abandoned(let error): ("abandoned", now, error)
            }
        try await database.raw(
            """
            UPDATE outbox SET state = \(bind: state), attempts = \(bind: Int64(attempts)),
            next_attempt_at = \(bind: next), lease_owner = NULL, lease_until = 0, last_error = \(bind: error),
            finished_at = \(bind: state == "pending" ? nil : now)
            WHERE id = \(bind: id) AND lease_owner = \(bind: owner)
            """
        ).run()
    }

    @discardableResult
    public func releaseOutboxLeases(owner: String) async throws -> Int {
        try await database.raw(
            """
            UPDATE outbox SET lease_owner = NULL, lease_until = 0 \
            WHERE lease_owner = \(bind: owner) AND state = 'pending' RETURNING id
            """
        ).all().count
    }

    public func purgeOutbox(before: Millis, undeliverable: [OutboxChannel]) async throws {
        try await database.raw("DELETE FROM outbox WHERE state <> 'pending' AND finished_at < \(bind: before)").run()
        for channel in undeliverable {
            try await database.raw(
                """
                DELETE FROM outbox WHERE state = 'pending' AND channel = \(bind: channel.rawValue) \
                AND at < \(bind: before)
                """
            ).run()
        }
    }

    public func outboxBacklog() async throws -> [OutboxBacklog] {
        try await database.raw(
            """
            SELECT channel, count(*) AS pending, min(at) AS oldest FROM outbox WHERE state = 'pending' \
            GROUP BY channel
            """
        ).all().map { row in
            OutboxBacklog(
                channel: OutboxChannel(rawValue: try row.decode(column: "channel", as: String.self)),
                pending: Int(try row.decode(column: "pending", as: Int64.self)),
                oldest: try row.decode(column: "oldest", as: Int64.self))
        }
    }

    public func outboxItems(subject: String) async throws -> [OutboxItem] {
        try await database.raw("SELECT * FROM outbox WHERE subject = \(bind: subject) ORDER BY id").all()
            .map(decodeOutboxItem)
    }

    private func decodeOutboxItem(_ row: any SQLRow) throws -> OutboxItem {
        OutboxItem(
            id: try row.decode(column: "id", as: Int64.self),
            channel: OutboxChannel(rawValue: try row.decode(column: "channel", as: String.self)),
            event: try row.decode(column: "event", as: String.self),
            subject: try row.decode(column: "subject", as: String.self),
            target: try row.decode(column: "target", as: String?.self),
            payload: try row.decode(column: "payload", as: String?.self),
            at: try row.decode(column: "at", as: Int64.self),
            attempts: Int(try row.decode(column: "attempts", as: Int64.self)),
            state: try row.decode(column: "state", as: String.self),
            lastError: try row.decode(column: "last_error", as: String?.self))
    }

    // MARK: Push registrations

    public func putPushRegistration(_ registration: PushRegistrationRecord) async throws {
        let token = try box.seal(
            Data(registration.token.utf8), context: SealedColumn.pushToken.context(registration.activationId))
        let keys = try registration.webPush.map {
            try box.seal(
                $0.publicKey.x963 + $0.authSecret,
                context: SealedColumn.pushWebPushKeys.context(registration.activationId))
        }
        // A replaced registration always gets a later time than the one it replaces, so a late answer about the old
        // token (deletePushRegistration with its time) never removes the new one.
        try await database.raw(
            """
            INSERT INTO push_registrations (activation_id, platform, environment, token, language, registered_at, \
            webpush_keys)
            VALUES (\(bind: registration.activationId), \(bind: registration.platform.rawValue), \
            \(bind: registration.environment?.rawValue), \(bind: token), \(bind: registration.language), \
            \(bind: registration.registeredAt), \(bind: keys))
            ON CONFLICT (activation_id) DO UPDATE SET platform = EXCLUDED.platform,
            environment = EXCLUDED.environment, token = EXCLUDED.token, language = EXCLUDED.language,
            webpush_keys = EXCLUDED.webpush_keys,
            registered_at = CASE WHEN EXCLUDED.registered_at > push_registrations.registered_at
                THEN EXCLUDED.registered_at ELSE push_registrations.registered_at + 1 END
            """
        ).run()
    }

    public func pushRegistration(activationId: String) async throws -> PushRegistrationRecord? {
        guard
            let row = try await database.raw(
                "SELECT * FROM push_registrations WHERE activation_id = \(bind: activationId)"
            ).first()
        else { return nil }
        let platformName = try row.decode(column: "platform", as: String.self)
        guard let platform = PushPlatform(rawValue: platformName) else {
            throw AssentServerError.internalError("Push registration \(activationId) has an invalid platform.")
        }
        let token = try box.open(
            try row.decode(column: "token", as: Data.self), context: SealedColumn.pushToken.context(activationId))
        let webPush = try row.decode(column: "webpush_keys", as: Data?.self).map { sealed in
            let keys = try box.open(sealed, context: SealedColumn.pushWebPushKeys.context(activationId))
            guard keys.count == 81 else {
                throw AssentServerError.internalError("Push registration \(activationId) has malformed Web Push keys.")
            }
            return try WebPushEncryption.Subscription(
                publicKey: try ECPublicKey(x963: keys.prefix(65)), authSecret: Data(keys.suffix(16)))
        }
        return PushRegistrationRecord(
            activationId: activationId, platform: platform,
            environment: try row.decode(column: "environment", as: String?.self).flatMap(PushEnvironment.init),
            token: String(decoding: token, as: UTF8.self),
            language: try row.decode(column: "language", as: String?.self),
            registeredAt: try row.decode(column: "registered_at", as: Int64.self), webPush: webPush)
    }

    public func deletePushRegistration(activationId: String, registeredAt: Millis) async throws -> Bool {
        !(try await database.raw(
            """
            DELETE FROM push_registrations WHERE activation_id = \(bind: activationId) \
            AND registered_at = \(bind: registeredAt) RETURNING activation_id
            """
        ).all()).isEmpty
    }
}
