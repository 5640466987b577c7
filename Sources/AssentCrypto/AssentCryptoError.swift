/// An error thrown by every failing operation of ``AssentCrypto``.
///
/// The ``code`` is opaque and compares by identity, so new codes can be added without breaking
/// callers that switch over the ones they know. ``message`` is a sentence for people; it never
/// contains key material, signatures or codes.
public struct AssentCryptoError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable machine-readable value.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Sendable {
            case invalidEncoding
            case invalidLength
            case invalidKey
            case invalidActivationCode
            case invalidSignature
            case invalidSignatureType
            case invalidHeader
            case authenticationFailed
            case decryptionFailed
            case invalidStatusBlob
            case counterNotFound
            case invalidOTPParameters
            case invalidKeyURI
            case cryptoFailure
        }

        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// Input text is not valid Base64, Base32 or decimal where one was required.
        public static let invalidEncoding = Code(.invalidEncoding)
        /// A key, nonce, counter or other fixed-size value has the wrong length.
        public static let invalidLength = Code(.invalidLength)
        /// A public or private key is not a valid P-256 key.
        public static let invalidKey = Code(.invalidKey)
        /// An activation code has the wrong shape, alphabet or checksum.
        public static let invalidActivationCode = Code(.invalidActivationCode)
        /// A signature is malformed or does not verify.
        public static let invalidSignature = Code(.invalidSignature)
        /// A signature type is unknown or not allowed here.
        public static let invalidSignatureType = Code(.invalidSignatureType)
        /// An `X-PowerAuth-*` header is malformed.
        public static let invalidHeader = Code(.invalidHeader)
        /// A MAC or digest did not match: the data was tampered with or the key is wrong.
        public static let authenticationFailed = Code(.authenticationFailed)
        /// Ciphertext could not be decrypted (bad length or padding).
        public static let decryptionFailed = Code(.decryptionFailed)
        /// An activation status blob is malformed.
        public static let invalidStatusBlob = Code(.invalidStatusBlob)
        /// The counter could not be resynchronised within the look-ahead window.
        public static let counterNotFound = Code(.counterNotFound)
        /// OTP parameters (digits, period, algorithm, secret) are out of range.
        public static let invalidOTPParameters = Code(.invalidOTPParameters)
        /// An `otpauth://` key URI is malformed.
        public static let invalidKeyURI = Code(.invalidKeyURI)
        /// The underlying crypto library reported a failure.
        public static let cryptoFailure = Code(.cryptoFailure)

        /// The code's stable name, e.g. `invalidEncoding`.
        public var description: String { value.rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// A sentence describing the failure, safe to log.
    public var message: String
    /// The error reported by the underlying library, if any.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String { "AssentCryptoError.\(code): \(message)" }
}

extension AssentCryptoError {
    /// Runs a swift-crypto call and wraps any failure it throws.
    static func wrapping<T>(_ what: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as AssentCryptoError {
            throw error
        } catch {
            throw AssentCryptoError(.cryptoFailure, "\(what) failed.", underlying: error)
        }
    }
}
