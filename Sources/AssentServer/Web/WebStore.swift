import AssentCrypto
import Foundation

/// A web page session: found by the hash of its cookie; its state is sealed at rest.
public struct WebSessionRecord: Sendable, Equatable {
    public var idHash: Data
    /// What the session is for (`login`).
    public var kind: String
    /// The value every form of the session carries back (CSRF protection).
    public var csrfToken: String
    /// The page flow's state as JSON (sealed by the store).
    public var state: Data
    public var createdAt: Millis
    public var expiresAt: Millis
    /// Whose sign-in the session holds (`applicationId:userId`), if anyone's.
    public var owner: String?

    public init(
        idHash: Data, kind: String, csrfToken: String, state: Data, createdAt: Millis, expiresAt: Millis,
        owner: String? = nil
    ) {
        self.owner = owner
        self.idHash = idHash
        self.kind = kind
        self.csrfToken = csrfToken
        self.state = state
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// The storage of the web pages' sessions.
public protocol WebStore: Sendable {
    func insertWebSession(_ session: WebSessionRecord) async throws
    /// The session if it exists and has not expired at `now`.
    func webSession(idHash: Data, at now: Millis) async throws -> WebSessionRecord?
    /// Replaces the session's state, expiry and owner; returns whether the session still existed.
    func updateWebSession(idHash: Data, state: Data, expiresAt: Millis, owner: String?) async throws -> Bool
    /// Moves the session's expiry forward to `expiresAt` (never back), its state untouched.
    func extendWebSession(idHash: Data, expiresAt: Millis) async throws
    func deleteWebSession(idHash: Data) async throws
    /// Ends every session holding `owner`'s sign-in but `except`; returns how many.
    func deleteWebSessions(owner: String, except: Data?) async throws -> Int
    /// Deletes sessions that expired before `before`.
    func purgeWebSessions(before: Millis) async throws
}
