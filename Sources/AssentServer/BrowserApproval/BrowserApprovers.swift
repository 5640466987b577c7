import AssentCrypto
import AssentModel
import Crypto
import Foundation

/// Browsers that approve sign-ins: a person subscribes a browser on `/account` (a Web Push subscription, kept as a
/// push factor of the account whose destination is ``destination`` and whose secret is the sealed subscription), and
/// from then on every push sign-in of the account also reaches that browser. The notification opens a page that
/// shows what the phone would show (the site, browser, address, time and number choices) and is answered with one of
/// the account's passkeys, user verification required, bound to the sign-in's operation: holding the link alone
/// approves nothing. The first answer wins, as with phones; the finished operation replaces the notification.
struct BrowserApprovers: Sendable {
    /// The part of the store this sees.
    let store: any TFAStore & OperationStore & PasskeyStore
    let clock: WallClock
    let audit: Auditor
    let openID: OpenIDSettings
    let egress: Egress
    /// The server's push settings (whether it sends Web Push).
    let push: PushSettings?
    let flows: TFAService
    let links: ApprovalLinks
    let passkeys: PasskeyService
    let operations: OperationService

    /// The destination of a browser's push factor (a phone's is its activation id).
    static let destination = "browser"
    /// The `tfa` claim of a login a browser approved (a phone's is `push`).
    static let provider = "push-browser"
    /// `approvedWith` of an operation a browser approved with a passkey.
    static let approvedWith = "passkey"
    /// How many browsers one account may subscribe.
    static let limit = 10

    /// A browser's subscription as kept (sealed) in its factor's secret.
    struct Subscription: Codable, Sendable, Equatable {
        var endpoint: String
        var p256dh: String
        var auth: String
        /// What the browser is, for the person's list ("Chrome on Linux").
        var label: String

        /// The keys a message is encrypted for.
        func keys() throws -> WebPushEncryption.Subscription {
            try WebPushEncryption.Subscription(p256dh: p256dh, auth: auth)
        }
    }

    /// The outbox target of a browser's messages.
    static func target(factorId: String) -> String { "browser:\(factorId)" }

    /// The factor id of an outbox target that names a browser.
    static func factorId(target: String) -> String? {
        target.hasPrefix("browser:") ? String(target.dropFirst("browser:".count)) : nil
    }

    static func isBrowser(_ factor: TFAFactorRecord) -> Bool {
        factor.provider == .push && factor.destination == destination
    }

    /// The subscription a browser factor keeps; `nil` for any other factor.
    static func subscription(of factor: TFAFactorRecord) -> Subscription? {
        guard isBrowser(factor), let secret = factor.secret else { return nil }
        return try? JSONDecoder().decode(Subscription.self, from: secret)
    }

    // MARK: Subscribing

    /// Subscribes a browser for the account's sign-in requests: the endpoint checked as a device's, the keys on the
    /// curve; the same endpoint subscribed again replaces the older factor.
    @discardableResult
    func subscribe(
        _ application: ApplicationRecord, userId: String, endpoint: String, p256dh: String, auth: String,
        userAgent: String?
    ) async throws -> TFAFactorRecord {
        guard push?.webPush != nil else {
            throw AssentServerError(
                .conflict, "This server sends no Web Push (serve --vapid-subject): browsers cannot get requests.",
                status: 409)
        }
        guard try await !store.passkeys(applicationId: application.id, userId: userId).isEmpty else {
            throw AssentServerError(
                .conflict, "Add a passkey first: a browser approves sign-in requests with one.", status: 409)
        }
        try PushRegistrationService.validateEndpoint(endpoint)
        try await PushRegistrationService.checkDestination(endpoint, egress: egress)
        _ = try PushRegistrationService.subscriptionKeys(p256dh: p256dh, auth: auth)
        let existing = try await store.tfaFactors(applicationId: application.id, userId: userId)
            .filter(Self.isBrowser)
        let replaced = existing.filter { Self.subscription(of: $0)?.endpoint == endpoint }
        guard existing.count - replaced.count < Self.limit else {
            throw AssentServerError(
                .conflict, "This account has \(Self.limit) browsers for sign-in requests: remove one first.",
                status: 409)
        }
        let subscription = Subscription(
            endpoint: endpoint, p256dh: p256dh, auth: auth,
            label: userAgent.flatMap(LoginContext.describe) ?? "A browser")
        let factor = TFAFactorRecord(
            id: TFATokens.id(), applicationId: application.id, userId: userId, provider: .push, state: .active,
            destination: Self.destination, secret: try JSONEncoder().encode(subscription),
            createdAt: clock.millis)
        try await store.insertTFAFactor(factor)
        for old in replaced {
            _ = try await store.deleteTFAFactor(id: old.id, applicationId: application.id, userId: userId)
        }
        await audit(
            .tfaBrowserSubscribed, userId: userId, application: application.id, actor: "user",
            "Browser \(factor.id) (\(subscription.label)) gets the account's sign-in requests by Web Push.")
        return factor
    }

    /// Removes a browser whose push service said its subscription is gone (404/410).
    func unsubscribed(_ factor: TFAFactorRecord, reason: String) async throws -> Bool {
        guard
            try await store.deleteTFAFactor(id: factor.id, applicationId: factor.applicationId, userId: factor.userId)
        else { return false }
        await audit(
            .pushUnregistered, userId: factor.userId, application: factor.applicationId, actor: "system",
            "The Web Push subscription of browser \(factor.id) is no longer valid (\(reason)); it was removed.")
        return true
    }

    // MARK: Links

    /// The page a browser's notification opens, as a path (the service worker opens it on the origin the person
    /// subscribed on, where their passkey works): signed for the sign-in's operation and the browser, valid while
    /// the operation may be answered.
    func link(operation: OperationRecord, factorId: String) async throws -> String {
        let claims = ApprovalLinks.Claims(
            iss: openID.issuer, sub: operation.id, aud: operation.applicationId,
            iat: clock.millis / 1000, exp: operation.expiresAt / 1000 + 60, use: Self.linkUse,
            ret: "\(openID.base)/account", brw: factorId)
        return "\(Self.path(operation.id))?t=\(try await links.sign(claims))"
    }

    static let linkUse = "browser-approve"

    static func path(_ operationId: String) -> String { "/approve-sign-in/\(FormEncoding.escape(operationId))" }

    /// What a valid link names: the pending-or-finished sign-in and the browser it was sent to (still subscribed, of
    /// the sign-in's account).
    struct Request: Sendable {
        var operation: OperationRecord
        var browser: TFAFactorRecord
        var application: ApplicationRecord
    }

    /// The sign-in and browser of a link to `operationId`; `nil` when the link is not one this server signed for it,
    /// has expired, or its browser was removed.
    func request(_ token: String?, operationId: String) async throws -> Request? {
        guard let claims = try await links.verify(token, operationId: operationId, use: Self.linkUse),
            let factorId = claims.brw,
            let operation = try await store.operation(id: operationId),
            operation.name == PushFactor.loginOperation, operation.applicationId == claims.aud,
            let browser = try await store.tfaFactor(id: factorId), Self.isBrowser(browser),
            browser.state == .active, browser.userId == operation.userId,
            browser.applicationId == operation.applicationId
        else { return nil }
        let application = try await flows.applicationRecord(id: operation.applicationId)
        return Request(operation: operation, browser: browser, application: application)
    }

    // MARK: Answers

    /// The operation a passkey challenge of this sign-in is bound to.
    private static func binding(_ operationId: String) -> Data {
        Data(SHA256.hash(data: Data("assent browser approval \(operationId)".utf8)))
    }

    /// Options for the passkey that approves: the account's passkeys, user verification required.
    func options(_ request: Request) async throws -> PasskeyOptionsResponse {
        guard request.operation.status == .pending else {
            throw AssentServerError.operationFinished(request.operation.status)
        }
        return try await passkeys.requestOptions(
            request.application, userId: request.operation.userId, purpose: .approve,
            assertionHash: Self.binding(request.operation.id))
    }

    /// Approves the sign-in with a passkey's answer and the number the person chose: a wrong number rejects it (as
    /// a phone's does). The passkey is checked before anything changes.
    func approve(_ request: Request, credential: AuthenticationCredential, number: Int?) async throws
        -> OperationRecord
    {
        guard request.operation.status == .pending else {
            throw AssentServerError.operationFinished(request.operation.status)
        }
        let (passkey, _) = try await passkeys.authenticate(
            request.application, credential: credential, userId: request.operation.userId, purpose: .approve,
            assertionHash: Self.binding(request.operation.id))
        let (operation, outcome) = try await operations.mutate(id: request.operation.id) { operation, now in
            operation.approveInBrowser(number: number, now: now)
        }
        if case .wrongNumber = outcome {
            await audit(
                .tfaBrowserAnswered, userId: operation.userId, application: request.application.id, actor: "user",
                "Sign-in request \(operation.id) rejected on browser \(request.browser.id): the number chosen was "
                    + "not the one shown.")
        }
        try OperationService.throwUnlessDone(outcome)
        try await store.markTFAFactorVerified(id: request.browser.id, at: clock.millis)
        await audit(
            .tfaBrowserAnswered, userId: operation.userId, application: request.application.id, actor: "user",
            "Sign-in request \(operation.id) approved on browser \(request.browser.id) with passkey "
                + "\(passkey.factorId).")
        return operation
    }

    /// Rejects the sign-in from the browser.
    func reject(_ request: Request) async throws -> OperationRecord {
        let (operation, outcome) = try await operations.mutate(id: request.operation.id) { operation, now in
            operation.rejectInBrowser(now: now)
        }
        try OperationService.throwUnlessDone(outcome)
        await audit(
            .tfaBrowserAnswered, userId: operation.userId, application: request.application.id, actor: "user",
            "Sign-in request \(operation.id) rejected on browser \(request.browser.id).")
        return operation
    }
}
