import AssentCrypto
import AssentModel
import Foundation
import Synchronization

/// Applications: creation, look-up, and the SDK configuration string apps are configured with.
public struct ApplicationService: Sendable {
    /// The part of the store this sees.
    let store: any ApplicationStore & ApplicationVersionStore
    let clock: WallClock
    let audit: Auditor
    /// Applications read so far.
    let cache: ApplicationCache
    let versions: ApplicationVersionService

    /// Creates an application an operator named (1 to 100 characters, not only spaces, unique among the
    /// applications): its own master key pair, key and secret (its version `1`).
    public func create(named name: String, actor: String) async throws -> ApplicationRecord {
        guard let trimmed = InputText.displayName(name) else {
            throw AssentServerError.invalidRequest("An application name has 1 to 100 characters, not only spaces.")
        }
        guard try await !store.applications().contains(where: { $0.name == trimmed }) else {
            throw AssentServerError(.conflict, "An application is already named \(trimmed).", status: 409)
        }
        return try await create(name: trimmed, actor: actor)
    }

    /// Creates an application with fresh keys.
    public func create(name: String, actor: String = "system") async throws -> ApplicationRecord {
        let application = ApplicationRecord(
            id: UUID().uuidString.lowercased(),
            name: name,
            applicationKey: Bytes.random(count: 16).base64EncodedString(),
            applicationSecret: Bytes.random(count: 16).base64EncodedString(),
            masterPrivateKey: ECPrivateKey(),
            createdAt: clock.millis
        )
        try await store.insertApplication(application)
        try await versions.ensureInitial(application)
        await audit(
            .applicationCreated, application: application.id, actor: actor,
            "Application \(name) (\(application.id)) created.")
        return application
    }

    /// The first application, created as `name` (what its pages, push requests and authenticator entries show
    /// until an operator renames it) when there is none. Returns whether it was created now.
    public func ensureDefault(named name: String) async throws -> (ApplicationRecord, created: Bool) {
        if let existing = try await store.applications().first { return (existing, false) }
        return (try await create(name: InputText.displayName(name) ?? "Assent"), true)
    }

    /// The first application, the one the operator API works with. Kept per process for a while once read (see
    /// ``ApplicationCache``).
    func defaultApplication() async throws -> ApplicationRecord {
        let now = ContinuousClock.now
        if let cached = cache.withLock({ $0.first?.fresh(at: now)?.application }) { return cached }
        guard let application = try await store.applications().first else {
            throw AssentServerError.internalError("The server has no application.")
        }
        cache.withLock { $0.first = .init(application, readAt: now) }
        return application
    }

    /// The application of the version with `key`, carrying that version's key and secret (what the device signs
    /// and encrypts with). Kept per process for a while once read (an unknown key is never kept).
    /// - Throws: an authentication failure for an unknown key, `APPLICATION_VERSION_UNSUPPORTED` for a version no
    ///   longer supported.
    func application(key: String) async throws -> ApplicationRecord {
        let now = ContinuousClock.now
        if let cached = cache.withLock({ $0.byKey[key]?.fresh(at: now) }) {
            guard cached.supported else { throw AssentServerError.applicationVersionUnsupported() }
            return cached.application
        }
        let resolved: (application: ApplicationRecord, supported: Bool)
        if let version = try await store.applicationVersion(key: key),
            var application = try await store.application(id: version.applicationId)
        {
            application.applicationKey = version.applicationKey
            application.applicationSecret = version.applicationSecret
            resolved = (application, version.supported)
        } else if let application = try await store.application(key: key) {
            resolved = (application, true)
        } else {
            throw AssentServerError.authenticationFailed("Unknown application key.")
        }
        cache.withLock {
            $0.byKey[key] = .init(resolved.application, readAt: now, supported: resolved.supported)
        }
        guard resolved.supported else { throw AssentServerError.applicationVersionUnsupported() }
        return resolved.application
    }

    /// Every application, oldest first.
    func all() async throws -> [ApplicationRecord] { try await store.applications() }

    /// The application with `id`, if there is one.
    func application(id: String) async throws -> ApplicationRecord? {
        try await store.application(id: id)
    }

    /// Sets the display name people see for `id` — on the pages, in the phone's sign-in requests, as the
    /// authenticator app's issuer: 1 to 100 characters, not only spaces.
    public func rename(id: String, to name: String, actor: String) async throws -> ApplicationRecord {
        guard let trimmed = InputText.displayName(name) else {
            throw AssentServerError.invalidRequest("An application name has 1 to 100 characters, not only spaces.")
        }
        guard try await store.renameApplication(id: id, name: trimmed),
            let renamed = try await store.application(id: id)
        else { throw AssentServerError.notFound("No application has this id.") }
        // This process shows the new name at once; others within the cache's lifetime.
        cache.withLock { $0 = .init() }
        await audit(
            .applicationRenamed, application: id, actor: actor, "Application \(id) is now named \(trimmed).")
        return renamed
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

/// Applications read by this process, by key and the first one. Their keys never change, but their display name
/// and a version's support can: an entry is used for 30 seconds after it was read, so a name another process set shows everywhere within
/// half a minute, at the cost of one read per application and half minute.
final class ApplicationCache: Sendable {
    struct Entry {
        var application: ApplicationRecord
        var readAt: ContinuousClock.Instant
        /// Whether the version of the key is supported (always for the first application's entry).
        var supported: Bool

        init(_ application: ApplicationRecord, readAt: ContinuousClock.Instant, supported: Bool = true) {
            self.application = application
            self.readAt = readAt
            self.supported = supported
        }

        /// The entry while it is fresh at `now`.
        func fresh(at now: ContinuousClock.Instant) -> Entry? {
            now - readAt < .seconds(30) ? self : nil
        }
    }

    struct Entries {
        var byKey: [String: Entry] = [:]
        /// The first application (the operator API's).
        var first: Entry?
        /// Whether some application has a setting of its own, and when that was read.
        var presence: [Setting: (present: Bool, readAt: ContinuousClock.Instant)] = [:]
    }

    /// Settings an application may have of its own, which decide whether a server process delivers a channel.
    enum Setting: Sendable {
        case pushCredentials
        case webhook
    }
    private let storage = Mutex(Entries())

    func withLock<T: Sendable>(_ body: (inout Entries) -> T) -> T {
        storage.withLock { body(&$0) }
    }

    /// Whether some application has `setting` of its own, as `read` from the store; kept for 5 seconds.
    func presence(_ setting: Setting, read: () async throws -> Bool) async throws -> Bool {
        let now = ContinuousClock.now
        if let (present, readAt) = storage.withLock({ $0.presence[setting] }), now - readAt < .seconds(5) {
            return present
        }
        let present = try await read()
        storage.withLock { $0.presence[setting] = (present, now) }
        return present
    }

    /// Forgets what ``presence(_:read:)`` kept: this process changed the setting.
    func forget(_ setting: Setting) { storage.withLock { $0.presence[setting] = nil } }
}
