import Foundation
import SQLKit

/// Every column that holds a value sealed with the ``SecretBox``, with the row key and the context (associated data)
/// it is sealed with: the stores seal and open through these contexts, and the re-seal after a key change walks
/// exactly this list.
enum SealedColumn: CaseIterable, Sendable {
    case applicationSecret, applicationMasterKey
    case applicationVersionSecret
    case applicationWebhookSecret
    case applicationPushSettings
    case activationServerKey, activationMasterSecret
    case tokenSecret
    case temporaryKey
    case operationProximitySeed
    case operatorTOTP
    case tfaFactorSecret, tfaCode
    case openIDSigningKey
    case cibaAuthReqId, cibaNotificationToken
    case webSessionState
    case auditKey
    case vapidKey
    case pushToken, pushWebPushKeys
    case radiusClientSecret

    /// A row key column: text, or bytes (a web session's id hash).
    enum Key: Sendable {
        case text(String)
        case bytes(String)

        var name: String {
            switch self {
            case .text(let name), .bytes(let name): name
            }
        }

        /// This key column's value in `row`.
        func value(in row: some SQLRow) throws -> KeyValue {
            switch self {
            case .text(let name): .text(try row.decode(column: name, as: String.self))
            case .bytes(let name): .bytes(try row.decode(column: name, as: Data.self))
            }
        }
    }

    /// A row key column's value.
    enum KeyValue: Sendable, Equatable {
        case text(String)
        case bytes(Data)

        var bindable: any Encodable & Sendable {
            switch self {
            case .text(let text): text
            case .bytes(let bytes): bytes
            }
        }

        /// As the sealing context names it: the text, or Base64 of the bytes.
        var contextText: String {
            switch self {
            case .text(let text): text
            case .bytes(let bytes): bytes.base64EncodedString()
            }
        }
    }

    var table: String {
        switch self {
        case .applicationSecret, .applicationMasterKey: "applications"
        case .applicationVersionSecret: "application_versions"
        case .applicationWebhookSecret: "application_webhooks"
        case .applicationPushSettings: "application_push_credentials"
        case .activationServerKey, .activationMasterSecret: "activations"
        case .tokenSecret: "tokens"
        case .temporaryKey: "temporary_keys"
        case .operationProximitySeed: "operations"
        case .operatorTOTP: "operators"
        case .tfaFactorSecret: "tfa_factors"
        case .tfaCode: "tfa_codes"
        case .openIDSigningKey: "openid_keys"
        case .cibaAuthReqId, .cibaNotificationToken: "ciba_requests"
        case .webSessionState: "web_sessions"
        case .auditKey: "audit_keys"
        case .vapidKey: "push_vapid_keys"
        case .pushToken, .pushWebPushKeys: "push_registrations"
        case .radiusClientSecret: "radius_clients"
        }
    }

    var column: String {
        switch self {
        case .applicationSecret, .applicationVersionSecret: "application_secret"
        case .applicationMasterKey: "master_private_key"
        case .applicationWebhookSecret, .tokenSecret, .tfaFactorSecret, .radiusClientSecret: "secret"
        case .applicationPushSettings: "settings"
        case .activationServerKey: "server_private_key"
        case .activationMasterSecret: "master_secret"
        case .temporaryKey, .openIDSigningKey, .auditKey, .vapidKey: "private_key"
        case .operationProximitySeed: "proximity_seed"
        case .operatorTOTP: "totp_secret"
        case .tfaCode: "code"
        case .cibaAuthReqId: "auth_req_id"
        case .cibaNotificationToken: "notification_token"
        case .webSessionState: "state"
        case .pushToken: "token"
        case .pushWebPushKeys: "webpush_keys"
        }
    }

    /// The columns that name a row, in order.
    var keys: [Key] {
        switch self {
        case .applicationWebhookSecret: [.text("application_id")]
        case .applicationPushSettings: [.text("application_id"), .text("service")]
        case .openIDSigningKey: [.text("kid")]
        case .webSessionState: [.bytes("id_hash")]
        case .pushToken, .pushWebPushKeys: [.text("activation_id")]
        default: [.text("id")]
        }
    }

    /// The context a row's value is sealed with, from its key values (text, or Base64 of bytes).
    func context(_ key: String...) -> String { context(key) }

    /// ``context(_:)-(String...)`` from an array of key values.
    func context(_ key: [String]) -> String {
        let first = key.first ?? ""
        return switch self {
        case .applicationSecret: "application.secret:\(first)"
        case .applicationMasterKey: "application.master:\(first)"
        case .applicationVersionSecret: "application_version.secret:\(first)"
        case .applicationWebhookSecret: "application_webhook:\(first)"
        case .applicationPushSettings: "application_push:\(key.joined(separator: ":"))"
        case .activationServerKey: "activation.server_key:\(first)"
        case .activationMasterSecret: "activation.master_secret:\(first)"
        case .tokenSecret: "token.secret:\(first)"
        case .temporaryKey: "temporary_key:\(first)"
        case .operationProximitySeed: "operation.proximity_seed:\(first)"
        case .operatorTOTP: "operator.totp:\(first)"
        case .tfaFactorSecret: "tfa.factor:\(first)"
        case .tfaCode: "tfa.code:\(first)"
        case .openIDSigningKey: "openid.key:\(first)"
        case .cibaAuthReqId: "ciba.auth_req_id:\(first)"
        case .cibaNotificationToken: "ciba.notification_token:\(first)"
        case .webSessionState: "web_sessions.state:\(first)"
        // A single row: the context names the column alone.
        case .auditKey: "audit.key"
        // The server's one key of before keys per application, and each application's own.
        case .vapidKey: first == "vapid" ? "push.vapid_key" : "push.vapid_key:\(first)"
        case .pushToken: "push.token:\(first)"
        case .pushWebPushKeys: "push.webpush_keys:\(first)"
        case .radiusClientSecret: "radius_client.secret:\(first)"
        }
    }
}
