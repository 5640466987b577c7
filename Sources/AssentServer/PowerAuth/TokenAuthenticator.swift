import AssentCrypto
import Foundation
import Synchronization

/// Verifies `X-PowerAuth-Token` MAC-token headers: known token, digest, fresh timestamp, unused nonce, and an
/// activation that is still `ACTIVE`.
///
/// A token verified once is kept in memory (its secret and its activation's identity, which never change): later
/// uses check the digest against it and record the nonce in one statement that also requires the token to still
/// exist and its activation to be `ACTIVE` — removing a token or blocking an activation refuses its next use in every
/// process, and a list or a detail costs one statement less.
public struct TokenAuthenticator: Sendable {
    /// The part of the store this sees.
    let store: any ActivationStore & ReplayGuard
    let clock: WallClock
    let policy: SecurityPolicy
    /// Tokens verified in this process, by id.
    let known = KnownTokens()

    /// Returns the token and its activation's identity, or throws `POWERAUTH_AUTH_FAIL`.
    public func authenticate(_ headerValue: String?) async throws -> (TokenRecord, DevicePrincipal) {
        let (token, principal, _) = try await authenticate(headerValue, readingPending: false)
        return (token, principal)
    }

    /// ``authenticate(_:)``, and the user's newest pending operations (up to 100, newest first) read with the
    /// token's use: a device's list in one statement once the token is known.
    public func authenticateReadingPending(_ headerValue: String?) async throws
        -> (TokenRecord, DevicePrincipal, [OperationRecord])
    {
        try await authenticate(headerValue, readingPending: true)
    }

    private func authenticate(_ headerValue: String?, readingPending: Bool) async throws
        -> (TokenRecord, DevicePrincipal, [OperationRecord])
    {
        guard let headerValue else {
            throw AssentServerError.authenticationFailed("The X-PowerAuth-Token header is missing.")
        }
        let header: TokenHeader
        do {
            header = try TokenHeader(parsing: headerValue)
        } catch {
            throw AssentServerError.authenticationFailed("The X-PowerAuth-Token header is malformed.")
        }
        let (token, principal) = try await verified(header)
        let now = clock.millis
        let tolerance = Millis(policy.timestampTolerance) * 1000
        guard header.timestamp <= UInt64(Int64.max), abs(Int64(header.timestamp) - now) <= tolerance else {
            throw AssentServerError.authenticationFailed("The token timestamp is too far from the server time.")
        }
        let (use, pending) = try await store.claimTokenUse(
            tokenId: token.id, nonce: header.nonce.base64EncodedString(), expiresAt: now + 2 * tolerance,
            pendingOf: readingPending ? principal.userId : nil)
        switch use {
        case .claimed:
            return (token, principal, pending)
        case .replayed:
            throw AssentServerError.authenticationFailed("The token nonce was already used (replay).")
        case .refused:
            known[header.tokenId] = nil
            throw try await store.tokenWithActivation(id: token.id) == nil ? Self.unknown : Self.inactive
        }
    }

    /// The token the header names, its digest checked: from memory once verified, else read (and kept if its
    /// activation is `ACTIVE`).
    private func verified(_ header: TokenHeader) async throws -> (TokenRecord, DevicePrincipal) {
        if let entry = known[header.tokenId] {
            guard header.isDigestValid(tokenSecret: entry.0.secret) else { throw Self.unknown }
            return entry
        }
        guard let (token, principal, state) = try await store.tokenWithActivation(id: header.tokenId),
            header.isDigestValid(tokenSecret: token.secret)
        else { throw Self.unknown }
        guard state == .active else { throw Self.inactive }
        known[header.tokenId] = (token, principal)
        return (token, principal)
    }

    static let unknown = AssentServerError.authenticationFailed("The token is unknown or its digest is wrong.")
    static let inactive = AssentServerError.authenticationFailed("The token's activation is not active.")
}

/// The MAC tokens a process verified: their secrets and activations' identities, which never change while a token
/// exists. Bounded: at ``capacity`` entries a new one takes the place of one of the others (a token read again costs
/// one read).
final class KnownTokens: Sendable {
    let capacity: Int
    private let entries = Mutex<[String: (TokenRecord, DevicePrincipal)]>([:])

    init(capacity: Int = 100_000) { self.capacity = max(1, capacity) }

    var count: Int { entries.withLock { $0.count } }

    subscript(id: String) -> (TokenRecord, DevicePrincipal)? {
        get { entries.withLock { $0[id] } }
        set {
            entries.withLock { entries in
                if newValue != nil, entries[id] == nil, entries.count >= capacity {
                    entries.remove(at: entries.startIndex)
                }
                entries[id] = newValue
            }
        }
    }
}
