import AssentCrypto
import AssentModel
import Foundation
import Logging
import Prometheus

/// Delivers the outbox's `push` messages: one notification to one activation's registered device, through the
/// service its token belongs to. A token the service declares dead is deleted (only then: a fault in our own
/// credentials never removes a device); a new operation that finished before its push left is not announced.
struct PushSender: OutboxSender {
    let environment: ServerEnvironment
    /// The part of the store this sees.
    var store: any ActivationStore & OperationStore & PushRegistrationStore & PushDeliveryStore { environment.store }
    let apns: APNsClient?
    let fcm: FCMClient?
    let hms: HMSClient?
    let webPush: WebPushClient?
    private let transport: PushTransport

    init(environment: ServerEnvironment, settings: PushSettings) throws {
        self.environment = environment
        let transport = try PushTransport(settings: settings)
        self.transport = transport
        apns = settings.apns.map { APNsClient(settings: $0, transport: transport) }
        fcm = settings.fcm.map { FCMClient(settings: $0, transport: transport) }
        hms = settings.hms.map { HMSClient(settings: $0, transport: transport) }
        webPush = settings.webPush.map { [environment] in
            WebPushClient(settings: $0, transport: transport) { try await VAPIDKey.load(environment) }
        }
    }

    static var attempts: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "assent", subsystem: "push", metricName: "attempts", unitName: "total",
            helpText: "Push attempts by service and outcome (delivered, unregistered, retry, failed).")
    }

    var channel: OutboxChannel { .push }

    func shutdown() async { await transport.shutdown() }

    func deliver(_ item: OutboxItem) async -> DeliveryOutcome {
        guard let activationId = item.target else { return .failed("The push message names no activation.") }
        if let factorId = BrowserApprovers.factorId(target: activationId) {
            return await deliverToBrowser(item, factorId: factorId)
        }
        let registration: PushRegistrationRecord?
        let operation: OperationRecord?
        do {
            registration = try await store.pushRegistration(activationId: activationId)
            operation = try await store.operation(id: item.subject)
        } catch {
            return .retry("The registration or operation could not be read: \(type(of: error))")
        }
        guard let registration else { return .failed("The activation has no push registration any more.") }
        guard let operation else { return .failed("The operation does not exist.") }
        guard let content = Self.content(for: item, operation: operation, registration: registration) else {
            return .failed("The operation finished before its push was sent.")
        }
        return await attempt(item, content: content, registration: registration) { reason, since in
            await unregister(registration, reason: reason, since: since)
        }
    }

    /// Sends `content` once, records the attempt in the trace and `/metrics`; a token the service declares dead is
    /// handed to `unregister`, which says what came of it and whether the registration is gone.
    func attempt(
        _ item: OutboxItem, content: PushContent, registration: PushRegistrationRecord,
        unregister: (String, Millis?) async -> (DeliveryOutcome, removed: Bool)
    ) async -> DeliveryOutcome {
        let recorder = PushAttemptRecorder()
        let started = ContinuousClock.now
        let delivery = await PushAttemptRecorder.$current.withValue(recorder) {
            await send(content, to: registration)
        }
        let latency = ContinuousClock.now - started
        let outcome: DeliveryOutcome
        let traced: PushDeliveryRecord.Outcome
        switch delivery {
        case .delivered: (outcome, traced) = (.delivered, .delivered)
        case .retry(let error, let after): (outcome, traced) = (.retry(error, after: after), .retry)
        case .failed(let error): (outcome, traced) = (.failed(error), .failed)
        case .tokenInvalid(let reason, let since):
            let (result, removed) = await unregister(reason, since)
            (outcome, traced) = (result, removed ? .unregistered : .failed)
        }
        await trace(
            item, registration: registration, outcome: traced, status: recorder.lastStatus, reason: outcome.message,
            latency: latency)
        return outcome
    }

    /// Hands `content` to the registration's service.
    func send(_ content: PushContent, to registration: PushRegistrationRecord) async -> PushDelivery {
        switch registration.platform {
        case .apns:
            guard let apns else { return .failed("APNs is not configured on this server.") }
            return await apns.send(content, to: registration)
        case .fcm:
            guard let fcm else { return .failed("FCM is not configured on this server.") }
            return await fcm.send(content, to: registration.token)
        case .hms:
            guard let hms else { return .failed("HMS is not configured on this server.") }
            return await hms.send(content, to: registration.token)
        case .webpush:
            guard let webPush else {
                return .failed("Web Push is not configured on this server (serve --vapid-subject).")
            }
            return await webPush.send(content, to: registration, now: environment.now())
        }
    }

    /// Records the attempt in the delivery trace (its reason without the token) and counts it for `/metrics`.
    private func trace(
        _ item: OutboxItem, registration: PushRegistrationRecord, outcome: PushDeliveryRecord.Outcome, status: Int?,
        reason: String?, latency: Duration
    ) async {
        let service = registration.platform.rawValue
        environment.metrics.makeCounter(
            descriptor: Self.attempts, labels: [("service", service), ("outcome", outcome.rawValue)]
        ).increment()
        let record = PushDeliveryRecord(
            activationId: registration.activationId, operationId: item.subject, event: item.event, service: service,
            outcome: outcome, httpStatus: status,
            reason: reason.map { $0.replacingOccurrences(of: registration.token, with: "[token]") },
            latencyMillis: Int64(latency.components.seconds) * 1000 + latency.components.attoseconds
                / 1_000_000_000_000_000,
            at: environment.nowMillis)
        do {
            try await store.insertPushDelivery(record)
        } catch {
            environment.logger.warning(
                "push delivery trace not written", metadata: ["error": "\(String(reflecting: type(of: error)))"])
        }
    }

    /// Deletes a registration whose token the service declared dead — unless the service's own time says the token
    /// was dead before this registration (APNs 410 `timestamp`), or the device registered a new token meanwhile.
    private func unregister(_ registration: PushRegistrationRecord, reason: String, since: Millis?) async
        -> (DeliveryOutcome, removed: Bool)
    {
        if let since, since < registration.registeredAt {
            return (
                .failed("\(reason); the token was registered again after that, so the registration stays."), false
            )
        }
        var removed = false
        do {
            if try await store.deletePushRegistration(
                activationId: registration.activationId, registeredAt: registration.registeredAt)
            {
                removed = true
                await environment.audit(
                    .pushUnregistered,
                    activation: try? await store.activation(id: registration.activationId), actor: "system",
                    "The \(registration.platform.rawValue) token of activation \(registration.activationId) is no "
                        + "longer valid (\(reason)); its push registration was removed.")
                environment.logger.info(
                    "push registration removed",
                    metadata: ["activation.id": "\(registration.activationId)", "reason": "\(reason)"])
            }
        } catch {
            return (.retry("\(reason); removing the registration failed: \(type(of: error))"), false)
        }
        return (.failed("\(reason); the registration was removed."), removed)
    }

    /// The notification for an outbox message, or `nil` when a new operation is no longer pending.
    static func content(for item: OutboxItem, operation: OperationRecord, registration: PushRegistrationRecord)
        -> PushContent?
    {
        let message: PushMessage
        var title: String?
        var body: String?
        let expiresAt: Date
        if item.event == "operation.created" {
            guard operation.status == .pending else { return nil }
            let form = operation.content.form(acceptLanguage: registration.language)
            title = String(form.title.prefix(PushContent.titleLimit))
            body = String(form.message.prefix(PushContent.bodyLimit))
            message = .operationCreated(
                id: operation.id, name: operation.name, activationId: registration.activationId, title: title,
                body: body)
            expiresAt = Date(millis: operation.expiresAt)
        } else {
            let status = item.payloadFields["status"].flatMap(OperationStatus.init(rawValue:)) ?? operation.status
            guard let result = PushMessage.OperationResult(status) else { return nil }
            message = .operationFinished(
                id: operation.id, name: operation.name, result: result, activationId: registration.activationId)
            // A finished-operation notice only refreshes an open app: worthless after a few minutes.
            expiresAt = Date(millis: item.at + 300_000)
        }
        return PushContent(
            message: message, category: operation.name, title: title, body: body, expiresAt: expiresAt,
            collapseKey: operation.id)
    }
}

extension DeliveryOutcome {
    /// The failure's sentence; `nil` when delivered.
    var message: String? {
        switch self {
        case .delivered: nil
        case .retry(let message, _), .failed(let message): message
        }
    }
}

/// The server's VAPID key: one per database, made by whichever process needs it first.
enum VAPIDKey {
    static func load(_ environment: ServerEnvironment) async throws -> ECPrivateKey {
        try await environment.store.vapidKey(creating: ECPrivateKey(), at: environment.nowMillis)
    }
}
