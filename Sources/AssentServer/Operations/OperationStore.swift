import AssentCrypto
import AssentModel
import Foundation

/// Operations and operation templates.
public protocol OperationStore: Sendable {
    func insertOperation(_ operation: OperationRecord) async throws
    func operation(id: String) async throws -> OperationRecord?
    /// The user's operations, newest first, optionally only those in `status`.
    func operations(userId: String, status: OperationStatus?, limit: Int) async throws -> [OperationRecord]
    /// Writes `operation` (with its version bumped) if the stored version is still `expectedVersion`. A change of
    /// status also appends a webhook event in the same statement.
    func updateOperation(_ operation: OperationRecord, expectedVersion: Int64) async throws -> Bool
    /// An approval's read: the activation and the operation in one statement, either nil when absent.
    func activationAndOperation(activationId: String, operationId: String) async throws -> (
        ActivationRecord?, OperationRecord?
    )
    /// An approval's write: `activation` if its stored version is still `expectedVersion`, then `operation` if its
    /// own is still `operationVersion` — never the operation without the activation. One statement on PostgreSQL;
    /// the operation may still be refused after the activation was written (a concurrent change of it).
    func updateActivation(
        _ activation: ActivationRecord, expectedVersion: Int64, then operation: OperationRecord,
        expectedVersion operationVersion: Int64
    ) async throws -> (activation: Bool, operation: Bool)
    /// Ids of pending operations whose expiry has passed.
    func overdueOperationIds(now: Millis, limit: Int) async throws -> [String]
    /// Keeps the operations' table: on PostgreSQL it makes the month partitions of `now` and the two months after
    /// it, and drops each partition whose month ended before `cutoff` and that holds no pending operation (so rows
    /// stay until up to a month past the cutoff); on SQLite it deletes the finished operations created before
    /// `cutoff`. A nil `cutoff` removes nothing.
    func keepOperations(now: Millis, removingCreatedBefore cutoff: Millis?) async throws -> OperationUpkeep

    /// Operation templates are each application's own.
    func putTemplate(applicationId: String, name: String, body: String, at: Millis) async throws
    func template(applicationId: String, name: String) async throws -> (body: String, updatedAt: Millis)?
    func templates(applicationId: String) async throws -> [(name: String, body: String, updatedAt: Millis)]
    func deleteTemplate(applicationId: String, name: String) async throws -> Bool
}

/// What one ``OperationStore/keepOperations(now:removingCreatedBefore:)`` did.
public struct OperationUpkeep: Sendable, Equatable {
    /// PostgreSQL: month partitions made, and dropped by retention.
    public var partitionsMade = 0
    public var partitionsDropped = 0
    /// SQLite: finished operations deleted by retention.
    public var rowsDeleted = 0

    public init(partitionsMade: Int = 0, partitionsDropped: Int = 0, rowsDeleted: Int = 0) {
        (self.partitionsMade, self.partitionsDropped, self.rowsDeleted) = (
            partitionsMade, partitionsDropped, rowsDeleted
        )
    }
}
