import AssentModel
import Foundation
import SQLKit

/// Operators' phones: an activated Assent device an operator linked, which approves their console sign-ins.
public protocol OperatorPhoneStore: Sendable {
    /// The activation that approves `operatorId`'s sign-ins, if linked.
    func operatorPhone(operatorId: String) async throws -> String?
    /// Links (or with `nil` unlinks) the operator's phone.
    func setOperatorPhone(operatorId: String, activationId: String?) async throws
}

extension Migrations {
    /// Version 32: the activated phone that approves an operator's console sign-ins.
    static func operatorPhonesV32(_ dialect: Dialect) -> [String] {
        [
            dialect == .sqlite
                ? "ALTER TABLE operators ADD COLUMN phone_activation_id TEXT"
                : "ALTER TABLE operators ADD COLUMN IF NOT EXISTS phone_activation_id TEXT"
        ]
    }
}

extension SQLStore {
    public func operatorPhone(operatorId: String) async throws -> String? {
        try await database.raw("SELECT phone_activation_id FROM operators WHERE id = \(bind: operatorId)").first()?
            .decode(column: "phone_activation_id", as: String?.self)
    }

    public func setOperatorPhone(operatorId: String, activationId: String?) async throws {
        try await database.raw(
            "UPDATE operators SET phone_activation_id = \(bind: activationId) WHERE id = \(bind: operatorId)"
        ).run()
    }
}

/// An operator's phone as the console's second factor beside the password: linked once by approving a request on
/// the phone (an activation of any application the operator may work with), then asked to approve each sign-in with
/// number matching — the console shows a number the phone offers among three, so an approval given without looking
/// at the console fails. A push goes only after the password was right, and only to that one activation.
struct OperatorPhones: Sendable {
    /// The part of the store this sees.
    let store: any OperatorPhoneStore & ActivationStore & OperationStore
    let audit: Auditor
    let operations: OperationService
    let applications: ApplicationService

    static let linkName = "console_link"
    static let signInName = "console_sign_in"

    /// The operator's linked phone while its activation is active.
    func phone(_ record: OperatorRecord) async throws -> ActivationRecord? {
        guard let id = try await store.operatorPhone(operatorId: record.id),
            let activation = try await store.activation(id: id), activation.state == .active
        else { return nil }
        return activation
    }

    /// Asks `userId`'s phones in `application` to approve linking one of them to `record`.
    /// - Throws: `ERR_REQUEST` when the user has no active phone there.
    func startLink(_ record: OperatorRecord, application: ApplicationRecord, userId: String) async throws
        -> OperationRecord
    {
        guard UserID.isValid(userId),
            try await !store.activations(userId: userId).filter({
                $0.applicationId == application.id && $0.state == .active
            }).isEmpty
        else {
            throw AssentServerError.invalidRequest(
                "\(application.name) has no active phone of the user \(userId.prefix(64)): activate one first.")
        }
        return try await ask(
            application, userId: userId, devices: nil, name: Self.linkName,
            title: "Approve console sign-ins with this phone?",
            message: "Operator \(record.name) asks that this phone approve their sign-ins to the Assent console.",
            text: "Link console \(record.name)", numberMatching: nil, actor: "operator:\(record.name)")
    }

    /// Links the phone that approved `operationId`, the link request made for `record`.
    /// - Throws: `ERR_REQUEST` while it is not approved.
    func finishLink(_ record: OperatorRecord, operationId: String) async throws -> ActivationRecord {
        guard let operation = try await store.operation(id: operationId), operation.name == Self.linkName else {
            throw AssentServerError.invalidRequest("There is no link request to check: start again.")
        }
        guard operation.status == .approved, let activationId = operation.activationId,
            let activation = try await store.activation(id: activationId), activation.state == .active
        else {
            throw AssentServerError.invalidRequest(
                operation.status == .pending
                    ? "The phone has not approved the request yet: approve it there, then check again."
                    : "The phone did not approve the request (\(operation.status.rawValue)): start again.")
        }
        try await store.setOperatorPhone(operatorId: record.id, activationId: activation.id)
        await audit(
            .operatorPhoneLinked, activation: activation, actor: "operator:\(record.name)",
            "Operator \(record.name) linked activation \(activation.id) to approve their console sign-ins.")
        return activation
    }

    /// Unlinks the operator's phone.
    func unlink(_ record: OperatorRecord) async throws {
        try await store.setOperatorPhone(operatorId: record.id, activationId: nil)
        await audit(
            .operatorPhoneUnlinked, actor: "operator:\(record.name)",
            "Operator \(record.name) unlinked the phone that approved their console sign-ins.")
    }

    /// Asks the operator's phone to approve a sign-in from `address`, with a number to match.
    func startSignIn(_ record: OperatorRecord, phone: ActivationRecord, address: String?) async throws
        -> OperationRecord
    {
        guard
            let application = try await applications.application(
                id: phone.applicationId)
        else { throw AssentServerError.internalError("The phone's application is gone.") }
        return try await ask(
            application, userId: phone.userId, devices: [phone.id], name: Self.signInName,
            title: "Sign in to the Assent console?",
            message: "Operator \(record.name) is signing in to the Assent console"
                + (address.map { " from \($0)" } ?? "") + ". Choose the number the console shows.",
            text: "Console sign-in \(record.name)", numberMatching: NumberMatching.choose,
            actor: "operator:\(record.name)")
    }

    /// How a sign-in request stands: approved by the operator's phone, still waiting, or refused with a sentence.
    enum SignIn: Equatable {
        case approved
        case pending(number: Int?)
        case refused(String)
    }

    func signIn(_ record: OperatorRecord, operationId: String) async throws -> SignIn {
        guard let operation = try await store.operation(id: operationId), operation.name == Self.signInName,
            let phone = try await phone(record)
        else { return .refused("This sign-in expired: start again with your name and password.") }
        switch operation.status {
        case .pending: return .pending(number: operation.matchingNumber)
        case .approved where operation.activationId == phone.id: return .approved
        case .rejected:
            return .refused(
                operation.statusReason == "WRONG_NUMBER"
                    ? "Your phone chose another number than the console's: sign in again."
                    : "You rejected the sign-in on your phone.")
        default: return .refused("The request on your phone \(operation.status.rawValue.lowercased()): sign in again.")
        }
    }

    private func ask(
        _ application: ApplicationRecord, userId: String, devices: [String]?, name: String, title: String,
        message: String, text: String, numberMatching: String?, actor: String
    ) async throws -> OperationRecord {
        try await operations.create(
            CreateOperationRequest(
                userId: userId, name: name,
                data: OperationData(template: 0, fields: [.text(String(text.prefix(100)))]).description,
                formData: ["en": FormData(title: title, message: message)], expiresIn: 120,
                numberMatching: numberMatching),
            application: application, actor: actor, devices: devices)
    }
}
