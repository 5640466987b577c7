import AssentModel

/// The limits the server enforces on activations, with the protocol's defaults.
public struct SecurityPolicy: Sendable, Equatable {
    /// How far ahead of the stored counter a signature is accepted (default 20).
    public var counterLookAhead: Int = 20
    /// How many counter values behind the stored one the server remembers (default 20). A signature valid for one
    /// of them is a replay of a used signature: refused, but not counted as a failed attempt, so that copies of a
    /// captured signature cannot block the activation.
    public var replayMemory: Int = 20
    /// Failed signature attempts that block an activation (default 5).
    public var maxFailedAttempts: Int = 5
    /// How long an activation code stays valid, in seconds (default 5 minutes).
    public var activationCodeLifetime: Int = 300
    /// How long a temporary encryption key stays valid, in seconds (default 5 minutes).
    public var temporaryKeyLifetime: Int = 300
    /// How far a request timestamp (encrypted requests, MAC tokens) may be from the server's clock, in seconds.
    public var timestampTolerance: Int = 300

    /// How long an operation stays approvable unless its creator says otherwise, in seconds (default 5 minutes).
    public var operationLifetime: Int = 300
    /// Failed approval attempts that fail an operation unless its creator says otherwise (default 5).
    public var operationMaxFailedAttempts: Int = 5
    /// How long finished operations are kept after their creation, in seconds; `nil` (the default): kept for ever.
    /// On PostgreSQL a month's partition goes once its whole month is past this, so rows stay up to a month longer.
    public var operationRetention: Int? = nil

    /// The PIN rules devices check before they use a PIN (the PIN never reaches the server; devices read these from
    /// `GET /api/device/configuration`). Four to sixteen digits by default.
    public var pinMinimumLength: Int = 4
    public var pinMaximumLength: Int = 16
    /// Whether a PIN may contain any characters, not only digits.
    public var pinAlphanumeric = false
    /// Whether signatures with the biometry factor are accepted (default yes). When off, devices are told so and
    /// a biometry signature is refused with 401 before it is verified (it does not count as a failed attempt).
    public var biometryEnabled = true
    /// The oldest a PIN may be, in seconds, before the device must change it to approve operations (seed 003's
    /// password expiry); `nil`: PINs never expire. A PIN's age counts from the activation or its last reported change.
    public var maximumPINAge: Int? = nil

    /// The protocol's defaults.
    public static let `default` = SecurityPolicy()

    /// Creates the default policy.
    public init() {}

    /// Throws unless every value is in range (the one-byte fields of the status blob bound two of them).
    public func validate() throws {
        guard (1...255).contains(counterLookAhead) else {
            throw AssentServerError.configuration("The counter look-ahead must be 1 to 255.")
        }
        guard (0...255).contains(replayMemory) else {
            throw AssentServerError.configuration("The replay memory must be 0 to 255 counter values.")
        }
        guard (1...255).contains(maxFailedAttempts) else {
            throw AssentServerError.configuration("The maximum of failed attempts must be 1 to 255.")
        }
        guard (1...100).contains(operationMaxFailedAttempts) else {
            throw AssentServerError.configuration("The maximum of failed operation approvals must be 1 to 100.")
        }
        guard pinMinimumLength >= 4, pinMaximumLength <= 64, pinMinimumLength <= pinMaximumLength else {
            throw AssentServerError.configuration("PIN lengths must satisfy 4 <= minimum <= maximum <= 64.")
        }
        if let operationRetention, !(86_400...36_500 * 86_400).contains(operationRetention) {
            throw AssentServerError.configuration(
                "The operation retention must be 1 to 36500 days (an operation stays approvable up to a day).")
        }
        if let maximumPINAge, maximumPINAge <= 0 {
            throw AssentServerError.configuration("The maximum PIN age must be positive.")
        }
        guard activationCodeLifetime > 0, temporaryKeyLifetime > 0, timestampTolerance > 0, operationLifetime > 0 else {
            throw AssentServerError.configuration("Lifetimes and tolerances must be positive.")
        }
    }

    /// What devices are told before they activate.
    public var deviceConfiguration: DeviceConfiguration {
        DeviceConfiguration(
            activationCode: .powerAuth,
            pin: DeviceConfiguration.PINFormat(
                type: pinAlphanumeric
                    ? DeviceConfiguration.PINFormat.alphanumeric : DeviceConfiguration.PINFormat.numeric,
                minLength: pinMinimumLength, maxLength: pinMaximumLength),
            methods: biometryEnabled ? [.device, .pin, .biometry] : [.device, .pin],
            maxFailedAttempts: maxFailedAttempts)
    }
}
