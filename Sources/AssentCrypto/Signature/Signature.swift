import Crypto
import Foundation

/// Computing and validating PowerAuth multi-factor signatures.
public enum PowerAuthSignature {
    /// The secret used in place of the application secret for offline signatures.
    public static let offlineSecret = "offline"

    /// Builds the data to sign: `METHOD & B64(uriId) & B64(nonce) & B64(body) & secret`.
    ///
    /// - Parameters:
    ///   - method: the HTTP method, e.g. `POST`.
    ///   - uriId: the URI identifier the endpoint signs, e.g. `/pa/signature/validate`.
    ///   - nonce: the 16-byte request nonce.
    ///   - body: the exact request body bytes.
    ///   - applicationSecret: the application secret's Base64 text, or ``offlineSecret``.
    public static func dataToSign(
        method: String,
        uriId: String,
        nonce: Data,
        body: Data,
        applicationSecret: String
    ) -> Data {
        let parts = [
            method.uppercased(),
            Data(uriId.utf8).base64EncodedString(),
            nonce.base64EncodedString(),
            body.base64EncodedString(),
            applicationSecret,
        ]
        return Data(parts.joined(separator: "&").utf8)
    }

    /// Computes the signature of `data` at `counter` with the factor `keys` (in protocol order).
    public static func compute(
        data: Data,
        counter: HashCounter,
        keys: [Data],
        format: SignatureFormat
    ) throws -> String {
        let components = try components(data: data, counter: counter, keys: keys)
        return try encode(components, format: format)
    }

    /// Validates `signature` against counters from `counter` up to `lookAhead` steps ahead.
    ///
    /// Each candidate is compared in constant time, so a forger learns nothing from how long a comparison takes.
    /// The scan stops at the first match: the offset it reveals is the device's counter position, which is no
    /// secret. Returns the match, whose ``SignatureMatch/nextCounter`` must be persisted so the same counter is
    /// never accepted again, or `nil` when no counter in the window produces the signature.
    public static func validate(
        _ signature: String,
        data: Data,
        counter: HashCounter,
        keys: [Data],
        format: SignatureFormat,
        lookAhead: Int
    ) throws -> SignatureMatch? {
        let expectedBytes = Data(signature.utf8)
        var candidate = counter
        for offset in 0..<max(1, lookAhead) {
            let computed = Data(try compute(data: data, counter: candidate, keys: keys, format: format).utf8)
            let next = candidate.next()
            if Bytes.constantTimeEqual(computed, expectedBytes) {
                return SignatureMatch(offset: offset, nextCounter: next)
            }
            candidate = next
        }
        return nil
    }

    /// The full 32-byte HMAC component of every factor.
    static func components(data: Data, counter: HashCounter, keys: [Data]) throws -> [Data] {
        guard (1...3).contains(keys.count) else {
            throw AssentCryptoError(.invalidSignatureType, "A signature uses one to three factor keys.")
        }
        for key in keys {
            try Bytes.requireLength(key, 16, "Signature factor key")
        }
        let ctr = counter.data
        return keys.indices.map { index in
            var derived = HMACSHA256.mac(key: keys[index], data: ctr)
            for inner in 0..<index {
                let innerKey = HMACSHA256.mac(key: keys[inner + 1], data: ctr)
                derived = HMACSHA256.mac(key: innerKey, data: derived)
            }
            return HMACSHA256.mac(key: derived, data: data)
        }
    }

    static func encode(_ components: [Data], format: SignatureFormat) throws -> String {
        switch format {
        case .base64:
            var joined = Data()
            for component in components {
                joined.append(component.suffix(16))
            }
            return joined.base64EncodedString()
        case .decimal(let length):
            guard (4...8).contains(length) else {
                throw AssentCryptoError(.invalidLength, "Decimal signature components have 4 to 8 digits.")
            }
            return components.map { decimalize($0, digits: length) }.joined(separator: "-")
        }
    }

    /// The last four bytes of `bytes`, big-endian, masked to 31 bits, modulo `10^digits`, zero-padded.
    static func decimalize(_ bytes: Data, digits: Int) -> String {
        let tail = Array(bytes.suffix(4))
        let number =
            (UInt32(tail[0]) << 24 | UInt32(tail[1]) << 16 | UInt32(tail[2]) << 8 | UInt32(tail[3]))
            & 0x7FFF_FFFF
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let text = String(number % modulus)
        return String(repeating: "0", count: digits - text.count) + text
    }
}

/// Where in the look-ahead window a signature matched.
public struct SignatureMatch: Sendable, Equatable {
    /// How many steps past the stored counter the device was (0 = in sync).
    public var offset: Int
    /// The counter to store: one past the one that matched.
    public var nextCounter: HashCounter

    /// Creates a match.
    public init(offset: Int, nextCounter: HashCounter) {
        self.offset = offset
        self.nextCounter = nextCounter
    }
}
