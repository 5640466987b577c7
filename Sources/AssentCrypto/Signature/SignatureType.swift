/// One authentication factor of a PowerAuth signature.
public enum SignatureFactor: String, Sendable, CaseIterable, Codable {
    /// Something the user has: the possession key, bound to the device.
    case possession
    /// Something the user knows: the knowledge key, protected by the PIN or password.
    case knowledge
    /// Something the user is: the biometry key, released by the platform's biometric check.
    case biometry
}

/// The factors a signature is computed with, written as in the `pa_signature_type` header field.
public enum SignatureType: String, Sendable, CaseIterable, Codable {
    /// Possession only (1FA), e.g. for MAC-token creation and operation cancel.
    case possession
    /// Possession and knowledge (2FA, PIN).
    case possessionKnowledge = "possession_knowledge"
    /// Possession and biometry (2FA, biometry).
    case possessionBiometry = "possession_biometry"
    /// All three factors (3FA).
    case possessionKnowledgeBiometry = "possession_knowledge_biometry"

    /// The factors in protocol order: possession, knowledge, biometry.
    public var factors: [SignatureFactor] {
        switch self {
        case .possession: [.possession]
        case .possessionKnowledge: [.possession, .knowledge]
        case .possessionBiometry: [.possession, .biometry]
        case .possessionKnowledgeBiometry: [.possession, .knowledge, .biometry]
        }
    }

    /// Whether a successful signature of this type proves more than possession, so that it resets the
    /// failed-attempt count of an activation.
    public var provesUserPresence: Bool { factors.count > 1 }

    /// Parses a header value such as `possession_knowledge`, throwing a typed error for unknown types.
    public init(parsing text: String) throws {
        guard let type = SignatureType(rawValue: text) else {
            throw AssentCryptoError(.invalidSignatureType, "Unknown signature type.")
        }
        self = type
    }
}
