import Foundation

/// The lifecycle state of an activation, with the numbers the status blob carries.
public enum ActivationState: UInt8, Sendable, CaseIterable, Codable {
    /// Created by the operator; the device has not used the code yet.
    case created = 1
    /// The device finished its part; the operator must commit.
    case pendingCommit = 2
    /// Usable for signatures.
    case active = 3
    /// Too many failed attempts, or blocked by the operator.
    case blocked = 4
    /// Removed for good.
    case removed = 5

    /// The PowerAuth name, e.g. `PENDING_COMMIT`.
    public var name: String {
        switch self {
        case .created: "CREATED"
        case .pendingCommit: "PENDING_COMMIT"
        case .active: "ACTIVE"
        case .blocked: "BLOCKED"
        case .removed: "REMOVED"
        }
    }
}

/// The 32-byte activation status blob, encrypted under `KEY_TRANSPORT`.
///
/// Layout: `DE C0 DE D1 | status | currentVersion | upgradeVersion | 5 reserved | ctrByte | failedAttempts |
/// maxFailedAttempts | ctrLookAhead | ctrDataHash(16)`.
public struct ActivationStatusBlob: Sendable, Equatable {
    static let magic: [UInt8] = [0xDE, 0xC0, 0xDE, 0xD1]
    /// The length of the blob, plain and encrypted (AES-CBC without padding).
    public static let encryptedLength = 32
    static let ivIndex: UInt64 = 3000
    static let counterHashIndex: UInt64 = 4000

    /// The activation's state.
    public var state: ActivationState
    /// The protocol version the activation currently uses (3 for 3.x).
    public var currentVersion: UInt8
    /// The protocol version the activation may upgrade to.
    public var upgradeVersion: UInt8
    /// The low byte of the server's numeric counter.
    public var counterByte: UInt8
    /// Failed signature attempts so far.
    public var failedAttempts: UInt8
    /// Failed attempts that block the activation.
    public var maxFailedAttempts: UInt8
    /// How far ahead of its counter the server accepts signatures.
    public var counterLookAhead: UInt8
    /// `KDF_INTERNAL(KDF(KEY_TRANSPORT, 4000), ctrData)` of the server's counter.
    public var counterDataHash: Data

    /// Creates a blob from its fields.
    public init(
        state: ActivationState,
        currentVersion: UInt8 = 3,
        upgradeVersion: UInt8 = 3,
        counterByte: UInt8,
        failedAttempts: UInt8,
        maxFailedAttempts: UInt8,
        counterLookAhead: UInt8,
        counterDataHash: Data
    ) {
        self.state = state
        self.currentVersion = currentVersion
        self.upgradeVersion = upgradeVersion
        self.counterByte = counterByte
        self.failedAttempts = failedAttempts
        self.maxFailedAttempts = maxFailedAttempts
        self.counterLookAhead = counterLookAhead
        self.counterDataHash = counterDataHash
    }

    /// Decrypts and parses a blob received from `/pa/v3/activation/status`.
    public init(decrypting encrypted: Data, transportKey: Data, challenge: Data, nonce: Data) throws {
        try Bytes.requireLength(encrypted, Self.encryptedLength, "Encrypted status blob")
        let iv = try Self.iv(transportKey: transportKey, challenge: challenge, nonce: nonce)
        let plain = Array(try AESCBC.decrypt(encrypted, key: transportKey, iv: iv, padding: false))
        guard Array(plain[0..<4]) == Self.magic else {
            throw AssentCryptoError(.invalidStatusBlob, "The status blob does not start with its magic bytes.")
        }
        guard let state = ActivationState(rawValue: plain[4]) else {
            throw AssentCryptoError(.invalidStatusBlob, "The status blob carries an unknown activation state.")
        }
        self.state = state
        currentVersion = plain[5]
        upgradeVersion = plain[6]
        counterByte = plain[12]
        failedAttempts = plain[13]
        maxFailedAttempts = plain[14]
        counterLookAhead = plain[15]
        counterDataHash = Data(plain[16..<32])
    }

    /// Encrypts the blob for a device's `challenge` with a fresh server `nonce` (both 16 bytes).
    ///
    /// The five reserved bytes are random, as in the reference server, so no plaintext block is fixed.
    public func encrypted(transportKey: Data, challenge: Data, nonce: Data) throws -> Data {
        try Bytes.requireLength(counterDataHash, 16, "Counter data hash")
        var plain = Data(Self.magic)
        plain.append(contentsOf: [state.rawValue, currentVersion, upgradeVersion])
        plain.append(Bytes.random(count: 5))
        plain.append(contentsOf: [counterByte, failedAttempts, maxFailedAttempts, counterLookAhead])
        plain.append(counterDataHash)
        let iv = try Self.iv(transportKey: transportKey, challenge: challenge, nonce: nonce)
        return try AESCBC.encrypt(plain, key: transportKey, iv: iv, padding: false)
    }

    /// `IV = KDF_INTERNAL(KDF(KEY_TRANSPORT, 3000), challenge ‖ nonce)`.
    public static func iv(transportKey: Data, challenge: Data, nonce: Data) throws -> Data {
        try Bytes.requireLength(challenge, 16, "Status challenge")
        try Bytes.requireLength(nonce, 16, "Status nonce")
        let ivKey = try KeyDerivation.derive(from: transportKey, index: ivIndex)
        return KeyDerivation.deriveInternal(from: ivKey, index: challenge + nonce)
    }

    /// `ctrDataHash = KDF_INTERNAL(KDF(KEY_TRANSPORT, 4000), ctrData)`.
    public static func counterDataHash(of counter: HashCounter, transportKey: Data) throws -> Data {
        let key = try KeyDerivation.derive(from: transportKey, index: counterHashIndex)
        return KeyDerivation.deriveInternal(from: key, index: counter.data)
    }

    /// How many steps the device's `counter` is behind the server's, found by rolling it forward up to
    /// ``counterLookAhead`` steps until its hash equals ``counterDataHash``.
    ///
    /// - Throws: ``AssentCryptoError/Code/counterNotFound`` when no counter in the window matches.
    public func counterDistance(from counter: HashCounter, transportKey: Data) throws -> Int {
        let key = try KeyDerivation.derive(from: transportKey, index: Self.counterHashIndex)
        var candidate = counter
        for distance in 0...Int(counterLookAhead) {
            if Bytes.constantTimeEqual(KeyDerivation.deriveInternal(from: key, index: candidate.data), counterDataHash)
            {
                return distance
            }
            candidate = candidate.next()
        }
        throw AssentCryptoError(.counterNotFound, "The device counter is too far from the server's to resynchronise.")
    }
}
