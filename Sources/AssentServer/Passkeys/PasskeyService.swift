import AssentCrypto
import AssentModel
import Crypto
import Foundation
import X509

/// The relying party of passkeys (WebAuthn Level 3): options for the browser, and the two ceremonies verified
/// against a challenge this server issued (32 random bytes, stored as their SHA-256, used once, for 5 minutes).
/// The TFA provider, passwordless sign-in and the account page all go through here.
struct PasskeyService: Sendable {
    /// The part of the store this sees.
    let store: any PasskeyStore & TFAStore
    let clock: WallClock
    let audit: Auditor
    let openID: OpenIDSettings
    let tfa: TFASettings
    let flows: TFAService

    /// How long a ceremony's challenge lives, and the timeout the browser is given.
    static let challengeLifetime = 300

    /// Who the browser is asked to make or use a credential for.
    struct RelyingParty: Sendable, Equatable {
        var id: String
        var name: String
        var origins: [String]
    }

    /// The application's passkey policy with its defaults.
    func policy(_ applicationId: String) async throws -> PasskeyPolicy {
        try await flows.policy(applicationId).passkeys ?? PasskeyPolicy()
    }

    /// The relying party of `application`: the policy's, else the issuer URL's host and origin (`localhost` in
    /// place of an IP address, which WebAuthn does not take as an RP ID).
    func relyingParty(_ application: ApplicationRecord, _ policy: PasskeyPolicy) -> RelyingParty {
        var id = policy.relyingPartyId
        var origins = policy.origins
        if id == nil || origins == nil, let issuer = URLComponents(string: openID.issuer),
            let scheme = issuer.scheme, var host = issuer.host
        {
            if host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) { host = "localhost" }
            id = id ?? host
            origins = origins ?? ["\(scheme)://\(host)" + (issuer.port.map { ":\($0)" } ?? "")]
        }
        return RelyingParty(id: id ?? "localhost", name: application.name, origins: origins ?? [])
    }

    // MARK: Options

    /// Options for `navigator.credentials.create()`: a new credential for `userId`, none of the account's existing
    /// ones again; discoverable when passkeys may sign in alone.
    func creationOptions(
        _ application: ApplicationRecord, userId: String, assertionHash: Data? = nil
    ) async throws -> PasskeyOptionsResponse {
        let policy = try await policy(application.id)
        let party = relyingParty(application, policy)
        let handle = try await store.passkeyUserHandle(
            applicationId: application.id, userId: userId, proposed: Bytes.random(count: 32))
        let account = try await store.tfaAccount(applicationId: application.id, userId: userId)
        let existing = try await store.passkeys(applicationId: application.id, userId: userId)
        let userVerification = policy.userVerification ?? "preferred"
        var options = PasskeyOptions(
            challenge: try await newChallenge(
                application.id, userId: userId, purpose: .register, assertionHash: assertionHash,
                userVerification: userVerification == "required"),
            timeout: Self.challengeLifetime * 1000)
        options.rp = .init(id: party.id, name: party.name)
        options.user = .init(id: Base64URL.encode(handle), name: userId, displayName: account?.displayName ?? userId)
        options.pubKeyCredParams = COSEKey.Algorithm.defaults.map { .init(alg: $0.rawValue) }
        options.excludeCredentials = existing.map(Self.descriptor)
        let discoverable = policy.firstFactor ?? true
        options.authenticatorSelection = .init(
            residentKey: discoverable ? "required" : "preferred", requireResidentKey: discoverable,
            userVerification: userVerification)
        options.attestation = policy.attestation == "direct" ? "direct" : "none"
        return PasskeyOptionsResponse(publicKey: options)
    }

    /// Options for `navigator.credentials.get()`: the account's credentials when the user is known, else none
    /// (the browser offers its discoverable ones; passwordless sign-in always requires user verification).
    func requestOptions(
        _ application: ApplicationRecord, userId: String?, purpose: PasskeyChallengeRecord.Purpose,
        assertionHash: Data? = nil
    ) async throws -> PasskeyOptionsResponse {
        let policy = try await policy(application.id)
        // A passwordless sign-in and a browser's approval stand for the person alone: the user is verified.
        let userVerification =
            purpose == .signIn || purpose == .approve ? "required" : policy.userVerification ?? "preferred"
        var options = PasskeyOptions(
            challenge: try await newChallenge(
                application.id, userId: userId, purpose: purpose, assertionHash: assertionHash,
                userVerification: userVerification == "required"),
            timeout: Self.challengeLifetime * 1000)
        options.rpId = relyingParty(application, policy).id
        options.userVerification = userVerification
        if let userId {
            options.allowCredentials = try await store.passkeys(applicationId: application.id, userId: userId)
                .map(Self.descriptor)
        }
        return PasskeyOptionsResponse(publicKey: options)
    }

    private static func descriptor(_ passkey: PasskeyRecord) -> PasskeyDescriptor {
        PasskeyDescriptor(
            id: Base64URL.encode(passkey.credentialId),
            transports: passkey.transports.isEmpty ? nil : passkey.transports)
    }

    private func newChallenge(
        _ applicationId: String, userId: String?, purpose: PasskeyChallengeRecord.Purpose, assertionHash: Data?,
        userVerification: Bool
    ) async throws -> String {
        let challenge = Bytes.random(count: 32)
        let now = clock.millis
        try await store.insertPasskeyChallenge(
            PasskeyChallengeRecord(
                challengeHash: Data(SHA256.hash(data: challenge)), applicationId: applicationId, userId: userId,
                purpose: purpose, assertionHash: assertionHash, userVerification: userVerification, createdAt: now,
                expiresAt: now + Millis(Self.challengeLifetime) * 1000))
        return Base64URL.encode(challenge)
    }

    // MARK: Ceremonies

    /// Verifies a new credential for `userId` and stores it as an active passkey factor named `name`.
    func register(
        _ application: ApplicationRecord, userId: String, credential: RegistrationCredential, name: String?,
        assertionHash: Data? = nil
    ) async throws -> PasskeyRecord {
        let challenge = try await takeChallenge(
            credential.response.clientDataJSON, application: application.id, userId: userId, purpose: .register,
            assertionHash: assertionHash)
        let policy = try await policy(application.id)
        let party = relyingParty(application, policy)
        let roots = policy.attestation == "direct" ? tfa.passkeyAttestationRoots : [:]
        let expectation = RegistrationExpectation(
            challenge: challenge.challenge, origins: party.origins, relyingPartyID: party.id,
            requireUserVerification: challenge.record.userVerification,
            trust: AttestationTrust(roots: roots, time: clock.now()))
        let registered: RegisteredCredential
        do {
            registered = try await WebAuthn.verifyRegistration(credential, expecting: expectation)
        } catch {
            await audit(
                .passkeyRefused, userId: userId, application: application.id, actor: "user",
                "A passkey registration was refused (\(error.code.rawValue)).")
            throw Self.refusal(error)
        }
        if policy.attestation == "direct", !registered.attestation.trusted {
            throw TFAError(
                status: .badRequest, error: .passkeyRefused,
                message: "This application accepts only authenticators whose attestation it trusts; this one's "
                    + "(\(registered.attestation.format)) is not.")
        }
        let now = clock.millis
        let label = Self.name(name, registered)
        let factor = TFAFactorRecord(
            id: TFATokens.id(), applicationId: application.id, userId: userId, provider: .passkey, state: .active,
            destination: label, createdAt: now, lastVerifiedAt: now)
        let passkey = PasskeyRecord(
            factorId: factor.id, applicationId: application.id, userId: userId, credentialId: registered.id,
            publicKey: registered.publicKey, algorithm: registered.algorithm.rawValue,
            signCount: Int64(registered.signCount), aaguid: registered.aaguid, transports: registered.transports,
            multiDevice: registered.multiDevice, backedUp: registered.backedUp,
            attestationFormat: registered.attestation.format, attested: registered.attestation.trusted,
            createdAt: now)
        guard try await store.insertPasskey(passkey, factor: factor) else {
            throw TFAError(
                status: .conflict, error: .passkeyExists, message: "This passkey is registered already.")
        }
        await audit(
            .passkeyAdded, userId: userId, application: application.id, actor: "user",
            "Passkey \(factor.id) \"\(label)\" added (\(registered.algorithm.name), attestation "
                + "\(registered.attestation.format)\(registered.multiDevice ? ", synced" : "")).")
        return passkey
    }

    /// Verifies a credential's answer to a challenge of `purpose` and records its use. `userId` is the account the
    /// ceremony is for when it is known (a second factor); a passwordless sign-in learns it from the credential.
    /// A signature counter that went backwards flags the credential (refused from then on) and is audited.
    func authenticate(
        _ application: ApplicationRecord, credential: AuthenticationCredential, userId: String?,
        purpose: PasskeyChallengeRecord.Purpose, assertionHash: Data? = nil
    ) async throws -> (PasskeyRecord, VerifiedAuthentication) {
        let challenge = try await takeChallenge(
            credential.response.clientDataJSON, application: application.id, userId: userId, purpose: purpose,
            assertionHash: assertionHash)
        let unknown = TFAError(
            status: .badRequest, error: .passkeyUnknown,
            message: "This passkey is not registered for this account: use another one, or another method.")
        guard let id = try? Base64URL.decodeLenient(credential.rawId, field: "rawId"),
            let passkey = try await store.passkey(applicationId: application.id, credentialId: id),
            userId == nil || passkey.userId == userId
        else { throw unknown }
        if let handle = credential.response.userHandle, !handle.isEmpty {
            let owner = try? await store.passkeyUser(
                applicationId: application.id, handle: Base64URL.decodeLenient(handle, field: "userHandle"))
            guard owner == passkey.userId else { throw unknown }
        } else if userId == nil {
            // WebAuthn §7.2 step 6: a sign-in that did not name its user learns it from the credential's user
            // handle, which must be there.
            throw TFAError(
                status: .badRequest, error: .passkeyUnknown,
                message: "A passwordless sign-in needs a discoverable passkey (one that names its account).")
        }
        guard passkey.flaggedAt == nil else {
            throw TFAError(
                status: .forbidden, error: .passkeyFlagged,
                message: "This passkey was blocked because it may have been copied: remove it and add a new one.")
        }
        let policy = try await policy(application.id)
        let party = relyingParty(application, policy)
        let expectation = AuthenticationExpectation(
            challenge: challenge.challenge, origins: party.origins, relyingPartyID: party.id,
            requireUserVerification: challenge.record.userVerification, publicKey: passkey.publicKey,
            signCount: UInt32(clamping: passkey.signCount))
        let verified: VerifiedAuthentication
        do {
            verified = try WebAuthn.verifyAuthentication(credential, expecting: expectation)
        } catch {
            if error.code == .signCount {
                try await store.flagPasskey(factorId: passkey.factorId, at: clock.millis)
                await audit(
                    .passkeyCounterWentBack, userId: passkey.userId, application: application.id, actor: "user",
                    "Passkey \(passkey.factorId) blocked: \(error.message)")
            } else {
                await audit(
                    .passkeyRefused, userId: passkey.userId, application: application.id, actor: "user",
                    "A passkey answer was refused (\(error.code.rawValue)).")
            }
            throw Self.refusal(error)
        }
        guard
            try await store.recordPasskeyUse(
                factorId: passkey.factorId, expected: passkey.signCount, signCount: Int64(verified.signCount),
                backedUp: verified.backedUp, at: clock.millis)
        else { throw Self.challengeSpent }
        return (passkey, verified)
    }

    /// RFC 8176 methods of a passkey use: a key bound to one device (`hwk`) or a synced one (`swk`), the
    /// authenticator's user-presence test (`user`), and two factors in one when it verified the user (`mfa`).
    static func methods(_ passkey: PasskeyRecord, userVerified: Bool) -> [String] {
        [passkey.multiDevice ? "swk" : "hwk", "user"] + (userVerified ? ["mfa"] : [])
    }

    // MARK: Support

    private static let challengeSpent = TFAError(
        status: .badRequest, error: .passkeyChallenge,
        message: "This passkey request expired or was answered already: try again.")

    /// Reads the challenge the browser answered and takes it: it must be unexpired, unused, and issued for this
    /// application, account, purpose and TFA challenge.
    private func takeChallenge(
        _ clientDataJSON: String, application: String, userId: String?, purpose: PasskeyChallengeRecord.Purpose,
        assertionHash: Data?
    ) async throws -> (challenge: Data, record: PasskeyChallengeRecord) {
        let clientData: CollectedClientData
        do {
            clientData = try CollectedClientData.parse(
                try Base64URL.decodeLenient(clientDataJSON, field: "clientDataJSON"))
        } catch {
            throw Self.refusal(error)
        }
        guard
            let record = try await store.takePasskeyChallenge(
                challengeHash: Data(SHA256.hash(data: clientData.challenge)), at: clock.millis),
            record.applicationId == application, record.purpose == purpose,
            userId == nil || record.userId == userId, record.assertionHash == assertionHash
        else { throw Self.challengeSpent }
        return (clientData.challenge, record)
    }

    /// A refused WebAuthn response as the API's error.
    static func refusal(_ error: WebAuthnError) -> TFAError {
        TFAError(status: .badRequest, error: .passkeyRefused, message: "The passkey was refused: \(error.message)")
    }

    /// The name a person gave, or one from what the authenticator is.
    private static func name(_ given: String?, _ credential: RegisteredCredential) -> String {
        let trimmed = (given ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        if !trimmed.isEmpty { return String(trimmed.prefix(64)) }
        return credential.multiDevice ? "Passkey" : "Security key"
    }
}
