import Foundation

/// `POST /api/v1/operations`: a full operation, or `{template, params}` plus any field to override.
public struct CreateOperationRequest: Codable, Sendable, Equatable {
    /// The user whose devices may approve it; absent for a non-personalised operation the first device claims.
    public var userId: String?
    /// The system name, e.g. `authorize_payment`.
    public var name: String?
    /// The operation data string (`A1*A100CZK*…`).
    public var data: String?
    /// The form per language tag (`en`, `cs`, …). In JSON also one form without a language map — the shape a
    /// device receives — which is the form of ``defaultLanguage`` (`en` when absent).
    public var formData: [String: FormData]?
    /// The language used when `Accept-Language` matches none (default `en` when present, else the first tag).
    public var defaultLanguage: String?
    public var ui: OperationUI?
    /// Default `2FA` with `possession_knowledge` and `possession_biometry`.
    public var allowedSignatureType: AllowedSignatureType?
    /// Seconds until it expires (default 300).
    public var expiresIn: Int?
    /// Failed approvals that fail the operation (default 5).
    public var maxFailedAttempts: Int?
    /// Whether approval needs the proximity TOTP.
    public var proximityCheck: Bool?
    /// An operation template's name.
    public var template: String?
    /// Values for the template's `{placeholders}`.
    public var params: [String: JSONValue]?
    /// `choose` or `type`: the approval must carry the number the operation's `number` shows (call-centre flows).
    public var numberMatching: String?

    /// Creates a request.
    public init(
        userId: String? = nil, name: String? = nil, data: String? = nil, formData: [String: FormData]? = nil,
        defaultLanguage: String? = nil, ui: OperationUI? = nil, allowedSignatureType: AllowedSignatureType? = nil,
        expiresIn: Int? = nil, maxFailedAttempts: Int? = nil, proximityCheck: Bool? = nil, template: String? = nil,
        params: [String: JSONValue]? = nil, numberMatching: String? = nil
    ) {
        self.numberMatching = numberMatching
        self.userId = userId
        self.name = name
        self.data = data
        self.formData = formData
        self.defaultLanguage = defaultLanguage
        self.ui = ui
        self.allowedSignatureType = allowedSignatureType
        self.expiresIn = expiresIn
        self.maxFailedAttempts = maxFailedAttempts
        self.proximityCheck = proximityCheck
        self.template = template
        self.params = params
    }

    private enum CodingKeys: String, CodingKey {
        case userId, name, data, formData, defaultLanguage, ui, allowedSignatureType, expiresIn, maxFailedAttempts,
            proximityCheck, template, params, numberMatching
    }

    /// A key of a JSON object whose keys are data (language tags).
    private struct ObjectKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        userId = try container.decodeIfPresent(String.self, forKey: .userId)
        name = try container.decodeIfPresent(String.self, forKey: .name)
        data = try container.decodeIfPresent(String.self, forKey: .data)
        defaultLanguage = try container.decodeIfPresent(String.self, forKey: .defaultLanguage)
        ui = try container.decodeIfPresent(OperationUI.self, forKey: .ui)
        allowedSignatureType = try container.decodeIfPresent(AllowedSignatureType.self, forKey: .allowedSignatureType)
        expiresIn = try container.decodeIfPresent(Int.self, forKey: .expiresIn)
        maxFailedAttempts = try container.decodeIfPresent(Int.self, forKey: .maxFailedAttempts)
        proximityCheck = try container.decodeIfPresent(Bool.self, forKey: .proximityCheck)
        template = try container.decodeIfPresent(String.self, forKey: .template)
        params = try container.decodeIfPresent([String: JSONValue].self, forKey: .params)
        numberMatching = try container.decodeIfPresent(String.self, forKey: .numberMatching)
        formData = try Self.decodeForms(container, defaultLanguage: defaultLanguage)
    }

    /// `formData` as one form (it has a string `title`) or as a map of language tags to forms; anything else is
    /// refused with both shapes named.
    private static func decodeForms(
        _ container: KeyedDecodingContainer<CodingKeys>, defaultLanguage: String?
    ) throws -> [String: FormData]? {
        guard container.contains(.formData), try !container.decodeNil(forKey: .formData) else { return nil }
        let shapes =
            #"is one form {"title", "message", "attributes"} or a map of language tags to forms {"en": {…}}"#
        guard let object = try? container.nestedContainer(keyedBy: ObjectKey.self, forKey: .formData) else {
            throw DecodingError.dataCorruptedError(
                forKey: .formData, in: container, debugDescription: "formData \(shapes); it is not a JSON object.")
        }
        if (try? object.decode(String.self, forKey: ObjectKey(stringValue: "title"))) != nil {
            return [defaultLanguage ?? "en": try container.decode(FormData.self, forKey: .formData)]
        }
        var forms: [String: FormData] = [:]
        // In key order, so that the first wrong form is named the same way every time.
        for key in object.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
            do {
                forms[key.stringValue] = try object.decode(FormData.self, forKey: key)
            } catch let error as DecodingError {
                throw DecodingError.dataCorruptedError(
                    forKey: .formData, in: container,
                    debugDescription: "formData \(shapes); formData.\(key.stringValue) is not a form (\(error.brief)).")
            }
        }
        return forms
    }
}

extension DecodingError {
    /// What is wrong, by field path, without the value.
    var brief: String {
        switch self {
        case .keyNotFound(let key, let context):
            "\((context.codingPath + [key]).map(\.stringValue).joined(separator: ".")) is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        case .dataCorrupted(let context): context.debugDescription
        @unknown default: "it cannot be read"
        }
    }
}

/// An operation as the operator sees it.
public struct OperationInfo: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String?
    public var name: String
    public var data: String
    public var status: OperationStatus
    public var statusReason: String?
    public var createdAt: Date
    public var expiresAt: Date
    public var finishedAt: Date?
    /// The activation that approved, rejected or failed it.
    public var activationId: String?
    public var failedAttempts: Int
    public var maxFailedAttempts: Int
    public var allowedSignatureType: AllowedSignatureType
    public var proximityCheck: Bool
    public var template: String?
    public var defaultLanguage: String
    public var formData: [String: FormData]
    public var ui: OperationUI?
    /// `choose` or `type` when the approval must carry ``number``.
    public var numberMatching: String?
    /// The number to show the person (on the page, or read out by an agent); the phone asks for it.
    public var number: Int?

    /// Creates the view.
    public init(
        id: String, userId: String?, name: String, data: String, status: OperationStatus, statusReason: String?,
        createdAt: Date, expiresAt: Date, finishedAt: Date?, activationId: String?, failedAttempts: Int,
        maxFailedAttempts: Int, allowedSignatureType: AllowedSignatureType, proximityCheck: Bool, template: String?,
        defaultLanguage: String, formData: [String: FormData], ui: OperationUI?, numberMatching: String? = nil,
        number: Int? = nil
    ) {
        self.numberMatching = numberMatching
        self.number = number
        self.id = id
        self.userId = userId
        self.name = name
        self.data = data
        self.status = status
        self.statusReason = statusReason
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.finishedAt = finishedAt
        self.activationId = activationId
        self.failedAttempts = failedAttempts
        self.maxFailedAttempts = maxFailedAttempts
        self.allowedSignatureType = allowedSignatureType
        self.proximityCheck = proximityCheck
        self.template = template
        self.defaultLanguage = defaultLanguage
        self.formData = formData
        self.ui = ui
    }
}

/// `GET /api/v1/users/{userId}/operations`.
public struct OperationList: Codable, Sendable, Equatable {
    public var operations: [OperationInfo]
    public init(operations: [OperationInfo]) { self.operations = operations }
}

/// `POST /api/v1/operations/{id}/cancel` body (optional).
public struct CancelOperationRequest: Codable, Sendable, Equatable {
    /// At most 32 characters.
    public var reason: String?
    public init(reason: String?) { self.reason = reason }
}

/// `POST /api/v1/operations/{id}/offline-qr`.
public struct OfflineQRRequest: Codable, Sendable, Equatable {
    /// Which server key signs the QR code.
    public enum Key: String, Sendable, Hashable, CaseIterable {
        /// The application's master server key: any of the user's devices can check it.
        case master
        /// The activation's own server key: only that device can check it.
        case personal
    }

    /// `master` or `personal`.
    public var keyType: OpenEnum<Key>
    /// The activation whose personal server key signs; required for `personal`.
    public var activationId: String?
    public init(keyType: Key, activationId: String?) {
        self.keyType = .known(keyType)
        self.activationId = activationId
    }
}

/// The QR text of an offline operation.
public struct OfflineQRResponse: Codable, Sendable, Equatable {
    public var qr: String
    public init(qr: String) { self.qr = qr }
}

/// `POST /api/v1/operations/{id}/offline-verify`.
public struct OfflineVerifyRequest: Codable, Sendable, Equatable {
    public var activationId: String
    /// `NNNNNNNN-NNNNNNNN` as typed by the user.
    public var code: String
    public init(activationId: String, code: String) {
        self.activationId = activationId
        self.code = code
    }
}

/// Whether the typed code approved the operation, and the operation afterwards.
public struct OfflineVerifyResponse: Codable, Sendable, Equatable {
    public var valid: Bool
    public var operation: OperationInfo
    public init(valid: Bool, operation: OperationInfo) {
        self.valid = valid
        self.operation = operation
    }
}

/// `GET /api/v1/operations/{id}/proximity`: the current proximity TOTP as a deeplink and as a QR JWT.
public struct ProximityCodeResponse: Codable, Sendable, Equatable {
    public var operationId: String
    public var otp: String
    public var deeplink: String
    public var jwt: String
    /// When this code stops being the current one (it is accepted one step longer).
    public var validUntil: Date
    public init(operationId: String, otp: String, deeplink: String, jwt: String, validUntil: Date) {
        self.operationId = operationId
        self.otp = otp
        self.deeplink = deeplink
        self.jwt = jwt
        self.validUntil = validUntil
    }
}

/// An operation template: the fields of ``CreateOperationRequest`` (without `userId`, `template`, `params`) in
/// which any string may hold `{placeholders}`. A string that is exactly one placeholder takes the parameter's JSON
/// value (so `"amount": "{amount}"` becomes a number); elsewhere the parameter's text is inserted, escaped for
/// the operation data string in `data`.
public struct OperationTemplateInfo: Codable, Sendable, Equatable {
    public var name: String
    public var body: [String: JSONValue]
    public var updatedAt: Date
    public init(name: String, body: [String: JSONValue], updatedAt: Date) {
        self.name = name
        self.body = body
        self.updatedAt = updatedAt
    }
}

/// `GET /api/v1/operation-templates`.
public struct OperationTemplateList: Codable, Sendable, Equatable {
    public var templates: [OperationTemplateInfo]
    public init(templates: [OperationTemplateInfo]) { self.templates = templates }
}

/// `POST /api/v1/operations/{id}/approval-link`: a link to the waiting-for-approval page.
public struct ApprovalLinkRequest: Codable, Sendable, Equatable {
    /// Where the page goes once the operation is finished (`operation_id` and `status` are added to its query).
    public var returnUrl: String
    /// Seconds the link works (60 to 86,400); default: until ten minutes after the operation expires.
    public var expiresIn: Int?
    /// Whether the page also offers approving with a phone that has no connection: it shows an offline QR code and
    /// takes the code the app shows after scanning it. Default `false`.
    public var offline: Bool?

    public init(returnUrl: String, expiresIn: Int? = nil, offline: Bool? = nil) {
        self.returnUrl = returnUrl
        self.expiresIn = expiresIn
        self.offline = offline
    }
}

/// The signed link to the waiting-for-approval page.
public struct ApprovalLinkResponse: Codable, Sendable, Equatable {
    public var url: String
    public var expiresAt: Date

    public init(url: String, expiresAt: Date) {
        self.url = url
        self.expiresAt = expiresAt
    }
}
