import AssentCrypto
import Crypto
import Foundation
import Testing
import X509

/// The WebAuthn relying-party vectors in `../shared/vectors/webauthn/`: real registration and authentication
/// responses recorded from authenticators, parsing cases and SafetyNet statements, each with the outcome
/// py_webauthn's tests assert. Every field a vector expects is compared with what our code reports; every error
/// vector must fail at the check its test names (the table below), not merely fail.
@Suite("WebAuthn vectors")
struct WebAuthnVectorTests {
    /// The check each error vector must fail at, by the test it comes from.
    static let expectedErrors: [String: WebAuthnError.Code] = [
        "test_raises_exception_on_unsupported_attestation_type": .attestationFormat,
        "test_raises_when_root_cert_invalid_for_response": .attestationTrust,
        "test_raises_useful_error_on_bad_attestation_object": .malformed,
        "test_verify_attestation_with_unsupported_token_binding_status": .tokenBinding,
        "test_raises_exception_on_incorrect_public_key": .signature,
        "test_raises_exception_on_uv_required_but_false": .userVerification,
        "test_raises_exception_on_bad_json": .clientData,
        "test_requires_type": .clientData,
        "test_requires_challenge": .clientData,
        "test_requires_origin": .clientData,
        "test_require_status_in_token_binding_when_present": .clientData,
        "test_raises_on_invalid_backup_state_flags": .backupFlags,
        "test_raise_attestation_android_safetynet_basic_integrity_false_cts_profile_match_false": .attestation,
    ]

    /// py_webauthn's default `supported_pub_key_algs`.
    static let defaultAlgorithms: [Int] = [-7, -8, -36, -37, -38, -39, -257, -258, -259]

    @Test("webauthn/registration.json: every registration verifies or fails as recorded")
    func registration() async throws {
        let anchors = try Self.trustAnchors()
        try await Self.run("webauthn/registration.json", expected: 24) { vector in
            let input = try vector.object("input")
            let credential = try JSONDecoder().decode(
                RegistrationCredential.self, from: JSONSerialization.data(withJSONObject: try input.any("credential")))
            var roots = anchors
            if let extra = input["pem_root_certs_by_fmt"] as? [String: [String]] {
                for (format, pems) in extra {
                    roots[format, default: []] += try pems.flatMap { try AttestationTrust.certificates(pem: $0) }
                }
            }
            let algorithms = (input["supported_pub_key_algs"] as? [Int] ?? Self.defaultAlgorithms)
                .compactMap(COSEKey.Algorithm.init(rawValue:))
            let expectation = RegistrationExpectation(
                challenge: try Base64URL.decodeLenient(try input.string("expected_challenge"), field: "challenge"),
                origins: try input.origins(), relyingPartyID: try input.string("expected_rp_id"),
                requireUserVerification: input["require_user_verification"] as? Bool ?? false,
                requireUserPresence: input["require_user_presence"] as? Bool ?? true, algorithms: algorithms,
                trust: AttestationTrust(roots: roots, time: try input.time()))
            let result: RegisteredCredential
            do {
                result = try await WebAuthn.verifyRegistration(credential, expecting: expectation)
            } catch {
                return try Self.expectError(error, vector)
            }
            if anchors[result.attestation.format] != nil, !result.attestation.trusted {
                throw Mismatch(description: "the \(result.attestation.format) chain was not validated to its root")
            }
            let object = try Base64URL.decodeLenient(credential.response.attestationObject, field: "attestationObject")
            return try Self.compare(
                vector,
                [
                    "fmt": result.attestation.format, "aaguid": result.aaguidText,
                    "credential_id": Base64URL.encode(result.id),
                    "credential_public_key": Base64URL.encode(result.publicKey),
                    "attestation_object": Base64URL.encode(object), "credential_type": credential.type,
                    "sign_count": Int(result.signCount), "credential_backed_up": result.backedUp,
                    "credential_device_type": result.multiDevice ? "multi_device" : "single_device",
                    "user_verified": result.userVerified,
                ])
        }
    }

    @Test("A chain is trusted only through the roots named for its own format")
    func rootsPerFormat() async throws {
        let anchors = try Self.trustAnchors()
        var checked: Set<String> = []
        for vector in try Self.vectors("webauthn/registration.json") {
            let input = try vector.object("input")
            var roots = anchors
            for (format, pems) in input["pem_root_certs_by_fmt"] as? [String: [String]] ?? [:] {
                roots[format, default: []] += try pems.flatMap { try AttestationTrust.certificates(pem: $0) }
            }
            guard (try vector.object("expected"))["outcome"] as? String == "ok",
                let format = (try vector.object("info"))["attestation_format"] as? String, roots[format] != nil
            else { continue }
            let credential = try JSONDecoder().decode(
                RegistrationCredential.self, from: JSONSerialization.data(withJSONObject: try input.any("credential")))
            // Every root, but under the other formats' names: this format has none.
            let elsewhere = Dictionary(
                uniqueKeysWithValues: WebAuthn.attestationFormats.filter { $0 != format }.map {
                    ($0, roots.values.flatMap { $0 })
                })
            for (roots, trusted) in [(roots, true), (elsewhere, false)] {
                let expectation = RegistrationExpectation(
                    challenge: try Base64URL.decodeLenient(try input.string("expected_challenge"), field: "challenge"),
                    origins: try input.origins(), relyingPartyID: try input.string("expected_rp_id"),
                    algorithms: Self.defaultAlgorithms.compactMap(COSEKey.Algorithm.init(rawValue:)),
                    trust: AttestationTrust(roots: roots, time: try input.time()))
                let result = try await WebAuthn.verifyRegistration(credential, expecting: expectation)
                let name = try vector.string("name")
                #expect(result.attestation.trusted == trusted, "\(format): \(name)")
            }
            checked.insert(format)
        }
        // The formats whose recorded registrations come with their roots.
        #expect(checked == ["apple", "android-key"], "\(checked)")
    }

    @Test("Every attested registration is refused once its clientDataJSON gains one trailing space")
    func alteredRegistrations() async throws {
        let anchors = try Self.trustAnchors()
        var refused = 0
        for vector in try Self.vectors("webauthn/registration.json") {
            let input = try vector.object("input")
            let info = try vector.object("info")
            guard (try vector.object("expected"))["outcome"] as? String == "ok",
                let format = info["attestation_format"] as? String, format != "none"
            else { continue }
            var credential = try JSONDecoder().decode(
                RegistrationCredential.self, from: JSONSerialization.data(withJSONObject: try input.any("credential")))
            let clientData = try Base64URL.decodeLenient(credential.response.clientDataJSON, field: "clientDataJSON")
            credential.response.clientDataJSON = Base64URL.encode(clientData + Data(" ".utf8))
            let expectation = RegistrationExpectation(
                challenge: try Base64URL.decodeLenient(try input.string("expected_challenge"), field: "challenge"),
                origins: try input.origins(), relyingPartyID: try input.string("expected_rp_id"),
                algorithms: Self.defaultAlgorithms.compactMap(COSEKey.Algorithm.init(rawValue:)),
                trust: AttestationTrust(roots: anchors, time: try input.time()))
            let name = try vector.string("name")
            let error = await #expect(throws: WebAuthnError.self, "\(format): \(name)") {
                _ = try await WebAuthn.verifyRegistration(credential, expecting: expectation)
            }
            #expect(error?.code == .attestation, "\(format): \(String(describing: error))")
            refused += 1
        }
        print("webauthn/registration.json: \(refused) attested registrations refused once altered")
        #expect(refused == 11)
    }

    @Test("Every authentication is refused once its clientDataJSON gains one trailing space")
    func alteredAuthentications() throws {
        var refused = 0
        for vector in try Self.vectors("webauthn/authentication.json") {
            let input = try vector.object("input")
            let name = try vector.string("name")
            guard (try vector.object("expected"))["outcome"] as? String == "ok", !name.contains("ml_dsa_44") else {
                continue
            }
            var credential = try JSONDecoder().decode(
                AuthenticationCredential.self, from: JSONSerialization.data(withJSONObject: try input.any("credential"))
            )
            let clientData = try Base64URL.decodeLenient(credential.response.clientDataJSON, field: "clientDataJSON")
            credential.response.clientDataJSON = Base64URL.encode(clientData + Data(" ".utf8))
            let expectation = AuthenticationExpectation(
                challenge: try Base64URL.decodeLenient(try input.string("expected_challenge"), field: "challenge"),
                origins: try input.origins(), relyingPartyID: try input.string("expected_rp_id"),
                publicKey: try Base64URL.decodeLenient(try input.string("credential_public_key"), field: "key"),
                signCount: 0)
            let error = #expect(throws: WebAuthnError.self, "\(name)") {
                _ = try WebAuthn.verifyAuthentication(credential, expecting: expectation)
            }
            #expect(error?.code == .signature, "\(name): \(String(describing: error))")
            refused += 1
        }
        #expect(refused == 8)
    }

    @Test("webauthn/authentication.json: every authentication verifies or fails as recorded")
    func authentication() async throws {
        try await Self.run("webauthn/authentication.json", expected: 11) { vector in
            let input = try vector.object("input")
            let credential = try JSONDecoder().decode(
                AuthenticationCredential.self, from: JSONSerialization.data(withJSONObject: try input.any("credential"))
            )
            let expectation = AuthenticationExpectation(
                challenge: try Base64URL.decodeLenient(try input.string("expected_challenge"), field: "challenge"),
                origins: try input.origins(), relyingPartyID: try input.string("expected_rp_id"),
                requireUserVerification: input["require_user_verification"] as? Bool ?? false,
                publicKey: try Base64URL.decodeLenient(try input.string("credential_public_key"), field: "key"),
                signCount: UInt32(try input.any("credential_current_sign_count") as? Int ?? -1))
            let result: VerifiedAuthentication
            do {
                result = try WebAuthn.verifyAuthentication(credential, expecting: expectation)
            } catch let error as WebAuthnError where error.code == .unsupported {
                return .unsupported(error.message)
            } catch {
                return try Self.expectError(error, vector)
            }
            return try Self.compare(
                vector,
                [
                    "credential_id": Base64URL.encode(result.credentialID), "new_sign_count": Int(result.signCount),
                    "credential_backed_up": result.backedUp,
                    "credential_device_type": result.multiDevice ? "multi_device" : "single_device",
                    "user_verified": result.userVerified,
                ])
        }
    }

    @Test("webauthn/parse.json: authenticator data, attestation objects, client data, COSE keys, backup flags")
    func parse() async throws {
        try await Self.run("webauthn/parse.json", expected: 23) { vector in
            let input = try vector.object("input")
            let reported: [String: Any]
            do {
                switch try vector.string("function") {
                case "parse_authenticator_data":
                    let data = try AuthenticatorData.parse(
                        try Base64URL.decodeLenient(try input.string("authenticator_data"), field: "authData"))
                    reported = Self.fields(data, prefix: "")
                case "parse_attestation_object":
                    let object = try AttestationObject.parse(
                        try Base64URL.decodeLenient(try input.string("attestation_object"), field: "attestationObject"))
                    reported = Self.fields(object)
                case "parse_client_data_json":
                    let data = try CollectedClientData.parse(
                        try Base64URL.decodeLenient(try input.string("client_data_json"), field: "clientDataJSON"))
                    reported = Self.fields(data)
                case "decode_credential_public_key":
                    let key = try COSEKey(
                        decoding: try Base64URL.decodeLenient(try input.string("credential_public_key"), field: "key"))
                    reported = Self.fields(key)
                case "parse_backup_flags":
                    let flags = try input.object("flags")
                    var value = AuthenticatorData.Flags()
                    for (name, flag) in [
                        ("up", AuthenticatorData.Flags.userPresent), ("uv", .userVerified), ("be", .backupEligible),
                        ("bs", .backedUp), ("at", .attestedCredentialData), ("ed", .extensionData),
                    ] where flags[name] as? Bool == true {
                        value.insert(flag)
                    }
                    let state = try AuthenticatorData.backupState(value)
                    reported = [
                        "credential_device_type": state.multiDevice ? "multi_device" : "single_device",
                        "credential_backed_up": state.backedUp,
                    ]
                case let other:
                    throw Mismatch(description: "unknown function \(other)")
                }
            } catch let error as WebAuthnError {
                return try Self.expectError(error, vector)
            }
            return try Self.compare(vector, reported)
        }
    }

    @Test("webauthn/attestation_statement.json: SafetyNet statements")
    func safetyNet() async throws {
        let anchors = try Self.trustAnchors()
        try await Self.run("webauthn/attestation_statement.json", expected: 3) { vector in
            let input = try vector.object("input")
            do {
                if let credential = input["credential"] as? [String: Any] {
                    // The whole statement of a real registration, its chain judged at the pinned time as the test
                    // does, without the ±timestamp window (the test turns it off).
                    let response = try credential.object("response")
                    let object = try AttestationObject.parse(
                        try Base64URL.decodeLenient(
                            try response.string("attestationObject"), field: "attestationObject"))
                    let clientData = try Base64URL.decodeLenient(
                        try response.string("clientDataJSON"), field: "clientData")
                    let trust = AttestationTrust(
                        roots: ["android-safetynet": anchors["android-safetynet"] ?? []], time: try input.time(),
                        safetyNetTolerance: nil)
                    let verified = try await object.verifyStatement(
                        clientDataHash: Data(SHA256.hash(data: clientData)), trust: trust)
                    guard verified.trusted else { throw Mismatch(description: "the chain was not validated") }
                } else {
                    // The test's mocks skip the nonce and the chain (a self-made CA): what remains is the JWS
                    // signature, the attest.android.com name and the integrity verdict.
                    let statement = try input.object("attestation_statement")
                    let cbor = CBOR.map([
                        (.text("ver"), .text(try statement.string("ver"))),
                        (.text("response"), .bytes(Data(try statement.string("response").utf8))),
                    ])
                    try SafetyNetAttestation.verify(cbor).checkIntegrity()
                }
            } catch let error as WebAuthnError {
                return try Self.expectError(error, vector)
            }
            return try Self.compare(vector, ["returned": true])
        }
    }

    // MARK: The runner

    enum Outcome {
        case passed
        case unsupported(String)
    }

    static func vectors(_ path: String) throws -> [[String: Any]] {
        let url = Vectors.directory.appendingPathComponent(path)
        guard let data = FileManager.default.contents(atPath: url.path),
            let file = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let vectors = file["vectors"] as? [[String: Any]]
        else { throw Mismatch(description: "\(path): the vector file is missing or has no vectors") }
        return vectors
    }

    /// Runs every vector of a file and prints `FILE: N/N vectors passed`; only ML-DSA-44, which swift-crypto does
    /// not offer, may be reported as unsupported.
    static func run(
        _ path: String, expected: Int, sourceLocation: SourceLocation = #_sourceLocation,
        _ check: ([String: Any]) async throws -> Outcome
    ) async throws {
        let vectors = try Self.vectors(path)
        var passed = 0
        var unsupported: [String] = []
        for vector in vectors {
            let name = vector["name"] as? String ?? "?"
            do {
                switch try await check(vector) {
                case .passed: passed += 1
                case .unsupported(let reason):
                    guard name.contains("ml_dsa_44") else { throw Mismatch(description: "unsupported: \(reason)") }
                    unsupported.append(reason)
                }
            } catch {
                Issue.record("\(path) \(name): \(error)", sourceLocation: sourceLocation)
            }
        }
        let note = unsupported.isEmpty ? "" : ", \(unsupported.count) unsupported (\(unsupported[0]))"
        print("\(path): \(passed)/\(vectors.count) vectors passed\(note)")
        #expect(vectors.count == expected, "\(path) holds \(vectors.count) vectors", sourceLocation: sourceLocation)
        #expect(passed + unsupported.count == vectors.count, sourceLocation: sourceLocation)
    }

    /// An error passes when the vector expects one and it comes from the check the test names.
    static func expectError(_ error: any Error, _ vector: [String: Any]) throws -> Outcome {
        let expected = try vector.object("expected")
        guard expected["outcome"] as? String == "error" else {
            throw Mismatch(description: "refused: \(error)")
        }
        let test = (try vector.string("name")).components(separatedBy: "::").last ?? ""
        guard let code = expectedErrors[test] else { throw Mismatch(description: "no expected check for \(test)") }
        guard let refusal = error as? WebAuthnError, refusal.code == code else {
            throw Mismatch(description: "refused by another check than \(code): \(error)")
        }
        return .passed
    }

    /// Compares every field the vector expects with the value our code reported (JSON-normalized).
    static func compare(_ vector: [String: Any], _ reported: [String: Any]) throws -> Outcome {
        let expected = try vector.object("expected")
        guard expected["outcome"] as? String == "ok" else {
            throw Mismatch(description: "accepted, but the vector expects \(expected["error_class"] ?? "an error")")
        }
        for (key, value) in try expected.object("fields") {
            guard let actual = reported[key] else { throw Mismatch(description: "field \(key) is not reported") }
            guard try normalized(actual) == normalized(value) else {
                throw Mismatch(description: "\(key): got \(actual), expected \(value)")
            }
        }
        return .passed
    }

    static func normalized(_ value: Any) throws -> Data {
        try JSONSerialization.data(withJSONObject: [value], options: [.sortedKeys, .fragmentsAllowed])
    }

    // MARK: What our types report, under py_webauthn's field names

    static func fields(_ data: AuthenticatorData, prefix: String) -> [String: Any] {
        var fields: [String: Any] = [
            "\(prefix)rp_id_hash": Base64URL.encode(data.rpIDHash),
            "\(prefix)flags.up": data.flags.contains(.userPresent),
            "\(prefix)flags.uv": data.flags.contains(.userVerified),
            "\(prefix)flags.at": data.flags.contains(.attestedCredentialData),
            "\(prefix)flags.ed": data.flags.contains(.extensionData),
            "\(prefix)sign_count": Int(data.signCount),
            "\(prefix)attested_credential_data|present": data.attestedCredential != nil,
            "\(prefix)extensions|present": data.extensions != nil,
            "\(prefix)extensions": data.extensions.map(json) ?? NSNull(),
        ]
        if let extensions = data.extensions { fields["\(prefix)extensions|cbor"] = json(extensions) }
        if let credential = data.attestedCredential {
            fields["\(prefix)attested_credential_data.aaguid"] = Base64URL.encode(credential.aaguid)
            fields["\(prefix)attested_credential_data.credential_id"] = Base64URL.encode(credential.credentialID)
            fields["\(prefix)attested_credential_data.credential_public_key"] = Base64URL.encode(credential.publicKey)
        }
        return fields
    }

    static func fields(_ object: AttestationObject) -> [String: Any] {
        var fields = fields(object.authenticatorData, prefix: "auth_data.")
        fields["fmt"] = object.format
        fields["att_stmt.sig"] = object.signature.map(Base64URL.encode) ?? NSNull()
        fields["att_stmt.sig|present"] = object.signature != nil
        fields["att_stmt.x5c"] = object.certificateChain.map { $0.map(Base64URL.encode) } ?? NSNull()
        fields["att_stmt.x5c|present"] = object.certificateChain != nil
        fields["att_stmt.x5c|len"] = object.certificateChain?.count ?? 0
        fields["att_stmt.alg"] = object.algorithm ?? NSNull()
        for (key, member) in [
            ("att_stmt.ver", "ver"), ("att_stmt.cert_info", "certInfo"), ("att_stmt.pub_area", "pubArea"),
            ("att_stmt.response", "response"),
        ] {
            fields[key] = object.statement[.text(member)].map(json) ?? NSNull()
        }
        return fields
    }

    static func fields(_ data: CollectedClientData) -> [String: Any] {
        [
            "type": data.type, "challenge": Base64URL.encode(data.challenge), "origin": data.origin,
            "cross_origin": data.crossOrigin ?? NSNull(), "token_binding|present": data.tokenBinding != nil,
            "token_binding": data.tokenBinding.map { _ in "present" as Any } ?? NSNull(),
            "token_binding.status": data.tokenBinding?.status ?? NSNull(),
            "token_binding.id": data.tokenBinding?.id ?? NSNull(),
        ]
    }

    static func fields(_ key: COSEKey) -> [String: Any] {
        var fields: [String: Any] = ["alg": key.algorithm.rawValue]
        switch key.material {
        case .ec2(let curve, let x, let y):
            fields.merge(
                [
                    "|class": "DecodedEC2PublicKey", "kty": 2, "crv": curve, "x": Base64URL.encode(x),
                    "y": Base64URL.encode(y),
                ]
            ) { $1 }
        case .okp(let curve, let x):
            fields.merge(["|class": "DecodedOKPPublicKey", "kty": 1, "crv": curve, "x": Base64URL.encode(x)]) { $1 }
        case .rsa(let n, let e):
            fields.merge([
                "|class": "DecodedRSAPublicKey", "kty": 3, "n": Base64URL.encode(n), "e": Base64URL.encode(e),
            ]) {
                $1
            }
        case .akp(let publicKey):
            fields.merge(["|class": "DecodedAKPPublicKey", "kty": 7, "pub": Base64URL.encode(publicKey)]) { $1 }
        }
        for name in ["x", "y", "n", "e"] { fields["\(name)|present"] = fields[name] != nil }
        return fields
    }

    /// A CBOR item as the JSON the vectors write it in (bytes as Base64URL).
    static func json(_ item: CBOR) -> Any {
        switch item {
        case .unsigned, .negative: item.int ?? NSNull()
        case .bytes(let data): Base64URL.encode(data)
        case .text(let text): text
        case .array(let items): items.map(json)
        case .map(let pairs):
            Dictionary(
                pairs.map { (key, value) in (key.int.map(String.init) ?? (json(key) as? String ?? "?"), json(value)) }
            ) {
                first, _ in first
            }
        case .tagged(_, let inner): json(inner)
        case .bool(let flag): flag
        case .float(let value): value
        case .simple, .null, .undefined: NSNull()
        }
    }

    /// The public roots py_webauthn trusts on its own, by format.
    static func trustAnchors() throws -> [String: [Certificate]] {
        let url = Vectors.directory.appendingPathComponent("webauthn/trust_anchors.json")
        guard let data = FileManager.default.contents(atPath: url.path),
            let file = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let anchors = file["anchors"] as? [[String: Any]]
        else { throw Mismatch(description: "webauthn/trust_anchors.json is missing") }
        var roots: [String: [Certificate]] = [:]
        for anchor in anchors {
            roots[try anchor.string("used_by_format"), default: []] += try AttestationTrust.certificates(
                pem: try anchor.string("pem"))
        }
        return roots
    }
}

extension Dictionary where Key == String, Value == Any {
    fileprivate func any(_ key: String) throws -> Any {
        guard let value = self[key] else { throw Mismatch(description: "vector field \(key) is missing") }
        return value
    }

    fileprivate func object(_ key: String) throws -> [String: Any] {
        guard let value = self[key] as? [String: Any] else {
            throw Mismatch(description: "vector field \(key) is no object")
        }
        return value
    }

    fileprivate func string(_ key: String) throws -> String {
        guard let value = self[key] as? String else { throw Mismatch(description: "vector field \(key) is no string") }
        return value
    }

    fileprivate func origins() throws -> [String] {
        if let list = self["expected_origin"] as? [String] { return list }
        return [try string("expected_origin")]
    }

    fileprivate func time() throws -> Date? {
        guard let text = self["now"] as? String else { return nil }
        guard let date = ISO8601DateFormatter().date(from: text) else {
            throw Mismatch(description: "bad time \(text)")
        }
        return date
    }
}
