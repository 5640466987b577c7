import AssentCrypto
import AssentModel
import AssentQR
import Foundation
import HTTPTypes
import Hummingbird

/// Signed links to the waiting-for-approval page: ES256 JWS with the OpenID provider's keys (`use: approve`), naming
/// the operation (`sub`), its application (`aud`) and where the page goes afterwards (`ret`). The operator API hands
/// them out (`POST /api/v1/operations/{id}/approval-link`); whoever holds one may watch the operation, never answer it
/// — except a link that offers offline approval (`off`), whose holder may submit the code the person's app shows.
struct ApprovalLinks: Sendable {
    let clock: WallClock
    let openID: OpenIDSettings
    let keys: SigningKeyService
    let operations: OperationService

    struct Claims: Codable {
        var iss: String
        var sub: String
        var aud: String
        var iat: Int64
        var exp: Int64
        var use: String
        var ret: String
        /// Whether the page offers approving offline.
        var off: Bool?
        /// The browser a sign-in request went to (``BrowserApprovers``' links).
        var brw: String? = nil
    }

    /// `claims` as a compact ES256 JWS with the provider's current key.
    func sign(_ claims: Claims) async throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let signer = try await keys.signer("ES256")
        return try CompactJWS.sign(payload: try encoder.encode(claims), with: signer.signingKey, keyId: signer.kid)
    }

    /// A link to the page of a pending operation.
    func link(operationId: String, _ request: ApprovalLinkRequest) async throws -> ApprovalLinkResponse {
        let operation = try await operations.get(id: operationId)
        guard operation.status == .pending else { throw AssentServerError.operationFinished(operation.status) }
        guard Self.isReturnURL(request.returnUrl) else {
            throw AssentServerError.invalidRequest(
                "returnUrl is an absolute http or https URL of at most 2048 characters.")
        }
        let now = clock.millis / 1000
        let expires: Int64
        if let expiresIn = request.expiresIn {
            guard (60...86_400).contains(expiresIn) else {
                throw AssentServerError.invalidRequest("expiresIn is 60 to 86400 seconds.")
            }
            expires = now + Int64(expiresIn)
        } else {
            expires = operation.expiresAt / 1000 + 600
        }
        let claims = Claims(
            iss: openID.issuer, sub: operation.id, aud: operation.applicationId, iat: now, exp: expires,
            use: "approve", ret: request.returnUrl, off: request.offline == true ? true : nil)
        let token = try await sign(claims)
        return ApprovalLinkResponse(
            url: "\(openID.base)\(ApprovalPages.path(operation.id))?t=\(token)",
            expiresAt: Date(millis: expires * 1000))
    }

    /// The claims of a link to `operationId` for `use` that this server signed and that has not expired; `nil`
    /// otherwise.
    func verify(_ token: String?, operationId: String, use: String = "approve") async throws -> Claims? {
        guard let token, token.utf8.count <= 4096, (try? CompactJWS.header(of: token))?.alg == "ES256",
            let payload = try? CompactJWS.verify(token, keys: try await keys.jwks()),
            let claims = try? JSONDecoder().decode(Claims.self, from: payload),
            claims.use == use, claims.iss == openID.issuer, claims.sub == operationId,
            claims.exp * 1000 > clock.millis
        else { return nil }
        return claims
    }

    static func isReturnURL(_ text: String) -> Bool {
        // The page's CSP names the return URL's origin (see WebPages.origin(of:)), so it must have a plain one.
        text.utf8.count <= 2048 && WebPages.origin(of: text) != nil
    }
}

/// The waiting-for-approval page under `/approve/{operation-id}?t=<signed link>`: what the person is to approve on
/// the phone (the operation's texts and attributes in their language), its state, and — once the operation is
/// finished — on to the relying party's return URL with `operation_id` and `status` in its query. The wait is live
/// (an event stream woken by the one event stream; the page's only script); without scripts, a Continue link. An
/// operation with a proximity check shows its QR code (the current TOTP as the unsigned JWT the app scans), which the
/// script refreshes every ten seconds.
struct ApprovalPages: Sendable {
    let clock: WallClock
    let openID: OpenIDSettings
    /// Wakes the page that waits for the phone's answer.
    let events: EventHub
    let branding: ApplicationBrandingService
    let links: ApprovalLinks
    let applications: ApplicationService
    let activations: ActivationService
    let pages = WebPages.shared

    static func path(_ operationId: String) -> String { "/approve/\(FormEncoding.escape(operationId))" }

    func addRoutes(to router: Router<AssentRequestContext>) {
        router.get("approve/{id}", use: approvalPage)
        router.get("approve/{id}/continue", use: continueAfterAnswer)
        router.get("approve/{id}/proximity.png", use: proximityCode)
        router.get("approve/{id}/offline", use: offlineCodePage)
        router.post("approve/{id}/offline", use: checkOfflineCode)
        router.get("approve/{id}/events", use: answerEvents)
    }

    /// `GET /approve/{id}?t=…`: the operation as the phone shows it, while the phone answers.
    @Sendable func approvalPage(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, context) { operation, claims, token in
            try await page(operation, claims: claims, token: token, request: request)
        }
    }

    /// `GET /approve/{id}/continue`: on to the site once the phone answered.
    @Sendable func continueAfterAnswer(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, context) { operation, claims, token in
            guard operation.status != .pending else {
                return try await page(
                    operation, claims: claims, token: token, request: request,
                    message: "Not answered yet: approve or reject the request on your phone.")
            }
            return WebPages.redirect(Self.returnURL(claims.ret, operation))
        }
    }

    /// `GET /approve/{id}/proximity.png`: the proximity check's QR code while the operation waits.
    @Sendable func proximityCode(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, context) { operation, _, _ in
            guard operation.status == .pending, operation.proximitySeed != nil else {
                return Response(status: .notFound, headers: WebPages.securityHeaders)
            }
            let code = try await links.operations.proximityCode(id: operation.id, scheme: "assent")
            var headers = WebPages.securityHeaders
            headers[.contentType] = "image/png"
            return Response(
                status: .ok, headers: headers,
                body: .init(
                    byteBuffer: ByteBuffer(
                        bytes: try QRCode(text: code.jwt, errorCorrection: .medium).png(scale: 6))))
        }
    }

    /// `GET /approve/{id}/offline`: the offline QR code, when the link offers it.
    @Sendable func offlineCodePage(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, context) { operation, claims, token in
            guard claims.off == true else {
                return pages.error(.notFound, "This link does not offer that.", next: nil)
            }
            guard operation.status == .pending else {
                return WebPages.redirect(Self.returnURL(claims.ret, operation))
            }
            return try await offlinePage(operation, claims: claims, token: token, qr: nil, request: request)
        }
    }

    /// `POST /approve/{id}/offline`: the code the phone showed for the offline QR code.
    @Sendable func checkOfflineCode(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, context) { operation, claims, token in
            guard claims.off == true else {
                return pages.error(.notFound, "This link does not offer that.", next: nil)
            }
            guard let form = try await WebForm.read(request) else {
                return pages.error(.unsupportedMediaType, "This page takes an HTML form.", next: nil)
            }
            return try await verifyOffline(operation, claims: claims, token: token, form: form, request: request)
        }
    }

    /// `GET /approve/{id}/events`: `done` once the phone answered.
    @Sendable func answerEvents(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await answer(request, context) { operation, _, _ in
            WebPages.waitForAnswer(
                links.operations, events: events, operationId: operation.id, userId: operation.userId)
        }
    }

    /// Runs `body` with the operation a valid link names; an invalid or expired link gets a page that says so.
    private func answer(
        _ request: Request, _ context: AssentRequestContext,
        _ body: (OperationRecord, ApprovalLinks.Claims, String) async throws -> Response
    ) async throws -> Response {
        let id = try context.parameters.require("id")
        let token = request.uri.queryParameters["t"].map(String.init)
        guard let claims = try await links.verify(token, operationId: id), let token,
            let operation = try? await links.operations.get(id: id)
        else {
            return pages.error(
                .forbidden, "This approval link is invalid or has expired: go back to the site that sent you here.",
                next: nil)
        }
        return try await body(operation, claims, token)
    }

    private func page(
        _ operation: OperationRecord, claims: ApprovalLinks.Claims, token: String, request: Request,
        message: String? = nil
    ) async throws -> Response {
        let application = try await applications.application(id: operation.applicationId)
        // The page speaks the person's language, and shows the operation's texts in it where it has them (its
        // section says which language they are in, for a screen reader, when it is another).
        let pageLanguage = Languages.choose()
        let texts = Texts(pageLanguage)
        let (language, form) = operation.content.localized(acceptLanguage: pageLanguage)
        let attributes = form.attributes.compactMap { Self.display($0, language: language) }
        let pending = operation.status == .pending
        let title = pending ? "Approve on your phone" : Self.outcome(operation.status)
        let content = ApprovalPage(
            formTitle: form.title, formMessage: form.message, formLanguage: language,
            attributes: attributes, hasAttributes: !attributes.isEmpty,
            pending: pending,
            proximity: pending && operation.proximitySeed != nil,
            proximityUrl: "\(Self.path(operation.id))/proximity.png?t=\(token)",
            statusText: texts(
                pending
                    ? "Open the app on your phone: this request is waiting for you there. This page goes on by itself "
                        + "once you have answered."
                    : "The request is \(Self.outcome(operation.status).lowercased())."),
            continueUrl: "\(Self.path(operation.id))/continue?t=\(token)",
            eventsUrl: "\(Self.path(operation.id))/events?t=\(token)",
            continueLabel: texts(pending ? "I answered on my phone: continue" : "Continue"),
            offlineUrl: pending && claims.off == true && operation.userId != nil
                ? "\(Self.path(operation.id))/offline?t=\(token)" : nil)
        return pages.page(
            content,
            frame: LayoutFrame(
                title: title, application: application?.name ?? "Assent", message: message,
                brand: try await branding.pageBrand(
                    operation.applicationId), language: pageLanguage))
    }

    /// The offline approval: the operation's offline QR code (signed with the master key, so any of the person's
    /// phones can scan it), the phone that answers, and the code it shows. `qr` is the code shown before (kept
    /// while it is still the operation's latest, so a mistyped code does not change what was scanned).
    private func offlinePage(
        _ operation: OperationRecord, claims: ApprovalLinks.Claims, token: String, qr: String?, request: Request,
        message: String? = nil, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let text: String
        if let current = OperationService.currentOfflineQR(qr, of: operation) {
            text = current
        } else {
            text = try await links.operations.offlineQR(
                id: operation.id, request: OfflineQRRequest(keyType: .master, activationId: nil))
        }
        let application = try await applications.application(id: operation.applicationId)
        let devices = try await activations.active(
            userId: operation.userId ?? "", applicationId: operation.applicationId)
        let pageLanguage = Languages.choose()
        let (language, form) = operation.content.localized(acceptLanguage: pageLanguage)
        let content = OfflineApprovalPage(
            formTitle: form.title, formMessage: form.message, formLanguage: language,
            qr: try QRCode(text: text, errorCorrection: .low).pngDataURL(scale: 4), qrText: text,
            devices: devices.map { Choice(id: $0.id, label: $0.deviceLabel) },
            oneDevice: devices.count == 1 ? devices.first?.id : nil, manyDevices: devices.count > 1,
            noDevices: devices.isEmpty,
            action: "\(Self.path(operation.id))/offline?t=\(token)",
            backUrl: "\(Self.path(operation.id))?t=\(token)")
        // The right code redirects the form's answer to the return URL: the page must allow its origin.
        return pages.page(
            content,
            frame: LayoutFrame(
                title: "Approve without a connection", application: application?.name ?? "Assent", message: message,
                brand: try await branding.pageBrand(
                    operation.applicationId), language: pageLanguage),
            status: status, formTargets: WebPages.origin(of: claims.ret).map { [$0] } ?? [])
    }

    /// `POST /approve/{id}/offline`: the code the phone showed; right → on to the return URL, wrong → the same QR
    /// code again with the reason (and `Retry-After` when too many codes were tried).
    private func verifyOffline(
        _ operation: OperationRecord, claims: ApprovalLinks.Claims, token: String, form: [String: String],
        request: Request
    ) async throws -> Response {
        let code = (form["code"] ?? "").filter { !$0.isWhitespace }
        var message: String
        var status = HTTPResponse.Status.badRequest
        var retryAfter: Int?
        do {
            let (valid, updated) = try await links.operations.verifyOffline(
                id: operation.id, activationId: form["activation"] ?? "", code: code, actor: "user")
            if valid { return WebPages.redirect(Self.returnURL(claims.ret, updated)) }
            message = OperationService.wrongOfflineCode(updated)
        } catch let error as AssentServerError where error.status < 500 {
            (message, status, retryAfter) = (error.message, HTTPResponse.Status(code: error.status), error.retryAfter)
        }
        let current = try await links.operations.get(id: operation.id)
        if current.status != .pending { return WebPages.redirect(Self.returnURL(claims.ret, current)) }
        var response = try await offlinePage(
            current, claims: claims, token: token, qr: form["qr"], request: request, message: message,
            status: status)
        if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }

    /// The return URL with `operation_id` and `status` added to its query.
    static func returnURL(_ base: String, _ operation: OperationRecord) -> String {
        guard var components = URLComponents(string: base) else { return base }
        components.queryItems =
            (components.queryItems ?? []) + [
                URLQueryItem(name: "operation_id", value: operation.id),
                URLQueryItem(name: "status", value: operation.status.rawValue),
            ]
        return components.string ?? base
    }

    static func outcome(_ status: OperationStatus) -> String {
        switch status {
        case .pending: "Waiting"
        case .approved: "Approved"
        case .rejected: "Rejected"
        case .failed: "Failed"
        case .canceled: "Canceled"
        case .expired: "Expired"
        }
    }

    /// An attribute as a label and the value the phone shows; `nil` for kinds a page does not show (images). An
    /// amount the operation did not format itself is formatted for `language` (`2 199,40 Kč` in Czech).
    static func display(_ attribute: OperationAttribute, language: String = "en") -> LabeledValue? {
        let texts = Texts(language)
        func amount(_ value: Decimal?, _ formatted: String?, _ currency: String?, _ currencyFormatted: String?)
            -> String
        {
            if formatted == nil, currencyFormatted == nil, let value { return texts.amount(value, currency: currency) }
            return [formatted ?? value.map { "\($0)" }, currencyFormatted ?? currency].compactMap { $0 }
                .joined(separator: " ")
        }
        let value: String?
        switch attribute.type {
        case "AMOUNT":
            value =
                attribute.valueFormatted
                ?? amount(
                    attribute.amount, attribute.amountFormatted, attribute.currency, attribute.currencyFormatted)
        case "AMOUNT_CONVERSION":
            let source =
                attribute.sourceValueFormatted
                ?? amount(
                    attribute.sourceAmount, attribute.sourceAmountFormatted, attribute.sourceCurrency,
                    attribute.sourceCurrencyFormatted)
            let target =
                attribute.targetValueFormatted
                ?? amount(
                    attribute.targetAmount, attribute.targetAmountFormatted, attribute.targetCurrency,
                    attribute.targetCurrencyFormatted)
            value = "\(source) → \(target)"
        case "KEY_VALUE": value = attribute.value
        case "NOTE": value = attribute.note
        case "ALERT": value = [attribute.title, attribute.message].compactMap { $0 }.joined(separator: ": ")
        case "HEADING": value = ""
        case "PARTY_INFO":
            value = attribute.partyInfo.map { [$0.name, $0.description].compactMap { $0 } }?
                .joined(separator: " — ")
        default: value = nil
        }
        guard let value else { return nil }
        return LabeledValue(label: attribute.label ?? "", value: value)
    }
}

/// The approval page: the operation as the phone shows it, and how the page goes on once it is answered.
struct ApprovalPage: PageContext {
    static let template = PageTemplate.approve
    var formTitle: String
    var formMessage: String
    var formLanguage: String
    var attributes: [LabeledValue]
    var hasAttributes: Bool
    var pending: Bool
    var proximity: Bool
    var proximityUrl: String
    var statusText: String
    var continueUrl: String
    var eventsUrl: String
    var continueLabel: String
    var offlineUrl: String?
}

/// The offline approval page: the QR code, the phone that answers, and the form for the code it shows.
struct OfflineApprovalPage: PageContext {
    static let template = PageTemplate.approveOffline
    var formTitle: String
    var formMessage: String
    var formLanguage: String
    var qr: String
    var qrText: String
    var devices: [Choice]
    var oneDevice: String?
    var manyDevices: Bool
    var noDevices: Bool
    var action: String
    var backUrl: String
}
