/// The limits the server enforces on activations, with the protocol's defaults.
public struct SecurityPolicy: Sendable, Equatable {
    /// How far ahead of the stored counter a signature is accepted (default 20).
    public var counterLookAhead: Int
    /// Failed signature attempts that block an activation (default 5).
    public var maxFailedAttempts: Int
    /// How long an activation code stays valid, in seconds (default 5 minutes).
    public var activationCodeLifetime: Int

    /// The protocol's defaults.
    public static let `default` = SecurityPolicy(
        counterLookAhead: 20, maxFailedAttempts: 5, activationCodeLifetime: 300)

    /// Creates a policy; every value must fit the one-byte fields of the status blob and be positive.
    public init(counterLookAhead: Int, maxFailedAttempts: Int, activationCodeLifetime: Int) {
        precondition((1...255).contains(counterLookAhead), "The counter look-ahead is 1 to 255.")
        precondition((1...255).contains(maxFailedAttempts), "The failed-attempt limit is 1 to 255.")
        precondition(activationCodeLifetime > 0, "The activation code lifetime is positive.")
        self.counterLookAhead = counterLookAhead
        self.maxFailedAttempts = maxFailedAttempts
        self.activationCodeLifetime = activationCodeLifetime
    }
}
