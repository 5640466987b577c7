import AssentCrypto
import Foundation

/// The proximity check code (PAC) that binds an approval to the screen the user looks at: an operation id and the
/// current TOTP, carried as a deeplink (`scheme://operation?oid=…&potp=…`) or as an unsigned JWT
/// (`{"alg":"none","typ":"JWT"}` / `{"oid","potp"}`) in a QR code.
public struct ProximityCode: Sendable, Equatable {
    /// The operation id.
    public var operationId: String
    /// The TOTP (8 digits).
    public var totp: String

    /// Creates a code.
    public init(operationId: String, totp: String) {
        self.operationId = operationId
        self.totp = totp
    }

    /// `scheme://operation?oid={id}&potp={totp}`.
    public func deeplink(scheme: String) -> String {
        var components = URLComponents()
        components.scheme = scheme
        components.host = "operation"
        components.queryItems = [
            URLQueryItem(name: "oid", value: operationId), URLQueryItem(name: "potp", value: totp),
        ]
        return components.string ?? "\(scheme)://operation?oid=\(operationId)&potp=\(totp)"
    }

    /// The unsigned JWT a QR code carries.
    public var jwt: String {
        let header = Base64URL.encode(Data(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let payload = (try? JSONEncoder().encode(Claims(oid: operationId, potp: totp))) ?? Data()
        return "\(header).\(Base64URL.encode(payload))."
    }

    /// Reads a deeplink (`?oid=…&potp=…`, `totp=` also accepted, or `?code={JWT}`) or a bare JWT; only the JWT
    /// payload is read. Returns `nil` for anything else.
    public init?(parsing text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if let components = URLComponents(string: trimmed), components.scheme != nil,
            let items = components.queryItems
        {
            func item(_ name: String) -> String? { items.first { $0.name == name }?.value }
            if let oid = item("oid"), !oid.isEmpty, let totp = item("potp") ?? item("totp") {
                self.init(operationId: oid, totp: totp)
                return
            }
            if let code = item("code") {
                self.init(jwt: code)
                return
            }
            return nil
        }
        self.init(jwt: trimmed)
    }

    private init?(jwt: String) {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 2, let payload = try? Base64URL.decode(String(parts[1])),
            let claims = try? JSONDecoder().decode(Claims.self, from: payload), !claims.oid.isEmpty
        else { return nil }
        self.init(operationId: claims.oid, totp: claims.potp)
    }

    private struct Claims: Codable {
        var oid: String
        var potp: String
    }
}
