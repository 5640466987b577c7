import AssentCrypto
import AssentModel
import Foundation
import HTTPTypes
import Hummingbird

/// The page a browser's sign-in request opens, under `/approve-sign-in/{operation-id}?t=<signed link>`: the sign-in as
/// the phone shows it (site, browser, address, time), the number choices when the sign-in page shows a number, and
/// an Approve button that runs the account's passkey (user verification required) — or Reject. The link alone
/// answers nothing but a rejection; its forms carry it, so the page needs no session.
struct BrowserApprovalPages: Sendable {
    let approvers: BrowserApprovers
    let branding: ApplicationBrandingService
    let pages = WebPages.shared

    func addRoutes(to router: Router<AssentRequestContext>) {
        router.get("approve-sign-in/{id}", use: requestPage)
        router.post("approve-sign-in/{id}/options", use: passkeyOptions)
        router.post("approve-sign-in/{id}", use: approveSignIn)
        router.post("approve-sign-in/{id}/reject", use: rejectSignIn)
    }

    /// `GET /approve-sign-in/{id}?t=…`: the sign-in request as the phone would show it.
    @Sendable func requestPage(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let token = request.uri.queryParameters["t"].map(String.init)
        return try await answer(context, token: token) { sign in try await page(sign, token: token ?? "") }
    }

    /// `POST /approve-sign-in/{id}/options`: the passkey ceremony's options (JSON).
    @Sendable func passkeyOptions(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let form = try await WebForm.read(request) ?? [:]
        guard let sign = try await approvers.request(form["t"], operationId: context.parameters.require("id"))
        else {
            return try TFAController.json(
                ["code": "FORBIDDEN", "message": Self.invalidLink], status: .forbidden)
        }
        do {
            return try TFAController.json(try await approvers.options(sign))
        } catch let error as AssentServerError where error.status < 500 {
            return try TFAController.json(
                ["code": error.code.rawValue, "message": LoginPages.sentence(error)], status: .conflict)
        }
    }

    /// `POST /approve-sign-in/{id}`: the passkey's answer approves the sign-in.
    @Sendable func approveSignIn(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let form = try await WebForm.read(request) ?? [:]
        return try await answer(context, token: form["t"]) { sign in
            try await approve(sign, form: form)
        }
    }

    /// `POST /approve-sign-in/{id}/reject`: the person rejects the sign-in.
    @Sendable func rejectSignIn(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let form = try await WebForm.read(request) ?? [:]
        return try await answer(context, token: form["t"]) { sign in
            do {
                return try await page(try await approvers.reject(sign), sign, token: form["t"] ?? "")
            } catch let error as AssentServerError where error.status < 500 {
                return try await page(sign, token: form["t"] ?? "", message: LoginPages.sentence(error))
            }
        }
    }

    static let invalidLink =
        "This sign-in request is invalid, has expired, or this browser no longer gets sign-in requests."

    /// Runs `body` with what a valid link names; anything else gets a page that says so.
    private func answer(
        _ context: AssentRequestContext, token: String?,
        _ body: (BrowserApprovers.Request) async throws -> Response
    ) async throws -> Response {
        guard let sign = try await approvers.request(token, operationId: context.parameters.require("id")) else {
            return pages.error(.forbidden, Self.invalidLink, next: nil)
        }
        return try await body(sign)
    }

    /// `POST /approve-sign-in/{id}`: the passkey's answer and the chosen number.
    private func approve(_ sign: BrowserApprovers.Request, form: [String: String]) async throws -> Response {
        let token = form["t"] ?? ""
        let credential: AuthenticationCredential
        do {
            credential = try JSONDecoder().decode(
                AuthenticationCredential.self, from: Data((form["credential"] ?? "").utf8))
        } catch {
            return try await page(
                sign, token: token, message: "Your browser sent no passkey: try again.", status: .badRequest)
        }
        let number = form["number"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        do {
            return try await page(
                try await approvers.approve(sign, credential: credential, number: number), sign, token: token)
        } catch let error as TFAError {
            return try await page(sign, token: token, message: error.message, status: .badRequest)
        } catch let error as AssentServerError where error.status < 500 {
            // A wrong number rejected the sign-in: the page shows that.
            let current = try await approvers.operations.get(id: sign.operation.id)
            return try await page(
                current, sign, token: token, message: LoginPages.sentence(error),
                status: HTTPResponse.Status(code: error.status))
        }
    }

    private func page(
        _ sign: BrowserApprovers.Request, token: String, message: String? = nil,
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        try await page(
            approvers.operations.get(id: sign.operation.id), sign, token: token, message: message, status: status)
    }

    private func page(
        _ operation: OperationRecord, _ sign: BrowserApprovers.Request, token: String, message: String? = nil,
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let pageLanguage = Languages.choose()
        let (language, form) = operation.content.localized(acceptLanguage: pageLanguage)
        let attributes = form.attributes.compactMap { ApprovalPages.display($0, language: language) }
        let pending = operation.status == .pending
        let path = BrowserApprovers.path(operation.id)
        let choices = operation.numberMatching == NumberMatching.choose ? operation.numberChoices : []
        let content = BrowserApprovalPage(
            formTitle: form.title, formMessage: form.message, formLanguage: language, attributes: attributes,
            hasAttributes: !attributes.isEmpty, pending: pending, token: token, action: path,
            optionsUrl: "\(path)/options", rejectUrl: "\(path)/reject",
            choices: choices, hasChoices: !choices.isEmpty,
            typeNumber: operation.numberMatching == NumberMatching.type,
            statusText: Texts(pageLanguage)(Self.outcome(operation)))
        return pages.page(
            content,
            frame: LayoutFrame(
                title: pending ? "Approve this sign-in?" : PushSender.browserOutcome(operation.status),
                application: sign.application.name, message: message,
                brand: try await branding.pageBrand(
                    sign.application.id), language: pageLanguage),
            status: status)
    }

    /// What the page says of a finished sign-in.
    static func outcome(_ operation: OperationRecord) -> String {
        switch operation.status {
        case .pending: ""
        case .approved: "Approved: the sign-in goes on where it started. You can close this tab."
        case .rejected where operation.statusReason == OperationRecord.wrongNumber:
            "Rejected: the number chosen was not the one the sign-in page showed. Nobody was signed in."
        case .rejected: "Rejected: nobody was signed in."
        case .expired: "This sign-in request expired before it was answered."
        case .canceled: "This sign-in request was withdrawn (answered elsewhere, or a newer one replaced it)."
        case .failed: "This sign-in request failed."
        }
    }
}

/// The browser's sign-in request page.
struct BrowserApprovalPage: PageContext {
    static let template = PageTemplate.approveSignIn
    var formTitle: String
    var formMessage: String
    var formLanguage: String
    var attributes: [LabeledValue]
    var hasAttributes: Bool
    var pending: Bool
    var token: String
    var action: String
    var optionsUrl: String
    var rejectUrl: String
    /// The numbers to choose from (number matching `choose`).
    var choices: [Int]
    var hasChoices: Bool
    /// Whether the person types the number (number matching `type`).
    var typeNumber: Bool
    var statusText: String
}
