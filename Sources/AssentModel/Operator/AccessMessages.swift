/// `POST /api/v1/access/start` and `/api/v1/access/finish`: a host (`assent pam`) asks for the second factor of a
/// person it signed in with a first factor of its own.
public struct HostAccessRequest: Codable, Sendable, Equatable {
    /// The account's user id (PAM's user).
    public var userId: String
    /// The host, as the phone shows it ("SSH db-1").
    public var host: String?
    /// The address the person connects from (`PAM_RHOST`).
    public var clientAddress: String?
    /// With finish: the start's `state`, and what the person typed at the prompt (a code, or nothing after approving).
    public var state: String?
    public var typed: String?

    public init(
        userId: String, host: String? = nil, clientAddress: String? = nil, state: String? = nil, typed: String? = nil
    ) {
        self.userId = userId
        self.host = host
        self.clientAddress = clientAddress
        self.state = state
        self.typed = typed
    }
}

/// The answer: `ACCEPT`, `REJECT`, or (from start) `CHALLENGE` with the sentence to show before the prompt and the
/// `state` finish takes back.
public struct HostAccessResponse: Codable, Sendable, Equatable {
    public var decision: String
    public var message: String
    public var state: String?

    public init(decision: String, message: String, state: String? = nil) {
        self.decision = decision
        self.message = message
        self.state = state
    }
}
