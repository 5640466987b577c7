import AssentModel
import Foundation

extension PushSender {
    /// A push sign-in's message to a subscribed browser, through Web Push like a phone's: for a new sign-in the
    /// notification that opens its approval page (a link signed for the sign-in and that browser), for a finished
    /// one a notification that replaces it with the outcome. A subscription its push service declares gone (404,
    /// 410) removes the browser.
    func deliverToBrowser(_ item: OutboxItem, factorId: String) async -> DeliveryOutcome {
        let factor: TFAFactorRecord?
        let operation: OperationRecord?
        do {
            factor = try await approvers.store.tfaFactor(id: factorId)
            operation = try await store.operation(id: item.subject)
        } catch {
            return .retry("The browser or operation could not be read: \(type(of: error))")
        }
        guard let factor, factor.state == .active, let subscription = BrowserApprovers.subscription(of: factor),
            let keys = try? subscription.keys()
        else { return .failed("The browser no longer gets sign-in requests.") }
        guard let operation else { return .failed("The operation does not exist.") }
        let registration = PushRegistrationRecord(
            activationId: BrowserApprovers.target(factorId: factor.id), platform: .webpush, environment: nil,
            token: subscription.endpoint, language: nil, registeredAt: factor.createdAt, webPush: keys)
        // A browser tells no language when it subscribes: the account's own, else the application's default.
        let language: String
        do {
            language = try await Languages.of(
                applicationId: operation.applicationId, userId: factor.userId, in: store)
        } catch {
            return .retry("The account's language could not be read: \(type(of: error))")
        }
        let content: PushContent
        if item.event == "operation.created" {
            guard operation.status == .pending else {
                return .failed("The operation finished before its push was sent.")
            }
            let link: String
            do {
                link = try await approvers.link(operation: operation, factorId: factor.id)
            } catch {
                return .retry("The approval link could not be signed: \(type(of: error))")
            }
            let form = operation.content.form(acceptLanguage: language)
            let title = String(form.title.prefix(PushContent.titleLimit))
            let body = String(form.message.prefix(PushContent.bodyLimit))
            content = PushContent(
                message: .operationCreated(
                    id: operation.id, name: operation.name, activationId: nil, title: title, body: body),
                category: operation.name, title: title, body: body, expiresAt: Date(millis: operation.expiresAt),
                collapseKey: operation.id, link: link)
        } else {
            let status = item.payloadFields["status"].flatMap(OperationStatus.init(rawValue:)) ?? operation.status
            guard let result = PushMessage.OperationResult(status) else {
                return .failed("The operation is still pending.")
            }
            content = PushContent(
                message: .operationFinished(id: operation.id, name: operation.name, result: result, activationId: nil),
                category: operation.name, title: Texts(language)(Self.browserOutcome(status)), body: nil,
                expiresAt: Date(millis: item.at + 300_000), collapseKey: operation.id)
        }
        return await attempt(
            item, content: content, registration: registration, applicationId: operation.applicationId
        ) { reason, _ in
            do {
                let removed = try await approvers.unsubscribed(factor, reason: reason)
                return (.failed("\(reason); the browser was removed."), removed)
            } catch {
                return (.retry("\(reason); removing the browser failed: \(type(of: error))"), false)
            }
        }
    }

    /// What replaces a browser's sign-in request once it is answered.
    static func browserOutcome(_ status: OperationStatus) -> String {
        switch status {
        case .approved: "Sign-in approved"
        case .rejected: "Sign-in rejected"
        case .expired: "Sign-in request expired"
        case .canceled: "Sign-in request withdrawn"
        case .failed, .pending: "Sign-in request ended"
        }
    }
}
