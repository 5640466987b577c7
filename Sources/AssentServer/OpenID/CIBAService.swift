import AssentCrypto
import AssentModel
import Crypto
import Foundation

/// Client-Initiated Backchannel Authentication (OpenID CIBA Core 1.0): a relying party asks for a user; the
/// request becomes an operation on the user's devices (pushed where they registered for it, listed for polling
/// ones); the approval becomes an ID token and an access token, fetched by polling, announced by a ping, or pushed.
public struct CIBAService: Sendable {
    /// The part of the store this sees.
    let store: any ApplicationStore & ActivationStore & OpenIDStore
    let clock: WallClock
    let audit: Auditor
    let openID: OpenIDSettings
    let keys: SigningKeyService
    let operations: OperationService

    static let grantType = "urn:openid:params:grant-type:ciba"
    static let authReqIdClaim = "urn:openid:params:jwt:claim:auth_req_id"

    // MARK: Backchannel authentication request (§7)

    /// Validates the request of an authenticated client in the order of §7.2, creates the operation and the
    /// request, and returns the acknowledgement.
    func authenticationRequest(_ form: [String: String], client: OpenIDClientRecord) async throws
        -> CIBAAcknowledgement
    {
        let settings = openID
        if form["request"] != nil || form["request_uri"] != nil {
            throw OAuthError.invalidRequest("Signed authentication requests are not supported by this provider.")
        }
        let scopes = Set((form["scope"] ?? "").split(separator: " ").map(String.init))
        guard scopes.contains("openid") else { throw OAuthError(.invalidScope, "scope must contain openid.") }
        if let unknown = scopes.subtracting(client.scopes + ["openid"]).sorted().first {
            throw OAuthError(.invalidScope, "Scope \(unknown) is not allowed for this client.")
        }
        let hints = ["login_hint", "id_token_hint", "login_hint_token"].filter { form[$0] != nil }
        guard hints.count == 1 else {
            throw OAuthError.invalidRequest(
                "Exactly one of login_hint, id_token_hint and login_hint_token is required (\(hints.count) given).")
        }
        var notificationToken: String?
        if client.deliveryMode != CIBADeliveryMode.poll.rawValue {
            guard let token = form["client_notification_token"] else {
                throw OAuthError.invalidRequest(
                    "client_notification_token is required for \(client.deliveryMode) clients.")
            }
            guard Self.isBearerToken(token) else {
                throw OAuthError.invalidRequest(
                    "client_notification_token must be a bearer token (RFC 6750 b64token) of at most 1024 characters.")
            }
            notificationToken = token
        }
        if form["user_code"] != nil {
            throw OAuthError.invalidRequest("user_code is not supported by this provider.")
        }
        var expiry = settings.defaultExpiry
        if let text = form["requested_expiry"] {
            guard let value = Int(text), settings.expiryRange.contains(value) else {
                throw OAuthError.invalidRequest(
                    "requested_expiry is a whole number of seconds from \(settings.expiryRange.lowerBound) to "
                        + "\(settings.expiryRange.upperBound).")
            }
            expiry = value
        }
        let bindingMessage = form["binding_message"]
        if let bindingMessage {
            guard !bindingMessage.isEmpty, bindingMessage.count <= settings.bindingMessageLimit,
                bindingMessage.unicodeScalars.allSatisfy({ !CharacterSet.controlCharacters.contains($0) })
            else {
                throw OAuthError(
                    .invalidBindingMessage,
                    "binding_message must be 1 to \(settings.bindingMessageLimit) characters without control characters."
                )
            }
        }
        let transaction = try Self.transaction(form["transaction"])
        let acr = Self.acr(form["acr_values"])
        let userId = try await resolveUser(hint: hints[0], value: form[hints[0]]!, client: client)
        let devices = try await store.activations(userId: userId).filter {
            $0.applicationId == client.applicationId
        }
        guard devices.contains(where: { $0.state == .active }) else {
            if devices.contains(where: { $0.state == .blocked }) {
                throw OAuthError(.accessDenied, "The user's devices are blocked.", status: .forbidden)
            }
            throw OAuthError(.unknownUserId, "The hint does not identify a user with an active device.")
        }
        guard let application = try await store.application(id: client.applicationId) else {
            throw AssentServerError.internalError("Client \(client.id) names a missing application.")
        }
        let operation = try await operations.create(
            try Self.operationRequest(
                userId: userId, client: client, bindingMessage: bindingMessage, transaction: transaction,
                expiry: expiry, factors: Self.acrFactors[acr]!),
            application: application, actor: "client:\(client.id)")
        let now = clock.millis
        let record = CIBARequestRecord(
            id: UUID().uuidString.lowercased(), authReqId: Base64URL.encode(Bytes.random(count: 24)),
            clientId: client.id, userId: userId, operationId: operation.id,
            scope: scopes.sorted().joined(separator: " "),
            acrValues: acr, bindingMessage: bindingMessage, notificationToken: notificationToken,
            deliveryMode: client.deliveryMode, pollInterval: settings.pollInterval, lastPollAt: nil,
            expiresAt: operation.expiresAt, createdAt: now, redeemedAt: nil)
        try await store.insertCIBARequest(record)
        await audit(
            .cibaRequested, userId: userId, application: client.applicationId, actor: "client:\(client.id)",
            "Backchannel authentication requested by \(client.id) as operation \(operation.id).")
        return CIBAAcknowledgement(
            authReqId: record.authReqId, expiresIn: Int((operation.expiresAt - operation.createdAt) / 1000),
            interval: client.deliveryMode == CIBADeliveryMode.push.rawValue ? nil : settings.pollInterval)
    }

    /// The authentication context classes a request may ask for (`acr_values`) and the factors each lets the device
    /// approve with — seed 003's signing-key protection policies: password, biometry or password, none.
    static let acrFactors: [String: AllowedSignatureType] = [
        "urn:assent:acr:pin": AllowedSignatureType(type: .two, variants: ["possession_knowledge"]),
        "urn:assent:acr:pin-or-biometry": .twoFactor,
        "urn:assent:acr:device": .oneFactor,
    ]
    static let defaultACR = "urn:assent:acr:pin-or-biometry"

    /// The first supported class of `acr_values` (space-separated, in order of preference), else the default.
    static func acr(_ values: String?) -> String {
        (values ?? "").split(separator: " ").map(String.init).first { acrFactors[$0] != nil } ?? defaultACR
    }

    /// RFC 6750 §2.1 `b64token`, at most 1024 characters.
    static func isBearerToken(_ token: String) -> Bool {
        guard (1...1024).contains(token.utf8.count) else { return false }
        let body = token.prefix { $0 != "=" }
        return !body.isEmpty && token.dropFirst(body.count).allSatisfy { $0 == "=" }
            && body.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-._~+/".contains($0)) }
    }

    /// The user a hint names: a user id; an ID token this provider issued to this client; or a login hint token (a
    /// JWT whose `sub` — or HID's `usercode` — names the user and whose `exp`, if present, has not passed). The login
    /// hint token's signature is not checked: the client that sends it authenticated itself.
    func resolveUser(hint: String, value: String, client: OpenIDClientRecord) async throws -> String {
        let unknown = OAuthError(.unknownUserId, "The hint does not identify a user.")
        switch hint {
        case "login_hint":
            guard (1...256).contains(value.count) else { throw unknown }
            return value
        case "id_token_hint":
            struct Claims: Decodable {
                let iss: String
                let sub: String
                let aud: String
            }
            guard let payload = try? CompactJWS.verify(value, keys: try await keys.jwks()),
                let claims = try? JSONDecoder().decode(Claims.self, from: payload),
                claims.iss == openID.issuer, claims.aud == client.id
            else { throw unknown }
            return claims.sub
        default:
            struct Claims: Decodable {
                let sub: String?
                let usercode: String?
                let exp: Double?
            }
            let parts = value.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, value.utf8.count <= 16_384, let payload = try? Base64URL.decode(String(parts[1])),
                let claims = try? JSONDecoder().decode(Claims.self, from: payload),
                let user = claims.sub ?? claims.usercode, (1...256).contains(user.count)
            else { throw unknown }
            if let exp = claims.exp, exp * 1000 < Double(clock.millis) {
                throw OAuthError(.expiredLoginHintToken, "The login_hint_token has expired.")
            }
            return user
        }
    }

    /// The `transaction` parameter: a JSON object of up to 10 string (or number) values, e.g.
    /// `{"amount":"400.00","currency":"EUR","account":"DE89…","reference":"INV-1"}`.
    static func transaction(_ text: String?) throws -> [(String, String)] {
        guard let text else { return [] }
        guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: Data(text.utf8)),
            object.count <= 10
        else { throw OAuthError.invalidRequest("transaction must be a JSON object of at most 10 fields.") }
        return try object.keys.sorted().map { key in
            let value: String
            switch object[key] {
            case .string(let text): value = text
            case .number(let number): value = "\(number)"
            case .double(let number): value = "\(number)"
            default: throw OAuthError.invalidRequest("transaction.\(key) must be a string or a number.")
            }
            guard (1...64).contains(key.count), (1...256).contains(value.count) else {
                throw OAuthError.invalidRequest("transaction keys have 1 to 64 characters, values 1 to 256.")
            }
            return (key, value)
        }
    }

    /// The operation the device shows and signs: the binding message and the transaction as texts and attributes;
    /// the payment fields and the binding message in the signed data string.
    static func operationRequest(
        userId: String, client: OpenIDClientRecord, bindingMessage: String?, transaction: [(String, String)],
        expiry: Int, factors: AllowedSignatureType
    ) throws -> CreateOperationRequest {
        let fields = Dictionary(transaction, uniquingKeysWith: { first, _ in first })
        var data: [OperationData.Field] = []
        var attributes: [OperationAttribute] = []
        var template = 0
        if let amount = fields["amount"], let currency = fields["currency"] {
            guard let value = Decimal(string: amount, locale: Locale(identifier: "en_US_POSIX")),
                amount.allSatisfy({ $0.isNumber || $0 == "." }), currency.count == 3,
                currency.allSatisfy({ $0.isASCII && $0.isUppercase })
            else {
                throw OAuthError.invalidRequest(
                    "transaction.amount is a decimal number with a dot and transaction.currency an ISO 4217 code.")
            }
            template = 1
            data.append(.amount(amount, currency: currency))
            var attribute = OperationAttribute(type: "AMOUNT", id: "operation.amount").with(label: "Amount")
            attribute.amount = value
            attribute.currency = currency
            attributes.append(attribute)
        }
        for (key, value) in transaction where key != "amount" && key != "currency" {
            var attribute = OperationAttribute(type: "KEY_VALUE", id: "transaction.\(key)").with(label: key)
            attribute.value = value
            attributes.append(attribute)
        }
        if template == 1 {
            if let account = fields["account"] { data.append(.anyAccount(account)) }
            if let reference = fields["reference"] { data.append(.reference(reference)) }
        }
        data.append(.text(bindingMessage ?? client.name))
        let title = bindingMessage.map { "\(client.name): \($0)" } ?? "Confirm for \(client.name)"
        let message =
            bindingMessage.map { "Check that \($0) is also shown where you started, then approve." }
            ?? "\(client.name) asks you to confirm."
        return CreateOperationRequest(
            userId: userId, name: template == 1 ? "ciba_payment" : "ciba_authentication",
            data: OperationData(template: template, fields: data).description,
            formData: ["en": FormData(title: title, message: message, attributes: attributes)],
            allowedSignatureType: factors, expiresIn: expiry)
    }

    // MARK: Token request (§10.1)

    /// Answers a token request of an authenticated client.
    func tokenRequest(_ form: [String: String], client: OpenIDClientRecord) async throws -> OAuthTokenResponse {
        guard form["grant_type"] == Self.grantType else {
            throw OAuthError(.unsupportedGrantType, "This token endpoint serves grant_type \(Self.grantType).")
        }
        guard let authReqId = form["auth_req_id"], !authReqId.isEmpty else {
            throw OAuthError.invalidRequest("auth_req_id is missing.")
        }
        guard client.deliveryMode != CIBADeliveryMode.push.rawValue else {
            throw OAuthError(.unauthorizedClient, "A push client receives its tokens at its notification endpoint.")
        }
        guard authReqId.utf8.count <= 256, let request = try await store.cibaRequest(authReqId: authReqId),
            request.clientId == client.id
        else { throw OAuthError.invalidGrant("auth_req_id is invalid.") }
        guard request.redeemedAt == nil else { throw OAuthError.invalidGrant("auth_req_id was already redeemed.") }
        let operation = try await operations.get(id: request.operationId)
        switch operation.status {
        case .pending:
            if clock.millis >= request.expiresAt {
                throw OAuthError(.expiredToken, "The authentication request expired.")
            }
            guard
                try await store.recordPoll(
                    id: request.id, now: clock.millis, penalty: openID.slowDownPenalty)
            else {
                throw OAuthError(
                    .slowDown,
                    "Polled sooner than the interval: add \(openID.slowDownPenalty) seconds to it.")
            }
            throw OAuthError(.authorizationPending, "The user has not answered yet.")
        case .approved:
            guard try await store.redeemCIBARequest(id: request.id, at: clock.millis) else {
                throw OAuthError.invalidGrant("auth_req_id was already redeemed.")
            }
            return try await issueTokens(request: request, client: client, operation: operation)
        default:
            throw Self.denial(operation)
        }
    }

    /// The error a finished, unapproved operation comes to.
    static func denial(_ operation: OperationRecord) -> OAuthError {
        switch operation.status {
        case .expired: OAuthError(.expiredToken, "The authentication request expired.")
        case .canceled: OAuthError(.accessDenied, "The request was canceled.")
        case .failed: OAuthError(.accessDenied, "The approval failed too many times.")
        case .rejected where operation.statusReason == RejectReason.fraud:
            OAuthError(.accessDenied, "The user reported the request as fraud.")
        default: OAuthError(.accessDenied, "The user rejected the request.")
        }
    }

    // MARK: Tokens

    /// Mints an access token and signs an ID token for an approved request.
    func issueTokens(request: CIBARequestRecord, client: OpenIDClientRecord, operation: OperationRecord)
        async throws -> OAuthTokenResponse
    {
        let now = clock.millis
        let lifetime = openID.tokenLifetime
        let accessToken = "at_" + Base64URL.encode(Bytes.random(count: 32))
        try await store.insertAccessToken(
            AccessTokenRecord(
                tokenHash: Self.tokenHash(accessToken), clientId: client.id, userId: request.userId,
                scope: request.scope, cibaRequestId: request.id, createdAt: now,
                expiresAt: now + Millis(lifetime) * 1000))
        let claims = IDTokenClaims(
            iss: openID.issuer, sub: request.userId, aud: client.id, iat: now / 1000,
            exp: now / 1000 + Int64(lifetime), authTime: (operation.finishedAt ?? now) / 1000,
            atHash: Self.leftHalfHash(accessToken), authReqId: request.authReqId,
            amr: Self.amr(operation.approvedWith), acr: request.acrValues, bindingMessage: request.bindingMessage,
            transaction: ApprovedTransaction(
                operationId: operation.id, data: operation.data, contentHash: try Self.contentHash(operation.content),
                status: operation.status.rawValue, mobileContext: operation.mobileContext))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let signer = try await keys.signer(client.idTokenAlgorithm)
        let idToken = try CompactJWS.sign(
            payload: try encoder.encode(claims), with: signer.signingKey, keyId: signer.kid)
        await audit(
            .cibaTokensIssued, userId: request.userId, application: client.applicationId, actor: "client:\(client.id)",
            "Tokens issued for operation \(operation.id) to \(client.id).")
        return OAuthTokenResponse(accessToken: accessToken, expiresIn: lifetime, idToken: idToken, scope: request.scope)
    }

    /// The access token's record while it is valid; `nil` for an unknown, expired or implausibly long token.
    func validAccessToken(_ token: String) async throws -> AccessTokenRecord? {
        guard !token.isEmpty, token.utf8.count <= 512,
            let record = try await store.accessToken(hash: Self.tokenHash(token)),
            record.expiresAt > clock.millis
        else { return nil }
        return record
    }

    static func tokenHash(_ token: String) -> Data { Data(SHA256.hash(data: Data(token.utf8))) }

    /// `at_hash` (OpenID Connect Core §3.1.3.6): Base64URL of the left half of SHA-256 of the token's ASCII.
    static func leftHalfHash(_ token: String) -> String {
        Base64URL.encode(Data(Data(SHA256.hash(data: Data(token.utf8))).prefix(16)))
    }

    /// RFC 8176 method references of the factors that approved: the device key (`hwk`) plus the PIN (`pin`) or a
    /// biometric check (`user`, user presence), and `mfa` when there are two.
    static func amr(_ signatureType: String?) -> [String] {
        switch signatureType {
        case "possession_knowledge": ["hwk", "pin", "mfa"]
        case "possession_biometry": ["hwk", "user", "mfa"]
        case "possession_knowledge_biometry": ["hwk", "pin", "user", "mfa"]
        default: ["hwk"]
        }
    }

    /// Base64URL SHA-256 of the operation's content (texts and attributes per language, as JSON with sorted keys).
    static func contentHash(_ content: OperationContent) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Base64URL.encode(Data(SHA256.hash(data: try encoder.encode(content))))
    }
}

/// The claims of an Assent ID token.
struct IDTokenClaims: Codable {
    let iss: String
    let sub: String
    let aud: String
    let iat: Int64
    let exp: Int64
    let authTime: Int64
    let atHash: String
    let authReqId: String
    let amr: [String]
    let acr: String?
    let bindingMessage: String?
    let transaction: ApprovedTransaction

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, iat, exp, amr, acr, transaction
        case authTime = "auth_time"
        case atHash = "at_hash"
        case authReqId = "urn:openid:params:jwt:claim:auth_req_id"
        case bindingMessage = "binding_message"
    }
}
