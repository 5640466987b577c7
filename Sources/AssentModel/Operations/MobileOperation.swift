import Foundation

/// An operation as the Mobile Token API shows it to a device (`/api/auth/token/app/operation/list`, `/detail`,
/// `/detail/claim`, `/history`).
public struct MobileOperation: Codable, Sendable, Equatable {
    /// The operation id.
    public var id: String
    /// The system name, e.g. `authorize_payment` or `login`.
    public var name: String
    /// The operation data string the approval signs.
    public var data: String
    /// `PENDING`, `APPROVED`, `REJECTED`, `CANCELED`, `EXPIRED` or `FAILED`.
    public var status: OperationStatus
    /// Why the operation ended as it did (at most 32 characters).
    public var statusReason: String?
    /// `yyyy-MM-dd'T'HH:mm:ss+0000`.
    public var operationCreated: String
    /// `yyyy-MM-dd'T'HH:mm:ss+0000`.
    public var operationExpires: String
    /// Presentation hints for the approval screen.
    public var ui: OperationUI?
    /// Which factors approve it.
    public var allowedSignatureType: AllowedSignatureType
    /// The texts and attributes to show, localised.
    public var formData: FormData
    /// When the approval must carry the number shown where the person started (Assent's extension of the API).
    public var numberMatching: NumberMatching?

    /// Creates an operation view.
    public init(
        id: String, name: String, data: String, status: OperationStatus, statusReason: String?,
        operationCreated: String, operationExpires: String, ui: OperationUI?,
        allowedSignatureType: AllowedSignatureType, formData: FormData, numberMatching: NumberMatching? = nil
    ) {
        self.numberMatching = numberMatching
        self.id = id
        self.name = name
        self.data = data
        self.status = status
        self.statusReason = statusReason
        self.operationCreated = operationCreated
        self.operationExpires = operationExpires
        self.ui = ui
        self.allowedSignatureType = allowedSignatureType
        self.formData = formData
    }
}

/// The life of an operation: it starts `PENDING` and ends exactly once in one of the other states.
public enum OperationStatus: String, Codable, Sendable, CaseIterable {
    case pending = "PENDING"
    case approved = "APPROVED"
    case rejected = "REJECTED"
    case canceled = "CANCELED"
    case expired = "EXPIRED"
    case failed = "FAILED"

    /// Whether the operation can no longer change.
    public var isFinished: Bool { self != .pending }
}

/// The factors that approve an operation: `1FA` (possession only; any signature will do), `2FA` with the allowed
/// `variants`, or `ECDSA`.
public struct AllowedSignatureType: Codable, Sendable, Equatable {
    /// How many factors an approval needs.
    public enum Factors: String, Sendable, Hashable {
        /// `1FA`: possession only.
        case one = "1FA"
        /// `2FA`: possession and a PIN or biometry.
        case two = "2FA"
        /// `ECDSA`: a device-signed approval.
        case ecdsa = "ECDSA"
    }

    /// `1FA`, `2FA` or `ECDSA` (another value from a newer peer is kept as sent).
    public var type: OpenEnum<Factors>
    /// For `2FA`: `possession_knowledge`, `possession_biometry`.
    public var variants: [String]

    /// Creates the value.
    public init(type: Factors, variants: [String]) {
        self.type = .known(type)
        self.variants = variants
    }

    /// Two factors: PIN or biometry.
    public static let twoFactor = AllowedSignatureType(
        type: .two, variants: ["possession_knowledge", "possession_biometry"])
    /// One factor: the user just confirms.
    public static let oneFactor = AllowedSignatureType(type: .one, variants: ["possession"])

    /// Whether biometry may approve: any `1FA` operation, or a `2FA` one listing `possession_biometry`.
    public var allowsBiometry: Bool { type == .one || variants.contains("possession_biometry") }
}

/// The texts and attributes of an operation's approval screen.
public struct FormData: Codable, Sendable, Equatable {
    public var title: String
    public var message: String
    /// Texts shown after approval, failure or rejection.
    public var resultTexts: ResultTexts?
    public var attributes: [OperationAttribute]

    /// Creates form data.
    public init(title: String, message: String, resultTexts: ResultTexts? = nil, attributes: [OperationAttribute] = [])
    {
        self.title = title
        self.message = message
        self.resultTexts = resultTexts
        self.attributes = attributes
    }

    private enum CodingKeys: String, CodingKey {
        case title, message, resultTexts, attributes
    }

    /// Set to `true` in a decoder's `userInfo` to decode attributes as they are, for validation (servers), instead
    /// of leniently (clients).
    public static let strictAttributes = CodingUserInfoKey(rawValue: "assent.formData.strictAttributes")!

    /// Decodes leniently as clients must: an attribute that fails to decode is dropped, an unknown type becomes
    /// `UNKNOWN` with its id and label. With ``strictAttributes`` every attribute is kept as sent, or decoding fails.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        title = try container.decode(String.self, forKey: .title)
        message = try container.decode(String.self, forKey: .message)
        resultTexts = try container.decodeIfPresent(ResultTexts.self, forKey: .resultTexts)
        if decoder.userInfo[Self.strictAttributes] as? Bool == true {
            attributes = try container.decodeIfPresent([OperationAttribute].self, forKey: .attributes) ?? []
        } else {
            attributes =
                try container.decodeIfPresent([LenientAttribute].self, forKey: .attributes)?.compactMap(\.attribute)
                ?? []
        }
    }

    private struct LenientAttribute: Decodable {
        var attribute: OperationAttribute?
        init(from decoder: any Decoder) throws {
            guard var attribute = try? OperationAttribute(from: decoder) else { return }
            if OperationAttribute.Kind(rawValue: attribute.type) == nil {
                attribute = OperationAttribute(type: OperationAttribute.Kind.unknown.rawValue, id: attribute.id)
                    .with(label: attribute.label)
            }
            self.attribute = (try? attribute.validate()) != nil ? attribute : nil
        }
    }
}

/// Texts shown after the user approved, after a failure, and after a rejection.
public struct ResultTexts: Codable, Sendable, Equatable {
    public var success: String?
    public var failure: String?
    public var reject: String?

    /// Creates the texts.
    public init(success: String? = nil, failure: String? = nil, reject: String? = nil) {
        self.success = success
        self.failure = failure
        self.reject = reject
    }
}

/// One attribute of an operation's form. Every attribute has `type`, `id` and `label`; the other fields belong to
/// one type each (see ``Kind``) and are absent otherwise.
public struct OperationAttribute: Codable, Sendable, Equatable {
    /// The attribute types.
    public enum Kind: String, Sendable, CaseIterable {
        case amount = "AMOUNT"
        case amountConversion = "AMOUNT_CONVERSION"
        case keyValue = "KEY_VALUE"
        case note = "NOTE"
        case heading = "HEADING"
        case alert = "ALERT"
        case partyInfo = "PARTY_INFO"
        case image = "IMAGE"
        /// A type this version does not know (client side only).
        case unknown = "UNKNOWN"
    }

    public var type: String
    public var id: String
    public var label: String?
    // AMOUNT
    public var amount: Decimal?
    public var currency: String?
    public var amountFormatted: String?
    public var currencyFormatted: String?
    public var valueFormatted: String?
    // AMOUNT_CONVERSION
    public var dynamic: Bool?
    public var sourceAmount: Decimal?
    public var sourceCurrency: String?
    public var sourceAmountFormatted: String?
    public var sourceCurrencyFormatted: String?
    public var sourceValueFormatted: String?
    public var targetAmount: Decimal?
    public var targetCurrency: String?
    public var targetAmountFormatted: String?
    public var targetCurrencyFormatted: String?
    public var targetValueFormatted: String?
    // KEY_VALUE
    public var value: String?
    // NOTE
    public var note: String?
    // ALERT
    public var alertType: String?
    public var title: String?
    public var message: String?
    // PARTY_INFO
    public var partyInfo: PartyInfo?
    // IMAGE
    public var thumbnailUrl: String?
    public var originalUrl: String?

    /// An attribute of `type` with only its id set; set the type's fields next.
    public init(type: String, id: String) {
        self.type = type
        self.id = id
    }

    /// This attribute with `label` set.
    public func with(label: String?) -> OperationAttribute {
        var copy = self
        copy.label = label
        return copy
    }

    /// The attribute's kind, or `nil` for a type this version does not know.
    public var kind: Kind? { Kind(rawValue: type) }

    /// Throws unless the fields the type needs are present (and the type is known).
    public func validate() throws {
        func require(_ present: Bool, _ fields: String) throws {
            guard present else {
                throw OperationDataError(message: "Attribute \(id) of type \(type) needs \(fields).")
            }
        }
        guard !id.isEmpty else { throw OperationDataError(message: "Every attribute needs an id.") }
        guard let kind else {
            throw OperationDataError(
                message: "Attribute \(id) has the unknown type \(type); known: "
                    + Kind.allCases.filter { $0 != .unknown }.map(\.rawValue).joined(separator: ", ") + ".")
        }
        switch kind {
        case .amount: try require(amount != nil && currency != nil, "amount and currency")
        case .amountConversion:
            try require(
                dynamic != nil && sourceAmount != nil && sourceCurrency != nil && targetAmount != nil
                    && targetCurrency != nil,
                "dynamic, sourceAmount, sourceCurrency, targetAmount and targetCurrency")
        case .keyValue: try require(value != nil, "value")
        case .note: try require(note != nil, "note")
        case .heading, .unknown: break
        case .alert: try require(alertType != nil && message != nil, "alertType and message")
        case .partyInfo: try require(partyInfo != nil, "partyInfo")
        case .image: try require(thumbnailUrl != nil, "thumbnailUrl")
        }
        for case (let name, let amount?) in [
            ("amount", amount), ("sourceAmount", sourceAmount), ("targetAmount", targetAmount),
        ]
        where !Self.amountRange.contains(amount.magnitude) && !amount.isZero {
            throw OperationDataError(
                message: "Attribute \(id): \(name) must be 0 or of a magnitude from 1e-38 to 1e38.")
        }
    }

    /// The magnitudes an amount may have besides 0 (the bounds the OpenAPI document states).
    public static let amountRange =
        Decimal(
            sign: .plus, exponent: -38, significand: 1)...Decimal(
            sign: .plus, exponent: 38, significand: 1)
}

/// A third party shown by a `PARTY_INFO` attribute.
public struct PartyInfo: Codable, Sendable, Equatable {
    public var logoUrl: String?
    public var name: String
    public var description: String?
    public var websiteUrl: String?

    /// Creates the value.
    public init(logoUrl: String?, name: String, description: String?, websiteUrl: String?) {
        self.logoUrl = logoUrl
        self.name = name
        self.description = description
        self.websiteUrl = websiteUrl
    }
}

/// Presentation hints: button order, blocking during a call, screens before and after approval.
public struct OperationUI: Codable, Sendable, Equatable {
    public var flipButtons: Bool?
    public var blockApprovalOnCall: Bool?
    public var preApprovalScreen: PreApprovalScreen?
    public var postApprovalScreen: PostApprovalScreen?

    /// Creates the hints.
    public init(
        flipButtons: Bool? = nil, blockApprovalOnCall: Bool? = nil, preApprovalScreen: PreApprovalScreen? = nil,
        postApprovalScreen: PostApprovalScreen? = nil
    ) {
        self.flipButtons = flipButtons
        self.blockApprovalOnCall = blockApprovalOnCall
        self.preApprovalScreen = preApprovalScreen
        self.postApprovalScreen = postApprovalScreen
    }
}

/// A screen shown before the approval: `WARNING`, `INFO` or `QR_SCAN` (proximity check).
public struct PreApprovalScreen: Codable, Sendable, Equatable {
    public var type: String
    public var heading: String
    public var message: String
    public var items: [String]?
    /// e.g. `SLIDER`.
    public var approvalType: String?

    /// Creates the screen.
    public init(type: String, heading: String, message: String, items: [String]? = nil, approvalType: String? = nil) {
        self.type = type
        self.heading = heading
        self.message = message
        self.items = items
        self.approvalType = approvalType
    }
}

/// A screen shown after the approval: `REVIEW` (payload `attributes`), `MERCHANT_REDIRECT` (payload
/// `redirectText`, `redirectUrl`, `countdown`) or `GENERIC` (any payload).
public struct PostApprovalScreen: Codable, Sendable, Equatable {
    public var type: String
    public var heading: String
    public var message: String
    public var payload: JSONValue?

    /// Creates the screen.
    public init(type: String, heading: String, message: String, payload: JSONValue? = nil) {
        self.type = type
        self.heading = heading
        self.message = message
        self.payload = payload
    }
}

/// Number matching: the page where the person started (or a call-centre agent) shows a number; the phone shows three
/// numbers to choose from (`choose`) or a field to type it in (`type`), and the approval carries the number — inside
/// the signed request body. A wrong number rejects the operation.
public struct NumberMatching: Codable, Sendable, Equatable {
    /// `choose` or `type`.
    public var mode: String
    /// `choose`: three two-digit numbers, one of them right, in random order; `type`: empty.
    public var choices: [Int]

    public init(mode: String, choices: [Int]) {
        self.mode = mode
        self.choices = choices
    }

    public static let choose = "choose"
    public static let type = "type"
    public static let off = "off"
}
