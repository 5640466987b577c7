import AssentCrypto
import AssentModel
import Foundation
import Logging

/// The operator's side of the activation lifecycle: create, commit, block, unblock, remove.
///
/// `CREATED → PENDING_COMMIT → ACTIVE ⇄ BLOCKED → REMOVED`; every transition is one conditional update.
public struct ActivationService: Sendable {
    /// The part of the store this sees.
    let store: any ApplicationStore & ActivationStore & PushRegistrationStore
    let clock: WallClock
    let audit: Auditor
    let logger: Logger
    let policy: SecurityPolicy

    /// A new activation with its code and the code's signature by the master server key.
    public struct Created: Sendable {
        public var activation: ActivationRecord
        public var code: ActivationCode
        /// DER signature of the code, for the `CODE#signature` QR form.
        public var codeSignature: Data
    }

    /// Creates an activation for `userId` in `application`.
    public func create(
        application: ApplicationRecord, userId: String, commitMode: CommitMode, actor: String
    ) async throws -> Created {
        guard UserID.isValid(userId) else { throw AssentServerError.invalidRequest(UserID.requirement) }
        let now = clock.millis
        let code = ActivationCode.generate()
        let activation = ActivationRecord(
            id: UUID().uuidString.lowercased(), applicationId: application.id, userId: userId, state: .created,
            activationCode: code.value,
            codeExpiresAt: now + Millis(policy.activationCodeLifetime) * 1000,
            commitMode: commitMode, activationName: nil, platform: nil, deviceInfo: nil, extras: nil,
            devicePublicKeyX963: nil, serverPrivateKeyScalar: ECPrivateKey().scalar, masterSecret: nil,
            counterData: .random(),
            counter: 0, failedAttempts: 0, maxFailedAttempts: policy.maxFailedAttempts,
            blockedReason: nil, version: 1, createdAt: now, updatedAt: now, lastUsedAt: nil)
        try await store.insertActivation(activation)
        await audit(
            .activationCreated, activation: activation, actor: actor,
            "Created with commit mode \(commitMode.rawValue).")
        return Created(
            activation: activation, code: code,
            codeSignature: try code.signature(with: application.masterPrivateKey))
    }

    /// The activation with `id`, or `ACTIVATION_NOT_FOUND`.
    public func get(id: String) async throws -> ActivationRecord {
        guard let activation = try await find(id: id) else { throw AssentServerError.activationNotFound() }
        return activation
    }

    /// The activation with `id`, if there is one.
    public func find(id: String) async throws -> ActivationRecord? { try await store.activation(id: id) }

    /// The user's active devices in `applicationId`, oldest first: those an approval or a push sign-in can reach.
    public func active(userId: String, applicationId: String) async throws -> [ActivationRecord] {
        try await all(userId: userId).filter {
            $0.state == .active && $0.applicationId == applicationId
        }
    }

    /// The activation QR text (`CODE#signature`) of an activation no device has used yet and whose code is still
    /// valid; `nil` otherwise.
    public func pendingQRText(id: String) async throws -> String? {
        guard let activation = try await find(id: id), activation.state == .created,
            let code = activation.activationCode, activation.codeExpiresAt > clock.millis,
            let application = try await store.application(id: activation.applicationId)
        else { return nil }
        return try ActivationQRCode(code: try ActivationCode(code), masterPrivateKey: application.masterPrivateKey).text
    }

    /// The user's activations, oldest first.
    public func all(userId: String) async throws -> [ActivationRecord] { try await store.activations(userId: userId) }

    /// The user's activations with their push registrations, oldest first.
    public func list(userId: String) async throws -> [(ActivationRecord, PushRegistrationRecord?)] {
        var list: [(ActivationRecord, PushRegistrationRecord?)] = []
        for activation in try await all(userId: userId) {
            list.append((activation, try await pushRegistration(of: activation.id)))
        }
        return list
    }

    /// The activation's push registration, if it has one.
    public func pushRegistration(of activationId: String) async throws -> PushRegistrationRecord? {
        try await store.pushRegistration(activationId: activationId)
    }

    /// `PENDING_COMMIT → ACTIVE`, after the operator compared the fingerprint.
    public func commit(id: String, actor: String) async throws -> ActivationRecord {
        try await transition(id: id, actor: actor, event: .activationCommitted, detail: "Committed.") {
            try $0.commit()
        }
    }

    /// `ACTIVE → BLOCKED` with a reason.
    public func block(id: String, reason: String?, actor: String) async throws -> ActivationRecord {
        let reason = reason.flatMap { $0.isEmpty ? nil : String($0.prefix(255)) } ?? "BLOCKED_BY_OPERATOR"
        return try await transition(id: id, actor: actor, event: .activationBlocked, detail: "Blocked: \(reason).") {
            try $0.block(reason: reason)
        }
    }

    /// `BLOCKED → ACTIVE`, resetting the failed attempts.
    public func unblock(id: String, actor: String) async throws -> ActivationRecord {
        try await transition(id: id, actor: actor, event: .activationUnblocked, detail: "Unblocked.") {
            try $0.unblock()
        }
    }

    /// Any state → `REMOVED` (removing twice is an error, so callers learn the second did nothing).
    public func remove(id: String, actor: String) async throws -> ActivationRecord {
        try await transition(id: id, actor: actor, event: .activationRemoved, detail: "Removed.") {
            try $0.remove()
        }
    }

    /// The device reported a PIN change (signed with the new PIN): the PIN's age starts again.
    public func recordPINChange(activationId: String) async throws {
        let now = clock.millis
        let (activation, _) = try await store.updateActivation(id: activationId, at: clock) { $0.pinChangedAt = now }
        await audit(.activationPinChanged, activation: activation, actor: "device", "PIN changed.")
    }

    private struct CodeStillValid: Error {}

    /// The reason an activation whose code expired unused was removed with (in ``ActivationRecord/blockedReason``).
    public static let codeExpiredReason = "ACTIVATION_CODE_EXPIRED"

    /// Moves every `CREATED` activation whose code expired unused to `REMOVED` (reason `ACTIVATION_CODE_EXPIRED`,
    /// the code cleared), as PowerAuth does; returns how many.
    @discardableResult
    public func expireUnusedCodes() async throws -> Int {
        var count = 0
        while true {
            let ids = try await store.activationsWithExpiredCode(now: clock.millis, limit: 100)
            for id in ids {
                let now = clock.millis
                let activation: ActivationRecord
                do {
                    (activation, _) = try await store.updateActivation(id: id, at: clock) { activation in
                        // Used meanwhile: nothing to write.
                        guard activation.expireUnusedCode(now: now) else { throw CodeStillValid() }
                    }
                } catch is CodeStillValid {
                    continue
                }
                count += 1
                await audit(
                    .activationExpired, activation: activation, actor: "system",
                    "The activation code expired unused: removed.")
            }
            if ids.count < 100 { return count }
        }
    }

    private func transition(
        id: String, actor: String, event: AuditEventType, detail: String,
        _ change: (inout ActivationRecord) throws -> Void
    ) async throws -> ActivationRecord {
        let (activation, _) = try await store.updateActivation(id: id, at: clock, change)
        await audit(event, activation: activation, actor: actor, detail)
        logger.info(
            "\(event)", metadata: ["activation.id": "\(activation.id)", "actor": "\(actor)"])
        return activation
    }
}
