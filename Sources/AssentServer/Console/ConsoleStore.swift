import AssentCrypto
import AssentModel
import Foundation

/// One user as the console lists them: how many activations they have, how many of those are active, and whether
/// they have a login account.
public struct ConsoleUser: Sendable, Equatable {
    public var userId: String
    public var activations: Int
    public var active: Int
    /// When their newest activation (or their login account) was created.
    public var latest: Millis
    public var loginAccount: Bool = false
}

/// Which audit events to list, newest first.
/// Where a page of operations, newest first, ends: its last operation's creation time and id.
public struct OperationCursor: Sendable, Equatable {
    public var createdAt: Millis
    public var id: String

    public init(createdAt: Millis, id: String) {
        self.createdAt = createdAt
        self.id = id
    }

    /// `createdAt.id`, as a page link carries it.
    public var text: String { "\(createdAt).\(id)" }

    /// The cursor a page link carried; `nil` for anything else.
    public init?(text: String) {
        guard let dot = text.firstIndex(of: "."), let createdAt = Millis(text[..<dot]) else { return nil }
        let id = String(text[text.index(after: dot)...])
        guard !id.isEmpty, id.utf8.count <= 64 else { return nil }
        self.init(createdAt: createdAt, id: id)
    }
}

/// The queries of the operator console that cut across users of one application: counts for the dashboard, the
/// users with activations and the newest operations.
public protocol ConsoleStore: Sendable {
    /// How many of the application's activations are in each state.
    func activationCounts(applicationId: String) async throws -> [ActivationState: Int]
    /// The application's operations finished at or after `since`, counted per hour (`hour` = milliseconds /
    /// 3,600,000) and status.
    func finishedOperationsPerHour(applicationId: String, since: Millis) async throws
        -> [(hour: Int64, status: OperationStatus, count: Int)]
    /// Users with activations of the application whose id starts with `prefix` (all when `nil`), the most recently
    /// activated first.
    func consoleUsers(applicationId: String, prefix: String?, limit: Int) async throws -> [ConsoleUser]
    /// The application's newest operations, of one user and in one status when given, older than `before` (the last
    /// one of the previous page) when given.
    func recentOperations(
        applicationId: String, userId: String?, status: OperationStatus?, before: OperationCursor?, limit: Int
    ) async throws -> [OperationRecord]
}
