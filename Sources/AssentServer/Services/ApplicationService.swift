import AssentCrypto
import AssentModel
import Foundation
import Synchronization

/// Applications: creation, look-up, and the SDK configuration string apps are configured with.
public struct ApplicationService: Sendable {
    let environment: ServerEnvironment

    public init(environment: ServerEnvironment) { self.environment = environment }

    /// Creates an application with fresh keys.
    public func create(name: String) async throws -> ApplicationRecord {
        let application = ApplicationRecord(
            id: UUID().uuidString.lowercased(),
            name: name,
            applicationKey: Bytes.random(count: 16).base64EncodedString(),
            applicationSecret: Bytes.random(count: 16).base64EncodedString(),
            masterPrivateKey: ECPrivateKey(),
            createdAt: environment.nowMillis
        )
        try await environment.store.insertApplication(application)
        await environment.audit("application.created", actor: "system", "Application \(name) created.")
        return application
    }

    /// The first application, created as `default` when there is none. Returns whether it was created now.
    public func ensureDefault() async throws -> (ApplicationRecord, created: Bool) {
        if let existing = try await environment.store.applications().first { return (existing, false) }
        return (try await create(name: "default"), true)
    }

    /// The first application, the one the operator API works with. Kept per process once read: applications never
    /// change, and the first one is never replaced.
    func defaultApplication() async throws -> ApplicationRecord {
        if let cached = environment.applications.withLock({ $0.first }) { return cached }
        guard let application = try await environment.store.applications().first else {
            throw AssentServerError.internalError("The server has no application.")
        }
        environment.applications.withLock { $0.first = application }
        return application
    }

    /// The application with `key`, or an authentication failure. Applications never change once created, so
    /// each process keeps the ones it has read (and never caches an unknown key).
    func application(key: String) async throws -> ApplicationRecord {
        if let cached = environment.applications.withLock({ $0.byKey[key] }) { return cached }
        guard let application = try await environment.store.application(key: key) else {
            throw AssentServerError.authenticationFailed("Unknown application key.")
        }
        environment.applications.withLock { $0.byKey[key] = application }
        return application
    }

    /// The opaque string that bundles application key, secret and master public key for the SDK.
    public static func sdkConfiguration(of application: ApplicationRecord) throws -> String {
        try SDKConfiguration(
            applicationKey: application.applicationKey,
            applicationSecret: application.applicationSecret,
            masterServerPublicKey: application.masterPublicKey
        ).text
    }
}

/// Applications read once per process, by key and the first one (they are immutable).
final class ApplicationCache: Sendable {
    struct Entries {
        var byKey: [String: ApplicationRecord] = [:]
        /// The first application (the operator API's).
        var first: ApplicationRecord?
    }
    private let storage = Mutex(Entries())

    func withLock<T: Sendable>(_ body: (inout Entries) -> T) -> T {
        storage.withLock { body(&$0) }
    }
}
