import AssentModel
import Foundation
import Logging
import SQLKit

extension OutboxChannel {
    /// Security notices by e-mail ("A passkey was added"), through the mail relay.
    public static let notice = OutboxChannel(rawValue: "notice")
}

/// What account notices persist: one outbox message per e-mail address of the account.
public protocol NoticeStore: Sendable {
    /// Queues `subject` and `text` to every active e-mail factor of the account; returns how many messages.
    func queueNotice(applicationId: String, userId: String, subject: String, text: String, at now: Millis)
        async throws -> Int
}

extension SQLStore {
    public func queueNotice(applicationId: String, userId: String, subject: String, text: String, at now: Millis)
        async throws -> Int
    {
        let payload = try OperatorJSON.encoder().encode(NoticeMail(subject: subject, text: text))
        return try await database.raw(
            """
            INSERT INTO outbox (channel, event, subject, target, payload, at, next_attempt_at)
            SELECT 'notice', 'account.notice', f.id, f.destination, \(bind: String(decoding: payload, as: UTF8.self)), \
            \(bind: now), \(bind: now)
            FROM tfa_factors f WHERE f.application_id = \(bind: applicationId) AND f.user_id = \(bind: userId) \
            AND f.provider = 'email' AND f.state = 'active' AND f.destination IS NOT NULL
            RETURNING id
            """
        ).all().count
    }
}

/// A notice's mail, kept in its outbox message (the address is the message's target).
struct NoticeMail: Codable, Sendable {
    var subject: String
    var text: String
}

/// Delivers account notices through the configured SMTP relay: a 5xx reply abandons the message, a 4xx reply or a
/// network failure is retried.
struct NoticeSender: OutboxSender {
    let clock: WallClock
    let client: SMTPClient

    var channel: OutboxChannel { .notice }

    func deliver(_ item: OutboxItem) async -> DeliveryOutcome {
        guard let address = item.target, let payload = item.payload,
            let mail = try? OperatorJSON.decoder().decode(NoticeMail.self, from: Data(payload.utf8))
        else { return .failed("The notice has no address or text.") }
        do {
            try await client.send(to: address, subject: mail.subject, body: mail.text + "\n", date: clock.now())
            return .delivered
        } catch let error as SMTPError {
            return error.permanent ? .failed(error.message) : .retry(error.message)
        } catch {
            return .retry("\(type(of: error))")
        }
    }
}

/// The notices a person gets when their account's security changes, written in one place, in the person's language:
/// the one they chose on `/account`, else the application's default, else English.
struct AccountNotices: Sendable {
    /// The part of the store this sees.
    let store: any TFAStore & ApplicationBrandingStore & NoticeStore
    let clock: WallClock
    let logger: Logger
    let tfa: TFASettings

    /// The mail's text around what happened; a catalogue entry like every other text a person reads.
    static let body = """
        Hello {{userId}},

        {{what}} — on your {{name}} account, {{time}}.

        If this was you, there is nothing to do. If it was not, sign in and check your account's security page at \
        once, or contact {{name}}'s support.
        """

    /// Queues a notice that `what` (a sentence of the catalogue with `values` for its placeholders, e.g.
    /// "A passkey named “{{label}}” was added") happened to the account, under `subject` (also of the catalogue).
    func send(
        _ application: ApplicationRecord, userId: String, subject: String, what: String, values: [String: String] = [:]
    ) async {
        do {
            let texts = Texts(
                try await Languages.of(applicationId: application.id, userId: userId, in: store))
            let name = tfa.totpIssuer ?? application.name
            let text = Texts.fill(
                texts.template(Self.body),
                [
                    "userId": userId, "what": texts(what, values), "name": name,
                    "time": texts.date(clock.millis),
                ])
            _ = try await store.queueNotice(
                applicationId: application.id, userId: userId, subject: "\(name): \(texts(subject))", text: text,
                at: clock.millis)
        } catch {
            logger.warning("notice not queued", metadata: ["error": "\(type(of: error))"])
        }
    }

}
