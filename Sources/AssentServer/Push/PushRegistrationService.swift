import AssentCrypto
import AssentModel
import Foundation

/// Device push registrations: one per activation, replaced when the device registers again, deleted by the
/// database when the activation is removed.
public struct PushRegistrationService: Sendable {
    /// The part of the store this sees.
    let store: any ActivationStore & PushRegistrationStore
    let clock: WallClock
    let audit: Auditor
    let egress: Egress

    /// Validates and stores the device's token for its activation.
    /// - Throws: `PUSH_REGISTRATION_FAILED` with the reason when the platform, token or environment is wrong.
    @discardableResult
    public func register(_ request: PushRegistrationRequest, device: DevicePrincipal, language: String?) async throws
        -> PushRegistrationRecord
    {
        let registration = try Self.validated(
            request, activationId: device.activationId, language: language, now: clock.millis)
        if registration.platform == .webpush {
            try await Self.checkDestination(registration.token, egress: egress)
        }
        try await store.putPushRegistration(registration)
        await audit(
            .pushRegistered, activation: try await store.activation(id: device.activationId),
            userId: device.userId, actor: "device",
            "Activation \(device.activationId) registered a \(registration.platform.rawValue) push token"
                + (registration.environment.map { " (\($0.rawValue))." } ?? "."))
        return registration
    }

    /// The registration a request describes, or the reason it is refused.
    static func validated(_ request: PushRegistrationRequest, activationId: String, language: String?, now: Millis)
        throws -> PushRegistrationRecord
    {
        func refuse(_ message: String) -> AssentServerError {
            .pushRegistrationFailed(message)
        }
        guard let platform = PushPlatform(name: request.platform) else { throw refuse(PushPlatform.choices) }
        if platform != .webpush, request.p256dh != nil || request.auth != nil {
            throw refuse("p256dh and auth belong to a webpush registration only.")
        }
        let token = request.token
        switch platform {
        case .apns:
            // APNs device tokens are bytes sent as hexadecimal (32 bytes today; Apple says the length may grow).
            guard (32...400).contains(token.count), token.count.isMultiple(of: 2), token.allSatisfy(\.isHexDigit)
            else { throw refuse("An APNs token is the device token in hexadecimal (64 or more digits).") }
        case .fcm, .hms:
            guard (1...4096).contains(token.utf8.count),
                token.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 32 && $0.value < 127 })
            else { throw refuse("The token must be 1 to 4096 printable ASCII characters without spaces.") }
        case .webpush:
            try validateEndpoint(token)
        }
        var webPush: WebPushEncryption.Subscription?
        if platform == .webpush {
            guard let p256dh = request.p256dh, let auth = request.auth else {
                throw refuse("A webpush registration carries the subscription's p256dh and auth keys.")
            }
            webPush = try subscriptionKeys(p256dh: p256dh, auth: auth)
        }
        var environment: PushEnvironment?
        if platform == .apns {
            guard let parsed = PushEnvironment(rawValue: (request.environment ?? "production").lowercased()) else {
                throw refuse("environment is development or production.")
            }
            environment = parsed
        } else if let given = request.environment, PushEnvironment(rawValue: given.lowercased()) == nil {
            throw refuse("environment is development or production.")
        }
        let language = language.flatMap { header -> String? in
            let trimmed = String(header.prefix(200))
            return trimmed.allSatisfy({ $0.isASCII && !$0.isNewline }) ? trimmed : nil
        }
        return PushRegistrationRecord(
            activationId: activationId, platform: platform, environment: environment,
            token: platform == .apns ? token.lowercased() : token, language: language, registeredAt: now,
            webPush: webPush)
    }

    /// A Web Push subscription's keys (a device's or a browser's), or the reason they are refused.
    static func subscriptionKeys(p256dh: String, auth: String) throws -> WebPushEncryption.Subscription {
        do {
            return try WebPushEncryption.Subscription(p256dh: p256dh, auth: auth)
        } catch {
            throw AssentServerError.pushRegistrationFailed(
                "p256dh is an uncompressed P-256 public key and auth a 16-byte secret, both Base64URL.")
        }
    }

    /// The longest push endpoint accepted.
    static let maximumEndpointLength = 2048

    /// A Web Push endpoint: an https URL (http only to this machine, for a local receiver), with a host and no
    /// credentials or fragment.
    static func validateEndpoint(_ text: String) throws {
        guard text.utf8.count <= maximumEndpointLength,
            text.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 32 && $0.value < 127 })
        else {
            throw AssentServerError.pushRegistrationFailed(
                "The push endpoint is a URL of at most \(maximumEndpointLength) printable ASCII characters.")
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty, components.user == nil, components.password == nil,
            components.fragment == nil
        else {
            throw AssentServerError.pushRegistrationFailed(
                "The push endpoint is an absolute URL with a host, without credentials or fragment.")
        }
        switch scheme {
        case "https": return
        case "http" where isLoopback(host): return
        default:
            throw AssentServerError.pushRegistrationFailed(
                "The push endpoint must be https (http only to this machine's loopback address).")
        }
    }

    /// Refuses an endpoint the egress policy would never send to (a loopback, private or link-local address unless
    /// the operator allows it), so that a device or browser learns at once rather than at the first push.
    static func checkDestination(_ endpoint: String, egress: Egress) async throws {
        do {
            _ = try await egress.check(endpoint)
        } catch {
            throw AssentServerError.pushRegistrationFailed("The push endpoint is refused: \(error.message)")
        }
    }

    /// Whether `host` names this machine: `localhost`, 127.0.0.0/8 or ::1.
    static func isLoopback(_ host: String) -> Bool {
        let name = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if name == "localhost" || name == "::1" { return true }
        let octets = name.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets.first == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}
