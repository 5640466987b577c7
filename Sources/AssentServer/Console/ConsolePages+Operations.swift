import AssentCrypto
import AssentModel
import AssentQR
import Foundation
import HTTPTypes
import Hummingbird

/// The console's operations: the newest (by user and status), one operation as the phone shows it with its live
/// status, cancel, create one from a template, and the QR codes for approving offline (with the check of the code
/// the person types back) and for the proximity check.
extension ConsolePages {
    func addOperationRoutes(to console: RouterGroup<ConsoleRequestContext>) {
        let read = console.requiring(.operationsRead)
        read.get("operations", use: operationList)
        read.get("operations/{id}", use: operationPage)
        read.get("operations/{id}/proximity.png", use: proximityCode)
        let write = console.requiring(.operationsWrite)
        write.get("operations/new", use: newOperation)
        write.post("operations", use: createOperation)
        write.post("operations/{id}/cancel", use: cancelOperation)
        write.post("operations/{id}/offline", use: offlineCode)
        write.post("operations/{id}/offline-verify", use: verifyOfflineCode)
    }

    /// `GET /console/operations/new`: the form that creates an operation from a template.
    @Sendable func newOperation(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        let saved = try await templates.all(in: visit.application)
        let chosen = kept(visit, "template")
        let page = ConsoleNewOperationPage(
            user: kept(visit, "user") ?? visit.query("user") ?? "", params: kept(visit, "params") ?? "",
            proximity: kept(visit, "proximity") == "on",
            templates: saved.map { template in
                let needs = OperationTemplate.parameters(of: template.body)
                return ConsoleNewOperationPage.Template(
                    name: template.name, selected: template.name == chosen,
                    parameters: needs.isEmpty ? "no parameters" : needs.joined(separator: ", "))
            },
            noTemplates: saved.isEmpty)
        return try await show(page, title: "New operation", visit)
    }

    /// `POST /console/operations`: creates the operation; on to its page.
    @Sendable func createOperation(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await act(context, back: "/console/operations/new") { visit in
            let operation = try await operations.create(
                try Self.operationRequest(visit.form), application: visit.application, actor: visit.actor)
            return (Self.operationPath(operation.id), "Operation created: it waits on the user's phones.")
        }
    }

    /// `GET /console/operations/{id}`.
    @Sendable func operationPage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await operation(try context.parameter("id"), try context.visit)
    }

    /// `POST /console/operations/{id}/cancel` (asked first, naming the operation and its user).
    @Sendable func cancelOperation(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let id = try context.parameter("id")
        let ask: Ask = { visit in
            let operation = try await ownOperation(id, visit)
            let title = operation.content.form(acceptLanguage: nil).title
            let user = operation.userId ?? "its user"
            return Confirmation(
                title: "Cancel the operation", question: "Cancel “\(title)” for \(user)?",
                consequence: "\(user)'s phones no longer show it and it can no longer be approved; this cannot "
                    + "be undone.",
                button: "Cancel the operation")
        }
        return try await act(context, back: Self.operationPath(id), ask: ask) { visit in
            _ = try await ownOperation(id, visit)
            let reason = visit.form["reason"].flatMap { $0.isEmpty ? nil : $0 }
            _ = try await operations.cancel(id: id, reason: reason, actor: visit.actor)
            return (Self.operationPath(id), "Operation canceled.")
        }
    }

    /// `POST /console/operations/{id}/offline`: the offline QR code for the operation (any or one activation).
    @Sendable func offlineCode(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        let id = try context.parameter("id")
        _ = try await ownOperation(id, visit)
        let activationId = visit.form["activation"].flatMap { $0.isEmpty ? nil : $0 }
        let qr = try await operations.offlineQR(
            id: id,
            request: OfflineQRRequest(keyType: activationId == nil ? .master : .personal, activationId: activationId))
        return try await operation(id, visit, offlineQR: qr, offlineActivation: activationId)
    }

    /// `POST /console/operations/{id}/offline-verify`: the code the person typed back from the phone.
    @Sendable func verifyOfflineCode(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        let id = try context.parameter("id")
        _ = try await ownOperation(id, visit)
        let activationId = visit.form["activation"] ?? ""
        let message: String
        do {
            let (valid, updated) = try await operations.verifyOffline(
                id: id, activationId: activationId, code: visit.form["code"] ?? "", actor: visit.actor)
            if valid {
                var session = visit.session
                session.state.message = "The code is right: the operation is approved."
                _ = try await sessions.save(&session)
                return WebPages.redirect(Self.operationPath(id))
            }
            message = OperationService.wrongOfflineCode(updated)
        } catch let error as AssentServerError where error.status < 500 {
            message = error.message
        }
        // The same QR code again while it is still the operation's latest: the code from that scan still works, and
        // the operator can type it again.
        let current = try await operations.get(id: id)
        return try await operation(
            id, visit, offlineQR: OperationService.currentOfflineQR(visit.form["qr"], of: current),
            offlineActivation: activationId, error: message)
    }

    /// `GET /console/operations/{id}/proximity.png`: the proximity check's QR code.
    @Sendable func proximityCode(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        let id = try context.parameter("id")
        _ = try await ownOperation(id, visit)
        let code = try await operations.proximityCode(id: id, scheme: "assent")
        return Self.png(try QRCode(text: code.jwt, errorCorrection: .medium).png(scale: 6))
    }

    static func operationPath(_ id: String) -> String { "/console/operations/\(FormEncoding.escape(id))" }

    /// A row of an operations table.
    static func operationRow(_ operation: OperationRecord) -> ConsoleOperationRow {
        ConsoleOperationRow(
            id: operation.id, url: operationPath(operation.id), user: operation.userId ?? "—",
            userUrl: operation.userId.map(userPath), name: operation.name,
            title: operation.content.form(acceptLanguage: nil).title, status: operation.status.rawValue,
            statusClass: operation.status.rawValue.lowercased(), created: time(operation.createdAt),
            createdIso: iso(operation.createdAt))
    }

    /// `GET /console/operations[?user=&status=&before=]`: the newest operations.
    @Sendable func operationList(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        let userId = visit.query("user")
        let status = try HTTPSupport.operationStatus(visit.query("status"))
        let before = visit.query("before").flatMap(OperationCursor.init(text:))
        let pageSize = 100
        let found = try await queries.recentOperations(
            in: visit.application, userId: userId, status: status, before: before, limit: pageSize + 1)
        let list = Array(found.prefix(pageSize))
        var page = ConsoleOperationsPage(
            user: userId ?? "", empty: list.isEmpty,
            statuses: OperationStatus.allCases.map { .init(value: $0.rawValue, selected: $0 == status) },
            operations: list.map(Self.operationRow), canCreate: visit.allows(.operationsWrite),
            newUrl: Self.link("/console/operations/new", ["user": userId]))
        if found.count > pageSize, let last = list.last {
            page.next = Self.link(
                "/console/operations",
                [
                    "user": userId, "status": status?.rawValue,
                    "before": OperationCursor(createdAt: last.createdAt, id: last.id).text,
                ])
        }
        if before != nil {
            page.first = Self.link("/console/operations", ["user": userId, "status": status?.rawValue])
        }
        let live = Self.liveURL(operations: list.filter { $0.status == .pending }.map(\.id))
        return try await show(page, title: "Operations", live: live, visit)
    }

    private func operation(
        _ id: String, _ visit: Visit, offlineQR: String? = nil, offlineActivation: String? = nil, error: String? = nil
    ) async throws -> Response {
        let operation = try await ownOperation(id, visit)
        let (language, form) = operation.content.localized(acceptLanguage: OperationContent.pageLanguage)
        let pending = operation.status == .pending
        let write = visit.allows(.operationsWrite)
        // The phone that answered, by the name it was given and the start of its id (not a bare id).
        var answeredOn: String?
        if let id = operation.activationId {
            answeredOn = try await activations.find(id: id)?.deviceLabel ?? id
        }
        var page = ConsoleOperationPage(
            id: operation.id, status: operation.status.rawValue, statusClass: operation.status.rawValue.lowercased(),
            formTitle: form.title, formMessage: form.message, formLanguage: language,
            attributes: form.attributes.compactMap { ApprovalPages.display($0) },
            details: Self.details([
                ("Name", .text(operation.name)), ("User", .text(operation.userId ?? "any user's phone")),
                ("Data", .text(operation.data)), ("Template", .text(operation.template)),
                ("Created", .time(operation.createdAt)), ("Expires", .time(operation.expiresAt)),
                ("Finished", .time(operation.finishedAt)), ("Reason", .text(operation.statusReason)),
                ("Answered on", .text(answeredOn)),
                ("Failed attempts", .text("\(operation.failedAttempts) of \(operation.maxFailedAttempts)")),
            ]),
            canCancel: write && pending,
            proximity: pending && operation.proximitySeed != nil,
            proximityUrl: "\(Self.operationPath(operation.id))/proximity.png?",
            userUrl: operation.userId.map(Self.userPath))
        if write && pending {
            let devices = try await activations.active(
                userId: operation.userId ?? "", applicationId: operation.applicationId)
            page.offline = true
            page.devices = devices.map {
                .init(id: $0.id, label: $0.deviceLabel, selected: $0.id == offlineActivation)
            }
        }
        if let offlineQR, pending {
            page.offlineQR = try QRCode(text: offlineQR, errorCorrection: .low).pngDataURL(scale: 4)
            page.offlineQRText = offlineQR
        }
        page.deliveries = ConsolePushDelivery.rows(
            try await pushDeliveries.deliveries(operationId: operation.id), about: \.activationId
        ) { target in
            // A browser that approves sign-ins is one of the user's factors, listed on the user's page.
            BrowserApprovers.factorId(target: target) == nil
                ? Self.activationPath(target) : Self.userPath(operation.userId ?? "")
        }
        page.hasDeliveries = !page.deliveries.isEmpty
        page.retention = ConsolePushDelivery.retention(pushTraceRetention)
        let live = Self.liveURL(operations: [operation.id])
        if let error {
            return render(page, title: "Operation", live: live, error: error, visit, status: .badRequest)
        }
        return try await show(page, title: "Operation", live: live, visit)
    }

    /// An operation request from the new-operation form: the user, a template and its `name=value` parameters (one
    /// per line; numbers stay numbers), and whether the proximity check is on.
    static func operationRequest(_ form: [String: String]) throws -> CreateOperationRequest {
        guard let template = form["template"], !template.isEmpty else {
            throw AssentServerError.invalidRequest("Choose a template.")
        }
        var params: [String: JSONValue] = [:]
        for line in (form["params"] ?? "").split(whereSeparator: \.isNewline) {
            let text = line.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { continue }
            guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                throw AssentServerError.invalidRequest("Write each parameter as name=value on its own line.")
            }
            let name = text[..<equals].trimmingCharacters(in: .whitespaces)
            let value = text[text.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            let number = value.range(of: #"^-?[0-9]+(\.[0-9]+)?$"#, options: .regularExpression) != nil
            params[name] = number ? Decimal(string: value).map(JSONValue.number) ?? .string(value) : .string(value)
        }
        let user = form["user"]?.trimmingCharacters(in: .whitespacesAndNewlines)
        return CreateOperationRequest(
            userId: user?.isEmpty == false ? user : nil, proximityCheck: form["proximity"] == "on",
            template: template, params: params)
    }
}
