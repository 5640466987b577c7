import AssentCrypto
import AssentModel
import Foundation
import HTTPTypes
import Hummingbird

/// The sessions of the web pages: a random value in a `__Host-` cookie (Secure, HttpOnly, SameSite, path `/`, no
/// domain), of which the database keeps only the SHA-256; the page flow's state sealed in the row; and a
/// per-session token every form carries back (CSRF protection that does not depend on SameSite).
struct WebSessions<State: Codable & Sendable>: Sendable {
    /// The part of the store this sees.
    let store: any WebStore
    let clock: WallClock
    /// The cookie's name (with the `__Host-` prefix browsers enforce).
    let cookieName: String
    /// The `kind` column of this session type's rows.
    let kind: String
    /// How long a session lives after its latest change, unless a save says otherwise.
    let lifetime: Int
    /// The cookie's `SameSite`: `Strict` (the console: no other site can lead a browser into it with its session),
    /// or `Lax` (the hosted login: a relying party sends the browser to the authorization endpoint, and the
    /// single-sign-on session must come along on that top-level GET; cross-site POSTs still go without it).
    var sameSite = "Strict"
    /// The cookie's `Max-Age` (the row's expiry, renewed on every save, is what ends a session).
    var cookieLifetime: Int?
    /// The most a session lives from its creation, however active (`nil`: no limit but the cookie's).
    var maxLifetime: Int?
    /// Whose sign-in a state holds (`applicationId:userId`), kept beside it so that a person's sessions can be ended
    /// together (``GrantRevocation``).
    var owner: @Sendable (State) -> String? = { _ in nil }

    /// One session: its state and the token its forms carry.
    struct Session: Sendable {
        var idHash: Data
        var csrfToken: String
        var state: State
        var expiresAt: Millis
        var createdAt: Millis
    }

    /// The request's session of this kind, if its cookie names one that has not expired.
    func load(_ request: Request) async throws -> Session? {
        guard let value = request.cookies[cookieName]?.value, (20...100).contains(value.utf8.count) else {
            return nil
        }
        let idHash = TFATokens.hash(value)
        guard let record = try await store.webSession(idHash: idHash, at: clock.millis),
            record.kind == kind
        else { return nil }
        guard let state = try? JSONDecoder().decode(State.self, from: record.state) else { return nil }
        if let maxLifetime, clock.millis >= record.createdAt + Millis(maxLifetime) * 1000 { return nil }
        return Session(
            idHash: idHash, csrfToken: record.csrfToken, state: state, expiresAt: record.expiresAt,
            createdAt: record.createdAt)
    }

    /// A new session holding `state`, and the `Set-Cookie` value that hands it to the browser.
    func create(_ state: State, lifetime: Int? = nil) async throws -> (Session, cookie: String) {
        let value = Base64URL.encode(Bytes.random(count: 32))
        let idHash = TFATokens.hash(value)
        let now = clock.millis
        let session = Session(
            idHash: idHash, csrfToken: Base64URL.encode(Bytes.random(count: 24)), state: state,
            expiresAt: expiry(now: now, createdAt: now, lifetime: lifetime), createdAt: now)
        try await store.insertWebSession(
            WebSessionRecord(
                idHash: idHash, kind: kind, csrfToken: session.csrfToken, state: try JSONEncoder().encode(state),
                createdAt: now, expiresAt: session.expiresAt, owner: owner(state)))
        return (session, hostCookie(cookieName, value, maxAge: cookieLifetime ?? self.lifetime, sameSite: sameSite))
    }

    /// Stores the session's state and extends its life (by `lifetime` seconds, else the kind's); `false` when it
    /// ended meanwhile.
    func save(_ session: inout Session, lifetime: Int? = nil) async throws -> Bool {
        session.expiresAt = expiry(now: clock.millis, createdAt: session.createdAt, lifetime: lifetime)
        return try await store.updateWebSession(
            idHash: session.idHash, state: try JSONEncoder().encode(session.state), expiresAt: session.expiresAt,
            owner: owner(session.state))
    }

    /// Extends the session's life by the kind's `lifetime` from now, as a person's visit does, without writing its
    /// state (a visit that only reads must not overwrite what an action saved meanwhile). Written only when it gains
    /// at least a minute, so that a busy person's every page is not a write.
    func touch(_ session: inout Session) async throws {
        let extended = expiry(now: clock.millis, createdAt: session.createdAt, lifetime: nil)
        guard extended - session.expiresAt >= 60_000 else { return }
        try await store.extendWebSession(idHash: session.idHash, expiresAt: extended)
        session.expiresAt = extended
    }

    /// When a session changed `now` expires: `lifetime` (else the kind's) from now, and never past its maximum.
    private func expiry(now: Millis, createdAt: Millis, lifetime: Int?) -> Millis {
        let idle = now + Millis(lifetime ?? self.lifetime) * 1000
        guard let maxLifetime else { return idle }
        return min(idle, createdAt + Millis(maxLifetime) * 1000)
    }

    /// Ends the session; the returned `Set-Cookie` value removes the cookie.
    func end(_ session: Session) async throws -> String {
        try await store.deleteWebSession(idHash: session.idHash)
        return hostCookie(cookieName, "", maxAge: 0, sameSite: sameSite)
    }

    /// Whether a form's `csrf` field is the session's token (compared in constant time).
    static func validToken(_ form: [String: String], _ session: Session) -> Bool {
        guard let sent = form["csrf"] else { return false }
        return Bytes.constantTimeEqual(Data(sent.utf8), Data(session.csrfToken.utf8))
    }

}

/// A `Set-Cookie` value that only this origin's pages see: never sent to scripts, to other sites' requests or over
/// plain HTTP (browsers treat loopback addresses as secure, so local use works without TLS).
func hostCookie(_ name: String, _ value: String, maxAge: Int, sameSite: String = "Strict") -> String {
    "\(name)=\(value); Path=/; Max-Age=\(maxAge); Secure; HttpOnly; SameSite=\(sameSite)"
}

/// The CSRF token of a sign-in form shown before any session exists (double submit): a random value in a `__Host-`
/// cookie that the form carries back, so nothing is stored for a visitor who never signs in.
struct SignInFormToken: Sendable {
    /// The cookie's name.
    let cookie: String
    /// How long the cookie lives, in seconds.
    let lifetime: Int

    /// The token for a new form — the one the browser holds already, or a new one — and the `Set-Cookie` header.
    func issue(_ request: Request) -> (token: String, header: HTTPField) {
        var token = Base64URL.encode(Bytes.random(count: 24))
        if let kept = request.cookies[cookie]?.value, (20...64).contains(kept.utf8.count) { token = kept }
        return (token, HTTPField(name: .setCookie, value: hostCookie(cookie, token, maxAge: lifetime)))
    }

    /// Whether the form carries the value of its cookie (compared in constant time).
    func matches(_ form: [String: String], _ request: Request) -> Bool {
        guard let sent = form["csrf"], let expected = request.cookies[cookie]?.value else { return false }
        return Bytes.constantTimeEqual(Data(sent.utf8), Data(expected.utf8))
    }

    /// The `Set-Cookie` value that removes the cookie (once a session exists).
    var removal: String { hostCookie(cookie, "", maxAge: 0) }
}

/// Reading an HTML form's body.
enum WebForm {
    /// The largest form a page accepts (16 KiB).
    static let maxSize = 16 << 10

    /// The fields of an `application/x-www-form-urlencoded` body, or `nil` when the body is not one.
    static func read(_ request: Request) async throws -> [String: String]? {
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else {
            return nil
        }
        let body = Data(try await request.body.collect(upTo: maxSize).readableBytesView)
        return try? FormEncoding.decode(body)
    }
}
