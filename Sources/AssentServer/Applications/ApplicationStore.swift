import AssentCrypto
import AssentModel
import Foundation

/// Applications: their keys and names.
public protocol ApplicationStore: Sendable {
    func insertApplication(_ application: ApplicationRecord) async throws
    func applications() async throws -> [ApplicationRecord]
    func application(id: String) async throws -> ApplicationRecord?
    func application(key: String) async throws -> ApplicationRecord?
    /// Sets the application's display name; returns whether the application exists.
    func renameApplication(id: String, name: String) async throws -> Bool
}
