import AssentCrypto
import AssentModel
import Foundation

/// Application versions: several key/secret pairs per application, one per app build an operator wants to tell
/// apart, each supported or not. A device whose app uses an unsupported version is refused with
/// `APPLICATION_VERSION_UNSUPPORTED` on every call that names its application key (signatures, encrypted requests,
/// the configuration), until the version is supported again.
public struct ApplicationVersionService: Sendable {
    /// The part of the store this sees.
    let store: any ApplicationStore & ApplicationVersionStore
    let clock: WallClock
    let audit: Auditor
    /// Applications read so far, forgotten when a version changes.
    let cache: ApplicationCache

    /// Makes the application's own key and secret its version `1`, once.
    public func ensureInitial(_ application: ApplicationRecord) async throws {
        try await store.insertApplicationVersion(
            ApplicationVersionRecord(
                id: "\(application.id):1", applicationId: application.id, name: "1",
                applicationKey: application.applicationKey, applicationSecret: application.applicationSecret,
                supported: true, createdAt: application.createdAt))
    }

    /// The application's versions, oldest first.
    /// - Throws: `NOT_FOUND` for an unknown application.
    public func versions(applicationId: String) async throws -> [ApplicationVersionRecord] {
        guard try await store.application(id: applicationId) != nil else {
            throw AssentServerError.notFound("No application has this id.")
        }
        return try await store.applicationVersions(applicationId: applicationId)
    }

    /// A new version with fresh keys, supported.
    /// - Throws: `ERR_REQUEST` for a name that is not 1 to 64 letters, digits, dots, dashes or underscores;
    ///   `ERR_CONFLICT` when the application has a version of that name; `NOT_FOUND` for an unknown application.
    public func create(applicationId: String, name: String, actor: String) async throws -> ApplicationVersionRecord {
        guard (1...64).contains(name.count),
            name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
        else {
            throw AssentServerError.invalidRequest(
                "A version name is 1 to 64 letters, digits, dots, dashes or underscores, e.g. 2026.11.")
        }
        let existing = try await versions(applicationId: applicationId)
        guard !existing.contains(where: { $0.name == name }) else {
            throw AssentServerError(.conflict, "The application has a version named \(name).")
        }
        let version = ApplicationVersionRecord(
            id: UUID().uuidString.lowercased(), applicationId: applicationId, name: name,
            applicationKey: Bytes.random(count: 16).base64EncodedString(),
            applicationSecret: Bytes.random(count: 16).base64EncodedString(), supported: true,
            createdAt: clock.millis)
        try await store.insertApplicationVersion(version)
        await audit(
            .applicationVersionCreated, application: applicationId, actor: actor,
            "Application \(applicationId) has a new version \(name) (\(version.id)).")
        return version
    }

    /// Serves, or stops serving, the version's devices. `reference` is the version's id or its name (unique in the
    /// application; an id wins over a name that happens to be the same text).
    /// - Throws: `NOT_FOUND` for an unknown application or version.
    public func setSupported(applicationId: String, versionId reference: String, supported: Bool, actor: String)
        async throws -> ApplicationVersionRecord
    {
        let known = try await store.applicationVersions(applicationId: applicationId)
        guard
            let named = known.first(where: { $0.id == reference }) ?? known.first(where: { $0.name == reference }),
            try await store.setApplicationVersionSupported(
                id: named.id, applicationId: applicationId, supported: supported),
            let version = try await store.applicationVersions(applicationId: applicationId).first(where: {
                $0.id == named.id
            })
        else { throw AssentServerError.notFound("The application has no version with this id or name.") }
        // This process applies it at once; others within the application cache's half minute.
        cache.withLock { $0 = .init() }
        await audit(
            supported ? .applicationVersionSupported : .applicationVersionUnsupported, application: applicationId,
            actor: actor,
            "Version \(version.name) of application \(applicationId) is \(supported ? "" : "no longer ")supported.")
        return version
    }

    /// The SDK configuration string of a version: its key and secret with the application's master public key.
    public static func sdkConfiguration(of version: ApplicationVersionRecord, application: ApplicationRecord) throws
        -> String
    {
        var built = application
        built.applicationKey = version.applicationKey
        built.applicationSecret = version.applicationSecret
        return try ApplicationService.sdkConfiguration(of: built)
    }
}
