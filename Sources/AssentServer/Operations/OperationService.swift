import AssentCrypto
import AssentModel
import Foundation
import Logging

/// Operations: created by a relying party, listed, claimed, approved or rejected by a device, approved offline by
/// a typed code, canceled by the operator, expired by time.
///
/// Every status change is one conditional update of the operation's row (``AssentStore/updateOperation(_:expectedVersion:)``),
/// so of two concurrent approvals or an approval racing a rejection exactly one wins, and a finished operation
/// never changes again. The database writes the webhook event and the audit event of a status change in the same
/// statement.
public struct OperationService: Sendable {
    /// The part of the store this sees.
    let store: any ApplicationStore & ActivationStore & OperationStore
    let clock: WallClock
    let audit: Auditor
    let announcer: Announcer
    let logger: Logger
    let policy: SecurityPolicy
    let powerAuth: PowerAuthService
    let templates: OperationTemplateService
    /// Each application's rate limits (proximity checks, offline verifications).
    let applicationLimits: ApplicationRateLimitService
    let limiter: RateLimiter
    /// Runs an approval's writes in one commit, with this service rebuilt over it.
    let commit: Committer<OperationService>

    /// The longest status reason.
    static let statusReasonLimit = 32

    /// A decoder that keeps every form attribute as sent, so that validation can refuse a broken one.
    public static func strictDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.userInfo[FormData.strictAttributes] = true
        return decoder
    }
    /// The proximity TOTP: RFC 6238 with SHA-256, 8 digits, 30-second steps.
    static func proximityTOTP(seed: Data) throws -> TOTP {
        try TOTP(secret: seed, digits: 8, algorithm: .sha256, period: 30)
    }

    // MARK: Creating

    /// Creates an operation from a full request or from a template plus parameters.
    public func create(_ request: CreateOperationRequest, application: ApplicationRecord, actor: String) async throws
        -> OperationRecord
    {
        try await create(request, application: application, actor: actor, devices: nil)
    }

    /// Creates an operation only `devices` (activation ids of its user) see, when given.
    func create(
        _ request: CreateOperationRequest, application: ApplicationRecord, actor: String, devices: [String]?
    ) async throws -> OperationRecord {
        let resolved = try await templates.instantiate(
            request, in: application)
        var operation = try validated(resolved, application: application)
        operation.devices = devices
        try await store.insertOperation(operation)
        await audit(
            .operationCreated, userId: operation.userId, application: operation.applicationId, actor: actor,
            "Operation \(operation.id) (\(operation.name)) created"
                + (operation.userId == nil ? " without a user." : "."))
        // The insert wrote the push messages and the device event: wake their readers once this request's own
        // writes are done (on SQLite they share one connection).
        announcer.changed(userId: operation.userId)
        return operation
    }

    /// The rule for an operation's system name and a template's name: 1 to 64 ASCII letters, digits, `_`, `.`, `-`.
    static func isName(_ text: String) -> Bool {
        (1...64).contains(text.count)
            && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_.-".contains($0)) }
    }

    func validated(_ request: CreateOperationRequest, application: ApplicationRecord) throws -> OperationRecord {
        func invalid(_ message: String) -> AssentServerError { .invalidRequest(message) }
        if let userId = request.userId {
            guard UserID.isValid(userId) else { throw invalid(UserID.requirement) }
        }
        guard let name = request.name, Self.isName(name) else {
            throw invalid("name must be 1 to 64 letters, digits, '_', '.' or '-' (e.g. authorize_payment).")
        }
        guard let data = request.data else { throw invalid("data (the operation data string) is missing.") }
        do {
            _ = try OperationData(parsing: data)
        } catch let error as OperationDataError {
            throw invalid("data is not valid operation data: \(error.message)")
        }
        guard let forms = request.formData, !forms.isEmpty else {
            throw invalid("formData needs the texts of at least one language, e.g. {\"en\": {\"title\", \"message\"}}.")
        }
        var formData: [String: FormData] = [:]
        for (language, form) in forms {
            let tag = language.lowercased()
            guard (1...35).contains(tag.count),
                tag.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
            else { throw invalid("formData key \(language) is not a language tag.") }
            guard !form.title.isEmpty else { throw invalid("formData.\(language).title is empty.") }
            for attribute in form.attributes {
                do {
                    try attribute.validate()
                } catch let error as OperationDataError {
                    throw invalid(error.message)
                }
            }
            formData[tag] = form
        }
        let defaultLanguage =
            request.defaultLanguage?.lowercased() ?? (formData["en"] != nil ? "en" : formData.keys.min()!)
        guard formData[defaultLanguage] != nil else {
            throw invalid("defaultLanguage \(defaultLanguage) has no formData.")
        }
        let allowed = request.allowedSignatureType ?? .twoFactor
        switch allowed.type.known {
        case .one: break
        case .two:
            let variants = allowed.variants.map(SignatureType.init(rawValue:))
            guard !variants.isEmpty, variants.allSatisfy({ $0?.provesUserPresence == true }) else {
                throw invalid("2FA variants are possession_knowledge, possession_biometry or both.")
            }
        default:
            throw invalid("allowedSignatureType.type must be 1FA or 2FA.")
        }
        let lifetime = request.expiresIn ?? policy.operationLifetime
        guard (10...86_400).contains(lifetime) else { throw invalid("expiresIn must be 10 to 86400 seconds.") }
        let maxFailed = request.maxFailedAttempts ?? policy.operationMaxFailedAttempts
        guard (1...100).contains(maxFailed) else { throw invalid("maxFailedAttempts must be 1 to 100.") }
        let now = clock.millis
        let (mode, number, choices) = try Self.numberMatching(request.numberMatching)
        var record = OperationRecord(
            id: OperationId.make(at: now), applicationId: application.id, userId: request.userId, name: name,
            data: data, status: .pending, statusReason: nil,
            content: OperationContent(defaultLanguage: defaultLanguage, formData: formData, ui: request.ui),
            allowedSignatureType: allowed, failedAttempts: 0, maxFailedAttempts: maxFailed,
            proximitySeed: request.proximityCheck == true ? Bytes.random(count: 32) : nil, offlineNonce: nil,
            offlineTOTP: nil, activationId: nil, template: request.template, createdAt: now,
            expiresAt: now + Millis(lifetime) * 1000, updatedAt: now, finishedAt: nil, version: 0)
        (record.numberMatching, record.matchingNumber, record.numberChoices) = (mode, number, choices)
        return record
    }

    /// A mode's number and choices: for `choose` and `type` a random number of 10–99 (two digits, easy to read out and
    /// compare); for `choose` also two others, all three in random order.
    static func numberMatching(_ mode: String?) throws -> (String?, Int?, [Int]) {
        guard let mode, mode != NumberMatching.off else { return (nil, nil, []) }
        guard [NumberMatching.choose, NumberMatching.type].contains(mode) else {
            throw AssentServerError.invalidRequest("numberMatching is choose, type or off.")
        }
        var generator = SystemRandomNumberGenerator()
        let number = Int.random(in: 10...99, using: &generator)
        guard mode == NumberMatching.choose else { return (mode, number, []) }
        var choices: Set<Int> = [number]
        while choices.count < 3 { choices.insert(Int.random(in: 10...99, using: &generator)) }
        return (mode, number, Array(choices).shuffled(using: &generator))
    }

    // MARK: Reading and changing

    /// The operation, moved to `EXPIRED` first if its time is up.
    public func get(id: String) async throws -> OperationRecord {
        try await mutate(id: id) { operation, now in _ = operation.expireIfDue(now: now) }.0
    }

    /// The operation with `id` as stored (an overdue one not yet marked expired), if there is one.
    public func find(id: String) async throws -> OperationRecord? { try await store.operation(id: id) }

    /// The user's operations, newest first (expired ones shown as such).
    public func list(userId: String, status: OperationStatus?, limit: Int = 100) async throws -> [OperationRecord] {
        var result: [OperationRecord] = []
        for operation in try await store.operations(userId: userId, status: status, limit: limit) {
            let current =
                operation.status == .pending && operation.expiresAt <= clock.millis
                ? try await get(id: operation.id) : operation
            if status == nil || current.status == status { result.append(current) }
        }
        return result
    }

    /// Reads the operation, applies `change` and writes it back if nobody changed it meanwhile (retrying with
    /// fresh data on a collision). Nothing is written when `change` leaves the operation as it was.
    func mutate<Result: Sendable>(
        id: String, _ change: (inout OperationRecord, Millis) throws -> Result
    ) async throws -> (OperationRecord, Result) {
        for _ in 0..<32 {
            guard let stored = try await store.operation(id: id) else {
                throw AssentServerError.operationNotFound()
            }
            let now = clock.millis
            var operation = stored
            let result = try change(&operation, now)
            if operation == stored { return (operation, result) }
            operation.updatedAt = now
            if try await store.updateOperation(operation, expectedVersion: stored.version) {
                operation.version = stored.version + 1
                // A status change wrote outbox messages (webhook, push) in the same statement.
                if operation.status != stored.status { announcer.changed(userId: operation.userId) }
                return (operation, result)
            }
        }
        throw AssentServerError.conflict()
    }

    /// Cancels a pending operation (operator side).
    public func cancel(id: String, reason: String?, actor: String) async throws -> OperationRecord {
        let reason = try Self.statusReason(reason)
        let (operation, outcome) = try await mutate(id: id) { operation, now in
            operation.cancel(reason: reason, by: actor, now: now)
        }
        try Self.throwUnlessDone(outcome)
        logger.info("operation canceled", metadata: ["operation.id": "\(id)", "actor": "\(actor)"])
        return operation
    }

    /// Moves every overdue pending operation to `EXPIRED`; returns how many.
    @discardableResult
    public func expireOverdue() async throws -> Int {
        var count = 0
        while true {
            let ids = try await store.overdueOperationIds(now: clock.millis, limit: 100)
            for id in ids {
                let (_, expired) = try await mutate(id: id) { operation, now in operation.expireIfDue(now: now) }
                if expired { count += 1 }
            }
            if ids.count < 100 { return count }
        }
    }

    static func statusReason(_ reason: String?) throws -> String? {
        guard let reason else { return nil }
        // Counted and checked as the OpenAPI document says: code points; no C0/C1 control characters or line
        // separators.
        guard (1...statusReasonLimit).contains(reason.unicodeScalars.count),
            reason.unicodeScalars.allSatisfy({
                !(0...0x1F ~= $0.value || 0x7F...0x9F ~= $0.value || 0x2028...0x2029 ~= $0.value)
            })
        else { throw AssentServerError.invalidRequest("A reason is 1 to 32 characters on one line.") }
        return reason
    }

    // MARK: Device side

    /// Whether `activation` may see the operation: same application, and the operation is the activation's
    /// user's or not yet claimed.
    static func isVisible(_ operation: OperationRecord, to device: DevicePrincipal) -> Bool {
        operation.applicationId == device.applicationId
            && (operation.userId == nil || operation.userId == device.userId)
            && (operation.devices?.contains(device.activationId) ?? true)
    }

    /// The pending operations the activation may see, oldest first, from its user's newest pending ones (read with
    /// the token's use: ``TokenAuthenticator/authenticateReadingPending(_:)``); those past their expiry are expired.
    public func pending(for device: DevicePrincipal, among newest: [OperationRecord]) async throws -> [OperationRecord]
    {
        let now = clock.millis
        var result: [OperationRecord] = []
        for operation in newest where Self.isVisible(operation, to: device) {
            if operation.expiresAt <= now {
                _ = try? await get(id: operation.id)
            } else {
                result.append(operation)
            }
        }
        return result.reversed()
    }

    /// The operation if the activation may see it.
    public func detail(id: String, device: DevicePrincipal) async throws -> OperationRecord {
        let operation = try await get(id: id)
        guard Self.isVisible(operation, to: device) else { throw AssentServerError.operationNotFound() }
        return operation
    }

    /// Assigns a non-personalised operation to the activation's user; exactly one user can win it.
    public func claim(id: String, device: DevicePrincipal) async throws -> OperationRecord {
        let (operation, visible) = try await mutate(id: id) { operation, now -> Bool in
            _ = operation.expireIfDue(now: now)
            guard Self.isVisible(operation, to: device) else { return false }
            if operation.userId == nil, operation.status == .pending { operation.userId = device.userId }
            return true
        }
        guard visible else { throw AssentServerError.operationNotFound() }
        if operation.status.isFinished { throw AssentServerError.operationFinished(operation.status) }
        return operation
    }

    /// The activation user's operations of every status, newest first.
    public func history(for device: DevicePrincipal) async throws -> [OperationRecord] {
        try await list(userId: device.userId, status: nil).filter { Self.isVisible($0, to: device) }
    }

    enum ApprovalOutcome: Sendable {
        case approved
        case rejected
        case canceled
        case notVisible
        case finished(OperationStatus)
        /// The attempt counted against the operation; `error` says what failed.
        case attemptFailed(AssentServerError)
        case operationFailed(AssentServerError)
        /// The request cannot be an approval (e.g. no proximity code for an operation that needs one): nothing counts.
        case refused(AssentServerError)
        /// The approval carried another number than the one shown: the operation is rejected.
        case wrongNumber
    }

    /// `/operation/authorize` as one commit: ``approve(_:authorization:body:)`` in ``commit``. A refusal is an
    /// answer, not a failure: what it wrote (the counter, a failed attempt) commits with it, and then it is thrown.
    public func approveInOneCommit(_ approval: OperationAuthorizeRequest, authorization: String?, body: Data)
        async throws
    {
        if try await approveDirectly(approval, authorization: authorization, body: body) { return }
        let refusal = try await commit { operations -> AssentServerError? in
            do {
                _ = try await operations.approve(
                    approval, authorization: authorization, body: body)
                return nil
            } catch let error as AssentServerError {
                return error
            }
        }
        if let refusal { throw refusal }
    }

    /// `/operation/authorize` in its usual case in two statements, without a transaction: the activation and the
    /// operation read together, the signature and the approval decided in memory, then the counter and the status
    /// written by one conditional statement (``OperationStore/updateActivation(_:expectedVersion:then:expectedVersion:)``:
    /// the operation only with the activation). The usual case is a valid signature approving a visible pending
    /// operation without a proximity code; for anything else — a failed or replayed signature, a failed attempt, a
    /// finished operation, the activation changed meanwhile — it writes nothing and returns false, and
    /// ``approveInOneCommit(_:authorization:body:)`` answers as before, with its audit rows. When only the operation
    /// changed meanwhile, the counter is written and the approval goes on as ``authorize(_:device:)`` on what is
    /// stored now.
    func approveDirectly(_ request: OperationAuthorizeRequest, authorization: String?, body: Data) async throws
        -> Bool
    {
        guard request.proximityCheck == nil,
            let signed = try? await powerAuth.signedRequest(
                authorization: authorization, method: "POST", uriId: "/operation/authorize", body: body,
                allowed: Set(SignatureType.allCases))
        else { return false }
        let (storedActivation, storedOperation) = try await store.activationAndOperation(
            activationId: signed.header.activationId, operationId: request.id)
        guard let storedActivation, let storedOperation else { return false }
        let now = clock.millis
        var activation = storedActivation
        guard case (.accepted, _)? = try? powerAuth.check(signed, on: &activation, now: now) else { return false }
        activation.updatedAt = now
        let device = AuthenticatedDevice(
            activation: activation, application: signed.application, signatureType: signed.header.signatureType)
        guard (try? checkApproval(request, device: device)) != nil else { return false }
        var operation = storedOperation
        guard
            case .approved? = try? operation.approve(
                approval(request, device: device), now: now, tolerance: Millis(policy.timestampTolerance) * 1000)
        else { return false }
        operation.updatedAt = now
        let written = try await store.updateActivation(
            activation, expectedVersion: storedActivation.version, then: operation,
            expectedVersion: storedOperation.version)
        guard written.activation else { return false }
        logger.debug(
            "signature accepted", metadata: ["activation.id": "\(activation.id)", "uri.id": "/operation/authorize"])
        if written.operation {
            announcer.changed(userId: operation.userId)
        } else {
            _ = try await authorize(request, device: device)
        }
        return true
    }

    /// `/operation/authorize` from the request to the commit: verifies the device's signature — a failed one counts
    /// against the operation too, so guessing a PIN on one cannot go on for ever; a replayed copy counts nowhere — and
    /// approves the operation if its data, factors and proximity check match (``authorize(_:device:)``). Run it in
    /// one commit (``commit``): the signature's counter and the operation's status are written together, and a
    /// refusal is an answer whose writes (the counter, a failed attempt) commit with it.
    public func approve(_ approval: OperationAuthorizeRequest, authorization: String?, body: Data) async throws
        -> OperationRecord
    {
        let verdict = try await powerAuth.verify(
            authorization: authorization, method: "POST", uriId: "/operation/authorize", body: body,
            allowed: Set(SignatureType.allCases))
        switch verdict {
        case .accepted(let device):
            return try await authorize(approval, device: device)
        case .failed(let activation, _):
            if await countFailedSignature(operationId: approval.id, activation: activation) {
                throw AssentServerError.operationFailed()
            }
            throw verdict.refusal
        case .replayed:
            throw verdict.refusal
        }
    }

    /// `/operation/authorize`: the device's signature (already verified) approves the operation if the data, the
    /// factors and the proximity check match; otherwise the attempt counts and the last allowed one fails it.
    public func authorize(
        _ request: OperationAuthorizeRequest, device: AuthenticatedDevice
    ) async throws -> OperationRecord {
        let tolerance = Millis(policy.timestampTolerance) * 1000
        try checkApproval(request, device: device)
        if request.proximityCheck != nil {
            let rules = try await applicationLimits.rules(
                device.activation.applicationId)
            try await limiter.hit(
                rules.proximityChecksPerOperation, "proximity.operation", request.id)
        }
        let approval = approval(request, device: device)
        let (operation, outcome) = try await mutate(id: request.id) { operation, now in
            try operation.approve(approval, now: now, tolerance: tolerance)
        }
        switch outcome {
        case .wrongNumber:
            await audit(
                .operationNumberMismatch, activation: device.activation, actor: "device",
                "Operation \(operation.id) rejected: the approval carried another number than the one shown.")
        case .attemptFailed(let error), .operationFailed(let error):
            await audit(
                .operationAttemptFailed, activation: device.activation, actor: "device",
                "Approval of operation \(operation.id) failed (\(operation.failedAttempts)/"
                    + "\(operation.maxFailedAttempts)): \(error.message)")
        default: break
        }
        try Self.throwUnlessDone(outcome)
        return operation
    }

    /// What an approval asks of the request before the operation is read: a mobile context of at most 4 KiB, a PIN
    /// not older than the policy allows.
    func checkApproval(_ request: OperationAuthorizeRequest, device: AuthenticatedDevice) throws {
        if let context = request.mobileContext {
            guard let decoded = Data(base64Encoded: context), decoded.count <= 4_096 else {
                throw AssentServerError.invalidRequest("mobileContext is Base64 of at most 4096 bytes.")
            }
        }
        if let maximumAge = policy.maximumPINAge, device.signatureType != .possession,
            clock.millis - device.activation.pinSetAt > Millis(maximumAge) * 1000
        {
            throw AssentServerError.pinExpired()
        }
    }

    /// The approval `request` asks of the operation, by `device`.
    func approval(_ request: OperationAuthorizeRequest, device: AuthenticatedDevice) -> OperationRecord.Approval {
        OperationRecord.Approval(
            device: device.activation.principal, data: request.data, signatureType: device.signatureType,
            proximityCheck: request.proximityCheck, mobileContext: request.mobileContext, number: request.number)
    }

    /// `/operation/cancel`: the user rejects the operation.
    public func reject(_ request: OperationRejectRequest, device: AuthenticatedDevice) async throws -> OperationRecord {
        let reason = try Self.statusReason(request.reason ?? RejectReason.unknown)
        let (operation, outcome) = try await mutate(id: request.id) { operation, now in
            operation.reject(by: device.activation.principal, reason: reason, now: now)
        }
        try Self.throwUnlessDone(outcome)
        return operation
    }

    /// Counts a failed signature of `activation` against the operation it tried to approve; returns whether that
    /// failed the operation.
    func countFailedSignature(operationId: String, activation: ActivationRecord) async -> Bool {
        let result = try? await mutate(id: operationId) { operation, now in
            operation.countFailedSignature(by: activation.principal, now: now)
        }
        if case .operationFailed = result?.1 { return true }
        return false
    }

    static func throwUnlessDone(_ outcome: ApprovalOutcome) throws {
        switch outcome {
        case .approved, .rejected, .canceled: return
        case .notVisible: throw AssentServerError.operationNotFound()
        case .finished(let status): throw AssentServerError.operationFinished(status)
        case .attemptFailed(let error), .refused(let error): throw error
        case .operationFailed: throw AssentServerError.operationFailed()
        case .wrongNumber: throw AssentServerError.numberMismatch()
        }
    }

    /// Whether a signature of `type` satisfies the operation's allowed factors (`1FA` accepts any signature).
    static func allows(_ allowed: AllowedSignatureType, _ type: SignatureType) -> Bool {
        allowed.type == .one || allowed.variants.contains(type.rawValue)
    }

    /// Why the proximity check fails, or `nil` when the TOTP is current (or one step old) and the timestamps are
    /// plausible: received before sent, both within the operation's life and near the server's clock.
    static func proximityProblem(
        _ check: ProximityCheck?, seed: Data, operation: OperationRecord, now: Millis, tolerance: Millis
    ) throws -> String? {
        guard let check else { return "The operation needs a proximity check." }
        guard check.type.known != nil else {
            return "The proximity check type is QR_CODE or DEEPLINK."
        }
        let received = check.timestampReceived.millis
        let sent = check.timestampSent.millis
        guard received <= sent + 1000, received >= operation.createdAt - tolerance, sent <= now + tolerance,
            sent >= now - tolerance
        else { return "The proximity check timestamps are not plausible." }
        let totp = try proximityTOTP(seed: seed)
        guard totp.validate(check.otp, at: UInt64(max(0, now / 1000)), past: 1, future: 0) != nil else {
            return "The proximity check code is wrong or too old."
        }
        return nil
    }

    // MARK: Proximity check

    /// The current proximity code of a pending operation, its deep link in the app's URL `scheme`.
    public func proximityCode(id: String, scheme: String) async throws -> ProximityCodeResponse {
        guard let first = scheme.first, first.isLetter,
            scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else { throw AssentServerError.invalidRequest("scheme must be a URL scheme such as myapp.") }
        let operation = try await get(id: id)
        guard operation.status == .pending else { throw AssentServerError.operationFinished(operation.status) }
        guard let seed = operation.proximitySeed else {
            throw AssentServerError.proximityCheckNotEnabled()
        }
        let totp = try Self.proximityTOTP(seed: seed)
        let now = UInt64(max(0, clock.millis / 1000))
        let code = ProximityCode(operationId: operation.id, totp: totp.code(at: now))
        let stepEnd = (totp.timeStep(at: now) + 1) * UInt64(totp.period)
        return ProximityCodeResponse(
            operationId: operation.id, otp: code.totp, deeplink: code.deeplink(scheme: scheme), jwt: code.jwt,
            validUntil: Date(timeIntervalSince1970: TimeInterval(stepEnd)))
    }

    // MARK: Offline approval

    /// `text` if it is the offline QR code `operation` was last shown with, as a form sends it back (CR LF line
    /// breaks), so that a page can show the same code again after a mistyped answer; `nil` otherwise.
    static func currentOfflineQR(_ text: String?, of operation: OperationRecord) -> String? {
        guard operation.status == .pending, let text = text?.replacingOccurrences(of: "\r\n", with: "\n"),
            let parsed = try? OfflineOperationQR(parsing: text), parsed.operationId == operation.id,
            parsed.nonce.base64EncodedString() == operation.offlineNonce
        else { return nil }
        return text
    }

    /// What a page tells a person after a wrong offline code: the tries left, or that the operation failed.
    static func wrongOfflineCode(_ operation: OperationRecord) -> String {
        let left = max(0, operation.maxFailedAttempts - operation.failedAttempts)
        return operation.status == .failed
            ? "The code is wrong, and that was the last try: the operation failed."
            : "The code is wrong: \(left) \(left == 1 ? "try" : "tries") left. Check it on the phone."
    }

    /// Builds and signs the offline QR code of a pending operation with the master key or an activation's personal
    /// key, and remembers its nonce (and TOTP line) for ``verifyOffline(id:activationId:code:)``.
    public func offlineQR(id: String, request: OfflineQRRequest) async throws -> String {
        let current = try await get(id: id)
        guard current.status == .pending else { throw AssentServerError.operationFinished(current.status) }
        guard let application = try await store.application(id: current.applicationId) else {
            throw AssentServerError.internalError("The operation's application is missing.")
        }
        let keyType: OfflineOperationQR.KeyType
        let signingKey: ECPrivateKey
        switch request.keyType.known {
        case .master:
            keyType = .master
            signingKey = application.masterPrivateKey
        case .personal:
            guard let activationId = request.activationId else {
                throw AssentServerError.invalidRequest("keyType personal needs the activationId whose key signs.")
            }
            let activation = try await offlineActivation(activationId, for: current)
            keyType = .personal
            signingKey = try activation.serverPrivateKey()
        case nil:
            throw AssentServerError.invalidRequest("keyType is master or personal.")
        }
        let form = current.content.form(acceptLanguage: nil)
        var flags: OfflineOperationQR.Flags = []
        if current.allowedSignatureType.allowsBiometry { flags.insert(.biometryAllowed) }
        if current.content.ui?.flipButtons == true { flags.insert(.flipButtons) }
        if current.content.ui?.blockApprovalOnCall == true { flags.insert(.blockApprovalOnCall) }
        if current.content.ui?.preApprovalScreen?.type == "WARNING" { flags.insert(.fraudWarning) }
        let totp = try current.proximitySeed.map {
            try Self.proximityTOTP(seed: $0).code(at: UInt64(max(0, clock.millis / 1000)))
        }
        let qr: OfflineOperationQR
        do {
            qr = try OfflineOperationQR(
                operationId: current.id, title: form.title, message: form.message, operationData: current.data,
                flags: flags, totp: totp, keyType: keyType, signingKey: signingKey)
        } catch let error as OperationDataError {
            throw AssentServerError.invalidRequest(error.message)
        }
        let (_, obstacle) = try await mutate(id: id) { operation, now in
            operation.showOffline(nonce: qr.nonce.base64EncodedString(), totp: totp, now: now)
        }
        if let obstacle { try Self.throwUnlessDone(obstacle) }
        return qr.text
    }

    private func offlineActivation(_ id: String, for operation: OperationRecord) async throws -> ActivationRecord {
        guard let activation = try await store.activation(id: id) else {
            throw AssentServerError.activationNotFound()
        }
        guard activation.state == .active else {
            throw AssentServerError.invalidActivationState("The activation is \(activation.state.name), not ACTIVE.")
        }
        guard Self.isVisible(operation, to: activation.principal) else {
            throw AssentServerError.invalidRequest("The activation belongs to another user or application.")
        }
        return activation
    }

    /// Verifies the code the user typed (`NNNNNNNN-NNNNNNNN`, an offline signature over the latest QR code) and
    /// approves the operation when it matches; a mismatch counts against both the activation and the operation, and
    /// its audit event names `actor`, who typed the code in (`operator:<name>`, `api-key:<name>`, `user`).
    public func verifyOffline(
        id: String, activationId: String, code: String, actor: String
    ) async throws -> (Bool, OperationRecord) {
        let parts = code.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2,
            parts.allSatisfy({ $0.count == 8 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) })
        else { throw AssentServerError.invalidRequest("The code is two groups of 8 digits: NNNNNNNN-NNNNNNNN.") }
        let current = try await get(id: id)
        let rules = try await applicationLimits.rules(current.applicationId)
        try await limiter.hit(rules.offlineVerificationsPerOperation, "offline.operation", id)
        try await limiter.hit(rules.offlineVerificationsPerActivation, "offline.activation", activationId)
        guard current.status == .pending else { throw AssentServerError.operationFinished(current.status) }
        let activation = try await offlineActivation(activationId, for: current)
        guard let nonceText = current.offlineNonce, let nonce = Data(base64Encoded: nonceText) else {
            throw AssentServerError.invalidRequest("Create the operation's offline QR code first.")
        }
        guard let application = try await store.application(id: activation.applicationId) else {
            throw AssentServerError.internalError("The activation's application is missing.")
        }
        let data = PowerAuthSignature.dataToSign(
            method: "POST", uriId: OfflineOperationQR.uriId, nonce: nonce,
            body: OfflineOperationQR.signatureBody(
                operationId: current.id, operationData: current.data, totp: current.offlineTOTP),
            applicationSecret: PowerAuthSignature.offlineSecret)
        let types: [SignatureType] =
            current.allowedSignatureType.allowsBiometry
            ? [.possessionKnowledge, .possessionBiometry] : [.possessionKnowledge]
        let (updatedActivation, outcome, matchedType) = try await powerAuth.recordSignature(
            activationId: activation.id, signature: code, types: types, application: application, data: data,
            format: .offline, now: clock.millis)
        let valid: Bool
        if case .accepted = outcome { valid = true } else { valid = false }
        if !valid {
            await audit(
                .signatureFailed, activation: updatedActivation, actor: actor,
                "Offline code for operation \(id) failed (\(updatedActivation.failedAttempts)/"
                    + "\(updatedActivation.maxFailedAttempts)).")
        }
        let (operation, result) = try await mutate(id: id) { operation, now in
            operation.approveOffline(by: activation.principal, matched: valid, signatureType: matchedType, now: now)
        }
        if case .finished(let status) = result { throw AssentServerError.operationFinished(status) }
        return (valid, operation)
    }
}
