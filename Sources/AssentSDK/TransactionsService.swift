import AssentModel
import Foundation

/// One activation ("container") the app holds for a server, and the user it belongs to.
public struct TransactionContainer: Sendable {
    /// The user the activation was created for.
    public let userId: String
    /// The activation's operations service.
    public let operations: OperationsService

    public init(userId: String, operations: OperationsService) {
        self.userId = userId
        self.operations = operations
    }
}

/// What the user may answer a transaction with (seed 003's allowed statuses).
public enum TransactionStatus: String, Sendable, CaseIterable {
    /// Approve: a signature with the factors the transaction's protection policy asks for.
    case accept
    /// Reject.
    case deny
    /// Reject and report it as fraud: the relying party is told (`access_denied`, "reported as fraud").
    case report
}

/// How the signing key of a transaction is protected (seed 003's `getProtectionPolicy().policyType()`).
public enum ProtectionPolicy: String, Sendable {
    /// The PIN is needed (`HIDPolicyTypePassword`).
    case password
    /// Biometry, or the PIN (`HIDPolicyTypeBioPassword`).
    case bioPassword
    /// The device alone confirms (no password).
    case none

    /// The policy of the factors an operation accepts.
    public init(_ allowed: AllowedSignatureType) {
        if allowed.type == .one {
            self = .none
        } else if allowed.variants.contains("possession_biometry") {
            self = .bioPassword
        } else {
            self = .password
        }
    }
}

/// Where a transaction is and who can answer it, known without a server call (seed 003's `HIDServerActionInfo`).
public struct ServerActionInfo: Sendable {
    /// The transaction (operation) id, also its unique identifier for correlation.
    public let transactionId: String
    /// The activation that answers it.
    public let container: TransactionContainer
    /// Whether it is a pending transaction of the container (`false`: scanned, to be claimed).
    let isPending: Bool
}

/// A transaction to show and answer (seed 003's `HIDTransaction`).
public struct AssentTransaction: Sendable {
    /// The operation behind it.
    public let operation: MobileOperation
    /// The activation that answers it.
    public let container: TransactionContainer

    /// The text to show: title, message and each attribute on its own line (`toString()`).
    public var text: String {
        var lines = [operation.formData.title, operation.formData.message].filter { !$0.isEmpty }
        for attribute in operation.formData.attributes {
            let value =
                attribute.value ?? attribute.note ?? attribute.amount.map { "\($0) \(attribute.currency ?? "")" }
                ?? attribute.message
            lines.append([attribute.label, value].compactMap { $0 }.joined(separator: ": "))
        }
        return lines.joined(separator: "\n")
    }

    /// When it expires (`getExpiryDate()`).
    public var expiryDate: Date? { MobileTokenJSON.parseTimestamp(operation.operationExpires) }

    /// The answers it allows (`getAllowedStatuses()`).
    public var allowedStatuses: [TransactionStatus] { TransactionStatus.allCases }

    /// How its signing key is protected (`getSigningKey().getProtectionPolicy()`).
    public var protectionPolicy: ProtectionPolicy { ProtectionPolicy(operation.allowedSignatureType) }
}

/// Seed 003's transaction API over Assent operations, across the activations this app holds for one server:
/// ids of pending transactions, action info without a server call (with the inexplicit-container rule for a
/// transaction of unknown owner), the transaction, and its answer.
public actor TransactionsService {
    public let containers: [TransactionContainer]
    /// Which container listed which pending transaction at the last ``retrieveTransactionIds()``.
    private var owners: [String: Int] = [:]

    public init(containers: [TransactionContainer]) { self.containers = containers }

    /// The pending transactions of every container (`retrieveTransactionIds`).
    public func retrieveTransactionIds() async throws -> [String] {
        var ids: [String] = []
        var owners: [String: Int] = [:]
        for (index, container) in containers.enumerated() {
            for operation in try await container.operations.pending().value where owners[operation.id] == nil {
                owners[operation.id] = index
                ids.append(operation.id)
            }
        }
        self.owners = owners
        return ids
    }

    /// Finds the container of `transactionId` without a server call (`retrieveActionInfo`). A transaction none of
    /// the containers listed — a scanned QR of a transaction without a user — goes to the only container, or to the
    /// one of `userId`.
    /// - Throws: ``AssentError/Code/inexplicitContainer`` with the candidate user ids when several containers could
    ///   take it and `userId` names none of them.
    public func retrieveActionInfo(_ transactionId: String, userId: String? = nil) throws -> ServerActionInfo {
        if let index = owners[transactionId], userId == nil || containers[index].userId == userId {
            return ServerActionInfo(transactionId: transactionId, container: containers[index], isPending: true)
        }
        if let userId, let container = containers.first(where: { $0.userId == userId }) {
            return ServerActionInfo(transactionId: transactionId, container: container, isPending: false)
        }
        guard containers.count == 1, userId == nil else {
            var error = AssentError(
                .inexplicitContainer,
                containers.isEmpty
                    ? "There is no activation to take the transaction."
                    : "Several activations could take this transaction: name the user.")
            error.candidateUserIds = containers.map(\.userId)
            throw error
        }
        return ServerActionInfo(transactionId: transactionId, container: containers[0], isPending: false)
    }

    /// Fetches the transaction (`getAction`): its detail, or — for one scanned without a user — claims it for the
    /// container's user.
    public func getAction(_ info: ServerActionInfo) async throws -> AssentTransaction {
        let operations = info.container.operations
        let operation =
            info.isPending
            ? try await operations.detail(id: info.transactionId).value
            : try await operations.claim(id: info.transactionId).value
        return AssentTransaction(operation: operation, container: info.container)
    }

    /// Answers the transaction (`setStatus`): `accept` signs it with `factor` (required unless the protection
    /// policy is ``ProtectionPolicy/none``) and `mobileContext`; `deny` rejects it; `report` rejects it as fraud.
    /// - Throws: ``AssentError/Code/operationExpired`` (`HIDTransactionExpired`), ``AssentError/Code/pinExpired``
    ///   (`HIDPasswordExpired`), ``AssentError/Code/wrongPIN`` (`HIDAuthentication`).
    public func setStatus(
        _ status: TransactionStatus, of transaction: AssentTransaction, factor: AuthenticationFactor? = nil,
        mobileContext: Data? = nil
    ) async throws {
        let operations = transaction.container.operations
        switch status {
        case .accept:
            let chosen = factor ?? (transaction.protectionPolicy == .none ? .possession : nil)
            guard let chosen else {
                throw AssentError(.invalidInput, "This transaction needs the PIN or biometry to accept it.")
            }
            try await operations.authorize(transaction.operation, factor: chosen, mobileContext: mobileContext)
        case .deny:
            try await operations.reject(id: transaction.operation.id, reason: RejectReason.unknown)
        case .report:
            try await operations.reject(id: transaction.operation.id, reason: RejectReason.fraud)
        }
    }
}
