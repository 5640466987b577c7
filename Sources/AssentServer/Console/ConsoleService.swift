import AssentCrypto
import AssentModel
import Foundation

/// The console's queries across users: the dashboard's counts, the users with activations, the newest operations.
struct ConsoleService: Sendable {
    let environment: ServerEnvironment
    /// The part of the store this sees.
    var store: any ConsoleStore { environment.store }

    /// Users with activations whose id starts with `prefix` (all when `nil`), the most recently activated first.
    func users(prefix: String?, limit: Int) async throws -> [ConsoleUser] {
        try await store.consoleUsers(prefix: prefix, limit: limit)
    }

    /// How many activations are in each state.
    func activationCounts() async throws -> [ActivationState: Int] { try await store.activationCounts() }

    /// Operations finished at or after `since`, counted per hour and status.
    func finishedOperationsPerHour(since: Millis) async throws
        -> [(hour: Int64, status: OperationStatus, count: Int)]
    {
        try await store.finishedOperationsPerHour(since: since)
    }

    /// The newest operations, of one user and in one status when given, older than `before` when given.
    func recentOperations(userId: String?, status: OperationStatus?, before: OperationCursor?, limit: Int)
        async throws -> [OperationRecord]
    {
        try await store.recentOperations(userId: userId, status: status, before: before, limit: limit)
    }
}
