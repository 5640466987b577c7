import AssentCrypto
import AssentModel
import Foundation
import Logging
import Prometheus

/// Delivers the outbox's `push` messages: one notification to one activation's registered device, through the
/// service its token belongs to, with its application's credentials (``ApplicationPushService``). A token the service declares dead is deleted (only then: a fault in our own
/// credentials never removes a device); a new operation that finished before its push left is not announced.
struct PushSender: OutboxSender {
    /// The part of the store this sees.
    let store:
        any ActivationStore & OperationStore & PushRegistrationStore & PushDeliveryStore & TFAStore
            & ApplicationBrandingStore
    let clock: WallClock
    let audit: Auditor
    let logger: Logger
    let metrics: PrometheusCollectorRegistry
    /// The server's own push settings, if any.
    let push: PushSettings?
    let applicationPush: ApplicationPushService
    /// Browsers that approve sign-ins (their messages go through Web Push too).
    let approvers: BrowserApprovers
    /// The server's own credentials' clients: the first application's unless it has its own.
    let apns: APNsClient?
    let fcm: FCMClient?
    let hms: HMSClient?
    let webPush: WebPushClient?
    let applicationClients: ApplicationPushClients
    private let transport: PushTransport

    /// - Throws: a configuration error when the push settings cannot be used.
    init(
        store: any ActivationStore & OperationStore & PushRegistrationStore & PushDeliveryStore & TFAStore
            & ApplicationBrandingStore,
        clock: WallClock, audit: Auditor, logger: Logger, metrics: PrometheusCollectorRegistry, egress: Egress,
        push: PushSettings?, applicationPush: ApplicationPushService, approvers: BrowserApprovers
    ) throws {
        self.store = store
        self.clock = clock
        self.audit = audit
        self.logger = logger
        self.metrics = metrics
        self.push = push
        self.applicationPush = applicationPush
        self.approvers = approvers
        let settings = push ?? PushSettings()
        let transport = try PushTransport(settings: settings)
        self.transport = transport
        let gateways = settings.gateways
        apns = settings.apns.map { APNsClient(settings: gateways.routing($0), transport: transport) }
        fcm = settings.fcm.map { FCMClient(settings: gateways.routing($0), transport: transport) }
        hms = settings.hms.map { HMSClient(settings: gateways.routing($0), transport: transport) }
        applicationClients = ApplicationPushClients(transport: transport, gateways: gateways)
        webPush = settings.webPush.map {
            WebPushClient(settings: $0, egress: egress) {
                try await VAPIDKey.load(store, clock: clock, applicationId: $0)
            }
        }
    }

    static var attempts: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "assent", subsystem: "push", metricName: "attempts", unitName: "total",
            helpText: "Push attempts by service and outcome (delivered, unregistered, retry, failed).")
    }

    var channel: OutboxChannel { .push }

    func shutdown() async { await transport.shutdown() }

    /// Ready when this process has push credentials of its own or some application has its own: a process without
    /// any leaves push messages to one that has them.
    func isReady() async -> Bool {
        if !(push?.isEmpty ?? true) { return true }
        return (try? await applicationPush.anyApplicationHasCredentials()) ?? false
    }

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
        return await attempt(
            item, content: content, registration: registration, applicationId: operation.applicationId
        ) { reason, since in
            await unregister(registration, reason: reason, since: since)
        }
    }

    /// Sends `content` once, records the attempt in the trace and `/metrics`; a token the service declares dead is
    /// handed to `unregister`, which says what came of it and whether the registration is gone.
    func attempt(
        _ item: OutboxItem, content: PushContent, registration: PushRegistrationRecord, applicationId: String,
        unregister: (String, Millis?) async -> (DeliveryOutcome, removed: Bool)
    ) async -> DeliveryOutcome {
        let recorder = PushAttemptRecorder()
        let started = ContinuousClock.now
        let delivery = await PushAttemptRecorder.$current.withValue(recorder) {
            await send(content, to: registration, applicationId: applicationId)
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

    /// Hands `content` to the registration's service, with the credentials of the application `applicationId`.
    func send(_ content: PushContent, to registration: PushRegistrationRecord, applicationId: String) async
        -> PushDelivery
    {
        let client: PushServiceClient?
        if registration.platform == .webpush {
            client = nil
        } else {
            do {
                client = try await self.client(registration.platform, applicationId: applicationId)
            } catch {
                return .retry("The application's push credentials could not be read: \(type(of: error))", after: nil)
            }
        }
        switch (registration.platform, client) {
        case (.apns, .apns(let apns)?): return await apns.send(content, to: registration)
        case (.fcm, .fcm(let fcm)?): return await fcm.send(content, to: registration.token)
        case (.hms, .hms(let hms)?): return await hms.send(content, to: registration.token)
        case (.apns, _), (.fcm, _), (.hms, _):
            let service = registration.platform.rawValue
            return .failed(
                "The application has no \(service) credentials: set them with PUT /api/v1/applications/"
                    + "\(applicationId)/push/\(service) (assent admin application push \(service)).")
        case (.webpush, _):
            guard let webPush else {
                return .failed("Web Push is not configured on this server (serve --vapid-subject).")
            }
            return await webPush.send(content, to: registration, applicationId: applicationId, now: clock.now())
        }
    }

    /// The client for `platform` with the application's own credentials, else the server's for the first
    /// application; `nil` when there are none.
    private func client(_ platform: PushPlatform, applicationId: String) async throws -> PushServiceClient? {
        let (own, serverStandsIn) = try await applicationPush.credentials(
            applicationId)
        if let record = own[platform] { return try applicationClients.client(for: record) }
        guard serverStandsIn else { return nil }
        switch platform {
        case .apns: return apns.map(PushServiceClient.apns)
        case .fcm: return fcm.map(PushServiceClient.fcm)
        case .hms: return hms.map(PushServiceClient.hms)
        case .webpush: return nil
        }
    }

    /// Records the attempt in the delivery trace (its reason without the token) and counts it for `/metrics`.
    private func trace(
        _ item: OutboxItem, registration: PushRegistrationRecord, outcome: PushDeliveryRecord.Outcome, status: Int?,
        reason: String?, latency: Duration
    ) async {
        let service = registration.platform.rawValue
        metrics.makeCounter(
            descriptor: Self.attempts, labels: [("service", service), ("outcome", outcome.rawValue)]
        ).increment()
        let record = PushDeliveryRecord(
            activationId: registration.activationId, operationId: item.subject, event: item.event, service: service,
            outcome: outcome, httpStatus: status,
            reason: reason.map { $0.replacingOccurrences(of: registration.token, with: "[token]") },
            latencyMillis: Int64(latency.components.seconds) * 1000 + latency.components.attoseconds
                / 1_000_000_000_000_000,
            at: clock.millis)
        do {
            try await store.insertPushDelivery(record)
        } catch {
            logger.warning(
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
                await audit(
                    .pushUnregistered,
                    activation: try? await store.activation(id: registration.activationId), actor: "system",
                    "The \(registration.platform.rawValue) token of activation \(registration.activationId) is no "
                        + "longer valid (\(reason)); its push registration was removed.")
                logger.info(
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

/// An application's VAPID key: one per application and database, made by whichever process needs it first.
enum VAPIDKey {
    static func load(_ store: any PushDeliveryStore, clock: WallClock, applicationId: String) async throws
        -> ECPrivateKey
    {
        try await store.vapidKey(applicationId: applicationId, creating: ECPrivateKey(), at: clock.millis)
    }
}
