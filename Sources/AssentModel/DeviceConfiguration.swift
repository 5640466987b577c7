import Foundation

/// What a device needs to know before it activates, served by `GET /api/device/configuration?applicationKey=…`:
/// the activation code's format (to show the right keyboard), the PIN rules (to check a PIN before it is used)
/// and the authentication methods this server accepts.
public struct DeviceConfiguration: Codable, Sendable, Equatable {
    /// The shape of an activation code.
    public struct ActivationCodeFormat: Codable, Sendable, Equatable {
        /// Characters in the whole code, separators included (23).
        public var length: Int
        /// Groups of characters (4).
        public var groups: Int
        /// Characters per group (5).
        public var groupLength: Int
        /// Between groups (`-`).
        public var separator: String
        /// The characters a group may contain (Base32: `A`–`Z`, `2`–`7`).
        public var alphabet: String
        /// How typing mistakes are caught (`CRC16_ARC` over the decoded bytes).
        public var checksum: String
        /// Whether an activation QR (`CODE#signature`) carries the master key's signature.
        public var signedQR: Bool

        /// The PowerAuth format every Assent server uses.
        public static let powerAuth = ActivationCodeFormat(
            length: 23, groups: 4, groupLength: 5, separator: "-", alphabet: "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
            checksum: "CRC16_ARC", signedQR: true)

        /// Creates the value.
        public init(
            length: Int, groups: Int, groupLength: Int, separator: String, alphabet: String, checksum: String,
            signedQR: Bool
        ) {
            self.length = length
            self.groups = groups
            self.groupLength = groupLength
            self.separator = separator
            self.alphabet = alphabet
            self.checksum = checksum
            self.signedQR = signedQR
        }
    }

    /// The PIN rules.
    public struct PINFormat: Codable, Sendable, Equatable {
        /// `NUMERIC` (digits only) or `ALPHANUMERIC` (any characters).
        public var type: String
        /// The fewest characters.
        public var minLength: Int
        /// The most characters.
        public var maxLength: Int

        /// Digits only.
        public static let numeric = "NUMERIC"
        /// Any characters.
        public static let alphanumeric = "ALPHANUMERIC"

        /// Creates the value.
        public init(type: String, minLength: Int, maxLength: Int) {
            self.type = type
            self.minLength = minLength
            self.maxLength = maxLength
        }
    }

    /// An authentication method a device can activate: `DEVICE` (possession), `PIN` (knowledge), `BIOMETRY`.
    public enum Method: String, Codable, Sendable, CaseIterable {
        case device = "DEVICE"
        case pin = "PIN"
        case biometry = "BIOMETRY"
    }

    /// The activation code's format.
    public var activationCode: ActivationCodeFormat
    /// The PIN rules.
    public var pin: PINFormat
    /// The methods the server accepts; `DEVICE` is always among them.
    public var methods: [Method]
    /// Wrong PINs (or failed biometry) in a row that block an activation.
    public var maxFailedAttempts: Int

    /// Creates the value.
    public init(activationCode: ActivationCodeFormat, pin: PINFormat, methods: [Method], maxFailedAttempts: Int) {
        self.activationCode = activationCode
        self.pin = pin
        self.methods = methods
        self.maxFailedAttempts = maxFailedAttempts
    }
}
