import Crypto
import Foundation

/// The hash function of an HOTP/TOTP generator.
public enum OTPAlgorithm: String, Sendable, CaseIterable, Codable {
    case sha1 = "SHA1"
    case sha256 = "SHA256"
    case sha512 = "SHA512"

    func mac(key: Data, message: Data) -> Data {
        let symmetricKey = SymmetricKey(data: key)
        switch self {
        case .sha1: return Data(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: symmetricKey))
        case .sha256: return Data(HMAC<SHA256>.authenticationCode(for: message, using: symmetricKey))
        case .sha512: return Data(HMAC<SHA512>.authenticationCode(for: message, using: symmetricKey))
        }
    }
}

/// HOTP (RFC 4226) with the digit count and hash function of RFC 6238.
public struct HOTP: Sendable, Equatable {
    /// The shared secret.
    public let secret: Data
    /// Code length, 6 to 8.
    public let digits: Int
    /// The HMAC hash function.
    public let algorithm: OTPAlgorithm

    /// Creates a generator; the secret must be at least 10 bytes (80 bits) and at most 128 bytes.
    public init(secret: Data, digits: Int = 6, algorithm: OTPAlgorithm = .sha1) throws {
        guard (6...8).contains(digits) else {
            throw AssentCryptoError(.invalidOTPParameters, "OTP codes have 6 to 8 digits.")
        }
        guard (10...128).contains(secret.count) else {
            throw AssentCryptoError(.invalidOTPParameters, "An OTP secret has 10 to 128 bytes.")
        }
        self.secret = secret
        self.digits = digits
        self.algorithm = algorithm
    }

    /// The code for `counter`.
    public func code(counter: UInt64) -> String {
        let mac = Array(algorithm.mac(key: secret, message: Bytes.bigEndian(counter)))
        let offset = Int(mac[mac.count - 1] & 0x0F)
        let binary =
            (UInt32(mac[offset]) & 0x7F) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8
            | UInt32(mac[offset + 3])
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let text = String(binary % modulus)
        return String(repeating: "0", count: digits - text.count) + text
    }

    /// The first counter in `counter...counter + lookAhead` whose code equals `code`, compared in constant time.
    public func validate(_ code: String, counter: UInt64, lookAhead: Int = 0) -> UInt64? {
        var match: UInt64?
        for step in 0...UInt64(max(0, lookAhead)) {
            let candidate = counter &+ step
            if Bytes.constantTimeEqual(Data(self.code(counter: candidate).utf8), Data(code.utf8)), match == nil {
                match = candidate
            }
        }
        return match
    }
}

/// TOTP (RFC 6238): HOTP over the number of periods since the Unix epoch.
public struct TOTP: Sendable, Equatable {
    /// The underlying HOTP generator.
    public let hotp: HOTP
    /// The period in seconds (default 30).
    public let period: Int

    /// Creates a generator.
    public init(secret: Data, digits: Int = 6, algorithm: OTPAlgorithm = .sha1, period: Int = 30) throws {
        guard (1...3600).contains(period) else {
            throw AssentCryptoError(.invalidOTPParameters, "A TOTP period is 1 to 3600 seconds.")
        }
        self.hotp = try HOTP(secret: secret, digits: digits, algorithm: algorithm)
        self.period = period
    }

    /// The time step containing `unixTime` seconds.
    public func timeStep(at unixTime: UInt64) -> UInt64 { unixTime / UInt64(period) }

    /// The code valid at `unixTime` seconds since 1970.
    public func code(at unixTime: UInt64) -> String { hotp.code(counter: timeStep(at: unixTime)) }

    /// The code valid at `date`.
    public func code(at date: Date) -> String { code(at: Self.unixTime(date)) }

    /// The time step whose code equals `code`, searching `past` steps back and `future` steps ahead of the step
    /// at `unixTime`; `nil` when none matches. Servers store the returned step and reject it and any earlier
    /// step next time, so a code is never accepted twice.
    public func validate(_ code: String, at unixTime: UInt64, past: Int = 1, future: Int = 1) -> UInt64? {
        let current = timeStep(at: unixTime)
        let first = current >= UInt64(max(0, past)) ? current - UInt64(max(0, past)) : 0
        return hotp.validate(code, counter: first, lookAhead: Int(current - first) + max(0, future))
    }

    /// Seconds since 1970 of `date`, clamped at zero.
    static func unixTime(_ date: Date) -> UInt64 {
        UInt64(max(0, date.timeIntervalSince1970))
    }
}
