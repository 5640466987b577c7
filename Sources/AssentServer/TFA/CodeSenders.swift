import AssentModel
import Foundation

extension OutboxChannel {
    /// Verification codes by e-mail, through the mail relay.
    public static let email = OutboxChannel(rawValue: "email")
    /// Verification codes by SMS or voice, through the phone gateway.
    public static let phone = OutboxChannel(rawValue: "phone")
}

/// What both code senders read for one outbox message: the code and where it goes, unless it expired meanwhile (a
/// code that arrives dead is worse than none: the message is dropped).
private func pendingCode(_ item: OutboxItem, _ environment: ServerEnvironment) async
    -> Result<(TFACodeRecord, String, String), DeliveryOutcomeFailure>
{
    do {
        guard let code = try await environment.store.tfaCode(id: item.subject) else {
            return .failure(.init(outcome: .failed("The code no longer exists (expired and purged).")))
        }
        guard code.expiresAt > environment.nowMillis else {
            return .failure(.init(outcome: .failed("The code expired before it could be delivered.")))
        }
        guard let factor = try await environment.store.tfaFactor(id: code.factorId),
            let destination = factor.destination
        else { return .failure(.init(outcome: .failed("The factor the code was for is gone."))) }
        let application = try await environment.store.application(id: factor.applicationId)
        return .success((code, destination, environment.tfa.totpIssuer ?? application?.name ?? "Assent"))
    } catch {
        return .failure(.init(outcome: .retry("The code could not be read: \(type(of: error))")))
    }
}

private struct DeliveryOutcomeFailure: Error {
    var outcome: DeliveryOutcome
}

/// Delivers e-mail codes through the configured SMTP relay. A 5xx reply or a configuration fault abandons the
/// message; a 4xx reply or a network failure is retried while the code is alive.
struct EmailCodeSender: OutboxSender {
    let environment: ServerEnvironment
    let client: SMTPClient

    var channel: OutboxChannel { .email }

    func deliver(_ item: OutboxItem) async -> DeliveryOutcome {
        let code: TFACodeRecord
        let address: String
        let application: String
        switch await pendingCode(item, environment) {
        case .success(let found): (code, address, application) = found
        case .failure(let failure): return failure.outcome
        }
        let minutes = max(1, Int((code.expiresAt - code.createdAt) / 60_000))
        do {
            try await client.send(
                to: address, subject: CodeMessages.subject(code.lang, application: application),
                body: CodeMessages.text(code.lang, code: code.code, application: application, minutes: minutes)
                    + "\n",
                date: environment.now())
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
struct PhoneCodeSender: OutboxSender {
    let environment: ServerEnvironment
    let settings: WebhookSettings

    var channel: OutboxChannel { .phone }

    func deliver(_ item: OutboxItem) async -> DeliveryOutcome {
        let code: TFACodeRecord
        let number: String
        let application: String
        switch await pendingCode(item, environment) {
        case .success(let found): (code, number, application) = found
        case .failure(let failure): return failure.outcome
        }
        let minutes = max(1, Int((code.expiresAt - code.createdAt) / 60_000))
        let message = PhoneMessage(
            id: code.id, channel: TFAPhoneMethod(rawValue: code.channel) ?? .sms, to: number,
            text: CodeMessages.text(code.lang, code: code.code, application: application, minutes: minutes),
            code: code.code, lang: code.lang, expiresAt: Date(millis: code.expiresAt))
        guard let body = try? OperatorJSON.encoder().encode(message) else { return .failed("Cannot encode it.") }
        switch await SignedPost.send(
            body, to: settings, userAgent: "Assent-Phone", timestamp: environment.nowMillis / 1000)
        {
        case .success(let status):
            switch status {
            case 200..<300: return .delivered
            case 408, 429, 500...: return .retry("HTTP \(status)")
            default: return .failed("The gateway refused the message: HTTP \(status)")
            }
        case .failure(let error):
            return .retry(error.reason)
        }
    }
}
