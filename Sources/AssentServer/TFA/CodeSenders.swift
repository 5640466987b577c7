import AssentModel
import Foundation

extension OutboxChannel {
    /// Verification codes by e-mail, through the mail relay.
    public static let email = OutboxChannel(rawValue: "email")
    /// Verification codes by SMS or voice, through the phone gateway.
    public static let phone = OutboxChannel(rawValue: "phone")
}

/// A sender of verification codes: it delivers one ``PendingCode``; reading the code (and dropping one that expired
/// meanwhile) is shared.
protocol CodeSender: OutboxSender {
    /// Where the codes are read.
    var codes: PendingCode.Reader { get }
    func deliver(_ pending: PendingCode) async -> DeliveryOutcome
}

extension CodeSender {
    func deliver(_ item: OutboxItem) async -> DeliveryOutcome {
        switch await codes.read(item) {
        case .success(let pending): await deliver(pending)
        case .failure(let stop): stop.outcome
        }
    }
}

/// What both code senders read for one outbox message: the code, where it goes, the application's name and the
/// minutes it is valid. A code that expired meanwhile is dropped (one that arrives dead is worse than none).
struct PendingCode {
    var code: TFACodeRecord
    var destination: String
    var application: String
    var minutes: Int

    /// Reads the codes waiting in the outbox.
    struct Reader: Sendable {
        let store: any ApplicationStore & TFAStore
        let clock: WallClock
        /// The name codes give instead of the application's (``TFASettings/totpIssuer``).
        let issuer: String?

        /// The code of `item`, or the outcome that ends its delivery.
        func read(_ item: OutboxItem) async -> Result<PendingCode, Stop> {
            do {
                guard let code = try await store.tfaCode(id: item.subject) else {
                    return .failure(Stop(outcome: .failed("The code no longer exists (expired and purged).")))
                }
                guard code.expiresAt > clock.millis else {
                    return .failure(Stop(outcome: .failed("The code expired before it could be delivered.")))
                }
                guard let factor = try await store.tfaFactor(id: code.factorId),
                    let destination = factor.destination
                else { return .failure(Stop(outcome: .failed("The factor the code was for is gone."))) }
                let application = try await store.application(id: factor.applicationId)
                return .success(
                    PendingCode(
                        code: code, destination: destination,
                        application: issuer ?? application?.name ?? "Assent",
                        minutes: max(1, Int((code.expiresAt - code.createdAt) / 60_000))))
            } catch {
                return .failure(Stop(outcome: .retry("The code could not be read: \(type(of: error))")))
            }
        }
    }

    struct Stop: Error {
        var outcome: DeliveryOutcome
    }
}

/// Delivers e-mail codes through the configured SMTP relay. A 5xx reply or a configuration fault abandons the
/// message; a 4xx reply or a network failure is retried while the code is alive.
struct EmailCodeSender: CodeSender {
    let codes: PendingCode.Reader
    let clock: WallClock
    let client: SMTPClient

    var channel: OutboxChannel { .email }

    func deliver(_ pending: PendingCode) async -> DeliveryOutcome {
        let code = pending.code
        do {
            try await client.send(
                to: pending.destination, subject: CodeMessages.subject(code.lang, application: pending.application),
                body: CodeMessages.text(
                    code.lang, code: code.code, application: pending.application, minutes: pending.minutes) + "\n",
                date: clock.now())
            return .delivered
        } catch let error as SMTPError {
            return error.permanent ? .failed(error.message) : .retry(error.message)
        } catch {
            return .retry("\(type(of: error))")
        }
    }
}

/// Delivers SMS and voice codes to the phone gateway as a signed ``PhoneMessage``. 2xx delivers; 408, 429, 5xx and
/// network failures are retried; any other answer abandons the message.
struct PhoneCodeSender: CodeSender {
    let codes: PendingCode.Reader
    let clock: WallClock
    let egress: Egress
    let settings: WebhookSettings

    var channel: OutboxChannel { .phone }

    func deliver(_ pending: PendingCode) async -> DeliveryOutcome {
        let code = pending.code
        let message = PhoneMessage(
            id: code.id, channel: TFAPhoneMethod(rawValue: code.channel) ?? .sms, to: pending.destination,
            text: CodeMessages.text(
                code.lang, code: code.code, application: pending.application, minutes: pending.minutes),
            code: code.code, lang: code.lang, expiresAt: Date(millis: code.expiresAt))
        guard let body = try? OperatorJSON.encoder().encode(message) else { return .failed("Cannot encode it.") }
        switch await SignedPost.send(
            body, to: settings, userAgent: "Assent-Phone", timestamp: clock.millis / 1000, egress: egress)
        {
        case .success(let status):
            switch status {
            case 200..<300: return .delivered
            case 408, 429, 500...: return .retry("HTTP \(status)")
            default: return .failed("The gateway refused the message: HTTP \(status)")
            }
        case .failure(.refused(let reason)):
            return .failed(reason)
        case .failure(.noAnswer(let reason)):
            return .retry(reason)
        }
    }
}
