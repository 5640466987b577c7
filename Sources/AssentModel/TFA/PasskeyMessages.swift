import AssentCrypto
import Foundation

/// How an application uses passkeys (WebAuthn credentials). Passkeys are a second factor when the TFA policy's
/// providers include `passkey`; ``firstFactor`` lets them stand for the whole sign-in.
public struct PasskeyPolicy: Codable, Sendable, Equatable {
    /// Whether a passkey alone signs a person in (passwordless, discoverable credentials with user verification).
    /// Default: true.
    public var firstFactor: Bool?
    /// What a passkey used as a second factor must show: `required` (PIN or biometry), `preferred` (default) or
    /// `discouraged`. Passwordless sign-in always requires user verification.
    public var userVerification: String?
    /// The relying-party ID (a registrable domain of the sign-in pages' host). Default: the issuer URL's host
    /// (`localhost` when the issuer is an IP address, which WebAuthn does not accept as an RP ID).
    public var relyingPartyId: String?
    /// The origins the ceremonies may run on. Default: the issuer URL's origin (with `localhost` for an IP
    /// address, as above).
    public var origins: [String]?
    /// `none` (default: any authenticator) or `direct` (only authenticators whose attestation chains to a root the
    /// operator configured with `assent serve --passkey-attestation-roots`).
    public var attestation: String?

    public init(
        firstFactor: Bool? = nil, userVerification: String? = nil, relyingPartyId: String? = nil,
        origins: [String]? = nil, attestation: String? = nil
    ) {
        self.firstFactor = firstFactor
        self.userVerification = userVerification
        self.relyingPartyId = relyingPartyId
        self.origins = origins
        self.attestation = attestation
    }
}

/// A credential descriptor (`PublicKeyCredentialDescriptorJSON`).
public struct PasskeyDescriptor: Codable, Sendable, Equatable {
    public var type = "public-key"
    /// The credential id, Base64URL.
    public var id: String
    public var transports: [String]?

    public init(id: String, transports: [String]?) {
        self.id = id
        self.transports = transports
    }
}

/// The `publicKey` member of the options a page passes to `navigator.credentials.create()` or `.get()`, in the
/// JSON form of WebAuthn Level 3 (`PublicKeyCredentialCreationOptionsJSON` / `…RequestOptionsJSON`, binary
/// members Base64URL): creation options carry `rp`, `user` and `pubKeyCredParams`, request options `rpId`.
public struct PasskeyOptions: Codable, Sendable, Equatable {
    public struct RelyingParty: Codable, Sendable, Equatable {
        public var id: String
        public var name: String

        public init(id: String, name: String) {
            self.id = id
            self.name = name
        }
    }

    public struct User: Codable, Sendable, Equatable {
        /// The user handle, Base64URL: random, never the user id.
        public var id: String
        public var name: String
        public var displayName: String

        public init(id: String, name: String, displayName: String) {
            self.id = id
            self.name = name
            self.displayName = displayName
        }
    }

    public struct Parameter: Codable, Sendable, Equatable {
        public var type = "public-key"
        public var alg: Int

        public init(alg: Int) { self.alg = alg }
    }

    public struct Selection: Codable, Sendable, Equatable {
        public var residentKey: String
        public var requireResidentKey: Bool
        public var userVerification: String

        public init(residentKey: String, requireResidentKey: Bool, userVerification: String) {
            self.residentKey = residentKey
            self.requireResidentKey = requireResidentKey
            self.userVerification = userVerification
        }
    }

    public var challenge: String
    /// Milliseconds.
    public var timeout: Int
    public var rp: RelyingParty?
    public var user: User?
    public var pubKeyCredParams: [Parameter]?
    public var excludeCredentials: [PasskeyDescriptor]?
    public var authenticatorSelection: Selection?
    public var attestation: String?
    public var rpId: String?
    public var allowCredentials: [PasskeyDescriptor]?
    public var userVerification: String?

    public init(challenge: String, timeout: Int) {
        self.challenge = challenge
        self.timeout = timeout
    }
}

/// Options for a ceremony: `{"publicKey": {…}}`, as the browser's API takes them.
public struct PasskeyOptionsResponse: Codable, Sendable, Equatable {
    public var publicKey: PasskeyOptions

    public init(publicKey: PasskeyOptions) { self.publicKey = publicKey }
}

/// `POST /api/tfa/passkey/register`: the new credential of a registration flow, and a name for it.
public struct PasskeyRegisterRequest: Codable, Sendable {
    public var assertion: String
    public var credential: RegistrationCredential
    public var name: String?

    public init(assertion: String, credential: RegistrationCredential, name: String? = nil) {
        self.assertion = assertion
        self.credential = credential
        self.name = name
    }
}

/// `POST /api/tfa/passkey/verify`: the account's credential answering the challenge.
public struct PasskeyVerifyRequest: Codable, Sendable {
    public var assertion: String
    public var credential: AuthenticationCredential

    public init(assertion: String, credential: AuthenticationCredential) {
        self.assertion = assertion
        self.credential = credential
    }
}

/// `POST /api/tfa/passkey/login/options`: options for a passwordless sign-in; with `userId`, the account's
/// credentials are listed (otherwise the browser offers its discoverable ones).
public struct PasskeyLoginOptionsRequest: Codable, Sendable {
    public var application: String?
    public var userId: String?

    public init(application: String? = nil, userId: String? = nil) {
        self.application = application
        self.userId = userId
    }
}

/// `POST /api/tfa/passkey/login`: a passwordless sign-in.
public struct PasskeyLoginRequest: Codable, Sendable {
    public var application: String?
    public var credential: AuthenticationCredential

    public init(application: String? = nil, credential: AuthenticationCredential) {
        self.application = application
        self.credential = credential
    }
}
