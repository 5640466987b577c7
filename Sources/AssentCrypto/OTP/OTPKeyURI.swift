import Foundation

/// An `otpauth://` key URI, as authenticator apps scan it from a QR code.
///
/// `otpauth://TYPE/ISSUER:ACCOUNT?secret=BASE32&issuer=ISSUER&algorithm=SHA1&digits=6&period=30`
/// (`counter=` instead of `period=` for HOTP).
public struct OTPKeyURI: Sendable, Equatable {
    /// Time- or counter-based.
    public enum Kind: String, Sendable {
        case totp
        case hotp
    }

    /// Time- or counter-based.
    public var kind: Kind
    /// The service name shown in the authenticator.
    public var issuer: String?
    /// The account, e.g. the user's e-mail.
    public var account: String
    /// The shared secret.
    public var secret: Data
    /// The hash function.
    public var algorithm: OTPAlgorithm
    /// Code length.
    public var digits: Int
    /// TOTP period in seconds.
    public var period: Int
    /// HOTP initial counter.
    public var counter: UInt64

    /// Creates a URI from its parts.
    public init(
        kind: Kind = .totp,
        issuer: String?,
        account: String,
        secret: Data,
        algorithm: OTPAlgorithm = .sha1,
        digits: Int = 6,
        period: Int = 30,
        counter: UInt64 = 0
    ) {
        self.kind = kind
        self.issuer = issuer
        self.account = account
        self.secret = secret
        self.algorithm = algorithm
        self.digits = digits
        self.period = period
        self.counter = counter
    }

    /// Parses a key URI; unknown parameters are ignored, known ones are validated.
    public init(parsing text: String) throws {
        guard let components = URLComponents(string: text), components.scheme?.lowercased() == "otpauth" else {
            throw AssentCryptoError(.invalidKeyURI, "A key URI starts with otpauth://.")
        }
        guard let kind = components.host.flatMap({ Kind(rawValue: $0.lowercased()) }) else {
            throw AssentCryptoError(.invalidKeyURI, "A key URI's type is totp or hotp.")
        }
        self.kind = kind
        let label = String(components.path.dropFirst())
        guard !label.isEmpty else {
            throw AssentCryptoError(.invalidKeyURI, "A key URI names an account.")
        }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] {
            guard query.updateValue(item.value ?? "", forKey: item.name.lowercased()) == nil else {
                throw AssentCryptoError(.invalidKeyURI, "The key URI parameter \(item.name) appears twice.")
            }
        }
        if let colon = label.firstIndex(of: ":") {
            let labelIssuer = String(label[..<colon])
            account = String(label[label.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            if let parameter = query["issuer"], parameter != labelIssuer {
                throw AssentCryptoError(.invalidKeyURI, "The key URI's label and issuer parameter disagree.")
            }
            issuer = labelIssuer
        } else {
            // The label is written back as issuer:account, so an issuer holding a colon could not be read again
            // (the key URI format forbids colons in both).
            if let parameter = query["issuer"], parameter.contains(":") {
                throw AssentCryptoError(.invalidKeyURI, "A key URI's issuer must not contain a colon.")
            }
            account = label
            issuer = query["issuer"]
        }
        guard let secretText = query["secret"], !secretText.isEmpty else {
            throw AssentCryptoError(.invalidKeyURI, "A key URI carries a secret.")
        }
        do {
            secret = try Base32.decode(secretText, caseInsensitive: true)
        } catch {
            throw AssentCryptoError(.invalidKeyURI, "The key URI's secret is not Base32.")
        }
        algorithm = try Self.parameter(query["algorithm"], default: .sha1) { OTPAlgorithm(rawValue: $0.uppercased()) }
        digits = try Self.parameter(query["digits"], default: 6) { Int($0) }
        // Each kind reads its own parameter only: a counter means nothing to TOTP, a period nothing to HOTP.
        period = kind == .totp ? try Self.parameter(query["period"], default: 30) { Int($0) } : 30
        counter = kind == .hotp ? try Self.parameter(query["counter"], default: 0) { UInt64($0) } : 0
        if kind == .hotp, query["counter"] == nil {
            throw AssentCryptoError(.invalidKeyURI, "An HOTP key URI carries a counter.")
        }
        // Validates digits, period and secret length with the generators' own rules.
        _ = try TOTP(secret: secret, digits: digits, algorithm: algorithm, period: period)
    }

    /// The URI text.
    public var text: String {
        var components = URLComponents()
        components.scheme = "otpauth"
        components.host = kind.rawValue
        components.path = "/" + (issuer.map { "\($0):" } ?? "") + account
        var items = [URLQueryItem(name: "secret", value: Base32.encode(secret))]
        if let issuer { items.append(URLQueryItem(name: "issuer", value: issuer)) }
        items.append(URLQueryItem(name: "algorithm", value: algorithm.rawValue))
        items.append(URLQueryItem(name: "digits", value: String(digits)))
        switch kind {
        case .totp: items.append(URLQueryItem(name: "period", value: String(period)))
        case .hotp: items.append(URLQueryItem(name: "counter", value: String(counter)))
        }
        components.queryItems = items
        return components.string ?? ""
    }

    private static func parameter<T>(_ text: String?, default value: T, parse: (String) -> T?) throws -> T {
        guard let text else { return value }
        guard let parsed = parse(text) else {
            throw AssentCryptoError(.invalidKeyURI, "A key URI parameter has an invalid value.")
        }
        return parsed
    }
}
