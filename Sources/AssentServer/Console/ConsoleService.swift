import AssentCrypto
import AssentModel
import Foundation

/// The console's queries across the users of one application: the dashboard's counts, the users with activations,
/// the newest operations.
struct ConsoleService: Sendable {
    /// The part of the store this sees.
    let store: any ConsoleStore

    /// Users with activations whose id starts with `prefix` (all when `nil`), the most recently activated first.
    func users(in application: ApplicationRecord, prefix: String?, limit: Int) async throws -> [ConsoleUser] {
        try await store.consoleUsers(applicationId: application.id, prefix: prefix, limit: limit)
    }

    /// How many activations are in each state.
    func activationCounts(in application: ApplicationRecord) async throws -> [ActivationState: Int] {
        try await store.activationCounts(applicationId: application.id)
    }

    /// Operations finished at or after `since`, counted per hour and status.
    func finishedOperationsPerHour(in application: ApplicationRecord, since: Millis) async throws
        -> [(hour: Int64, status: OperationStatus, count: Int)]
    {
        try await store.finishedOperationsPerHour(applicationId: application.id, since: since)
    }

    /// The newest operations, of one user and in one status when given, older than `before` when given.
    func recentOperations(
        in application: ApplicationRecord, userId: String?, status: OperationStatus?, before: OperationCursor?,
        limit: Int
    ) async throws -> [OperationRecord] {
        try await store.recentOperations(
            applicationId: application.id, userId: userId, status: status, before: before, limit: limit)
    }
}
