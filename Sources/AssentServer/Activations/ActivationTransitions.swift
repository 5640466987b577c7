import AssentCrypto
import Foundation

/// The activation's state machine as pure changes of its record:
/// `CREATED → PENDING_COMMIT → ACTIVE ⇄ BLOCKED → REMOVED` (`CREATED → ACTIVE` with commit mode `auto`;
/// `CREATED → REMOVED` when the code expires unused). Services apply them inside one conditional update
/// (``ServerEnvironment/updateActivation(id:_:)``); a change that does not apply throws and nothing is written.
extension ActivationRecord {
    /// What a device tells about itself when it activates.
    struct DeviceDescription: Sendable {
        var name: String?
        var platform: String?
        var info: String?
        var extras: String?
    }

    /// `CREATED → ACTIVE` (commit mode `auto`) or `→ PENDING_COMMIT` (`manual`): the device presented the still valid
    /// `code` with its public key; the master secret is agreed and the code spent. Any other state, another code or
    /// an expired one is `ACTIVATION_CODE_INVALID`.
    mutating func completeKeyExchange(
        code: String, devicePublicKey: ECPublicKey, device: DeviceDescription, now: Millis
    ) throws {
        guard state == .created, activationCode == code, now < codeExpiresAt else {
            throw AssentServerError.activationCodeInvalid()
        }
        masterSecret = try KeyDerivation.masterSecret(privateKey: try serverPrivateKey(), publicKey: devicePublicKey)
        devicePublicKeyX963 = devicePublicKey.x963
        activationCode = nil
        activationName = device.name
        platform = device.platform
        deviceInfo = device.info
        extras = device.extras
        state = commitMode == .auto ? .active : .pendingCommit
    }

    /// `PENDING_COMMIT → ACTIVE`, after the operator compared the fingerprint.
    mutating func commit() throws {
        guard state == .pendingCommit else {
            throw AssentServerError.invalidActivationState(
                "Only an activation in PENDING_COMMIT can be committed; this one is \(state.name).")
        }
        state = .active
    }

    /// `ACTIVE → BLOCKED` with a reason.
    mutating func block(reason: String) throws {
        guard state == .active else {
            throw AssentServerError.invalidActivationState(
                "Only an ACTIVE activation can be blocked; this one is \(state.name).")
        }
        state = .blocked
        blockedReason = reason
    }

    /// `BLOCKED → ACTIVE`, resetting the failed attempts.
    mutating func unblock() throws {
        guard state == .blocked else {
            throw AssentServerError.invalidActivationState(
                "Only a BLOCKED activation can be unblocked; this one is \(state.name).")
        }
        state = .active
        failedAttempts = 0
        blockedReason = nil
    }

    /// Any state → `REMOVED`, the code cleared (removing twice is an error, so callers learn the second did nothing).
    mutating func remove() throws {
        guard state != .removed else {
            throw AssentServerError.invalidActivationState("The activation is already REMOVED.")
        }
        state = .removed
        activationCode = nil
    }

    /// `CREATED → REMOVED` (reason `ACTIVATION_CODE_EXPIRED`, the code cleared) when the code expired unused at
    /// `now`; returns whether it did.
    mutating func expireUnusedCode(now: Millis) -> Bool {
        guard state == .created, activationCode != nil, codeExpiresAt <= now else { return false }
        state = .removed
        activationCode = nil
        blockedReason = ActivationService.codeExpiredReason
        return true
    }

    /// A signature that matched no factor: one more failed attempt, and at the limit `ACTIVE → BLOCKED` (reason
    /// `MAX_FAILED_ATTEMPTS`); returns whether it blocked the activation.
    mutating func countFailedSignature() -> Bool {
        failedAttempts += 1
        guard failedAttempts >= maxFailedAttempts else { return false }
        state = .blocked
        blockedReason = "MAX_FAILED_ATTEMPTS"
        return true
    }
}
