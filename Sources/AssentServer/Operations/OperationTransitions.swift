import AssentCrypto
import AssentModel
import Foundation

/// The operation's state machine as pure changes of its record:
/// `PENDING → APPROVED | REJECTED | CANCELED | EXPIRED | FAILED`, and a finished operation never changes again.
/// Every change first lets an overdue operation expire; a device that may not see the operation changes nothing and
/// learns nothing. ``OperationService`` applies them in one conditional update (``OperationService/mutate(id:_:)``).
extension OperationRecord {
    typealias Outcome = OperationService.ApprovalOutcome

    /// An approval as the operation sees it: the device's identity, the data it signed and with which factors, its
    /// proximity check and mobile context.
    /// The status reason of an operation rejected because its approval carried another number.
    static let wrongNumber = "WRONG_NUMBER"

    struct Approval: Sendable {
        var device: DevicePrincipal
        var data: String
        var signatureType: SignatureType
        var proximityCheck: ProximityCheck?
        var mobileContext: String?
        /// The number the person chose or typed (number matching).
        var number: Int? = nil
    }

    /// What stops any change: invisible to `device` (when a device acts), overdue (it expires now), or finished.
    private mutating func obstacle(for device: DevicePrincipal?, now: Millis) -> Outcome? {
        if let device, !OperationService.isVisible(self, to: device) { return .notVisible }
        if expireIfDue(now: now) { return .finished(.expired) }
        guard status == .pending else { return .finished(status) }
        return nil
    }

    /// The device's approval: approved when the data, the factors and the proximity check match (the operation
    /// becomes the device's user's); otherwise the attempt counts, and the last allowed one fails the operation. A
    /// missing proximity check for an operation that needs one counts nothing (``Outcome/refused(_:)``).
    mutating func approve(_ approval: Approval, now: Millis, tolerance: Millis) throws -> Outcome {
        if let obstacle = obstacle(for: approval.device, now: now) { return obstacle }
        if proximitySeed != nil, approval.proximityCheck == nil {
            return .refused(AssentServerError.proximityCheckMissing())
        }
        if matchingNumber != nil, approval.number == nil { return .refused(AssentServerError.numberMissing()) }
        userId = approval.device.userId
        let problem: AssentServerError? =
            if !Bytes.constantTimeEqual(Data(approval.data.utf8), Data(data.utf8)) {
                .operationDataMismatch(attemptsLeft: max(0, maxFailedAttempts - failedAttempts - 1))
            } else if !OperationService.allows(allowedSignatureType, approval.signatureType) {
                .authenticationFailed("The operation needs \(allowedSignatureType.variants.joined(separator: " or ")).")
            } else if let seed = proximitySeed,
                let proximity = try OperationService.proximityProblem(
                    approval.proximityCheck, seed: seed, operation: self, now: now, tolerance: tolerance)
            {
                .proximityCheckFailed(proximity, attemptsLeft: max(0, maxFailedAttempts - failedAttempts - 1))
            } else {
                nil
            }
        if let problem { return countFailedAttempt(problem, by: approval.device.activationId, now: now) }
        if let matchingNumber, approval.number != matchingNumber {
            // A signed approval with another number: whoever holds the phone did not start this. Rejected.
            finish(.rejected, reason: OperationRecord.wrongNumber, activationId: approval.device.activationId, at: now)
            return .wrongNumber
        }
        finish(.approved, reason: nil, activationId: approval.device.activationId, at: now)
        approvedWith = approval.signatureType.rawValue
        mobileContext = approval.mobileContext
        return .approved
    }

    /// The offline code a person typed, checked by the caller: `matched` with the factors it proved, else a failed
    /// attempt. The device's visibility was checked when the operator named it.
    mutating func approveOffline(
        by device: DevicePrincipal, matched: Bool, signatureType: SignatureType?, now: Millis
    ) -> Outcome {
        if let obstacle = obstacle(for: nil, now: now) { return obstacle }
        guard matched else {
            return countFailedAttempt(
                .authenticationFailed("The offline code does not match."), by: device.activationId, now: now)
        }
        userId = device.userId
        finish(.approved, reason: nil, activationId: device.activationId, at: now)
        approvedWith = signatureType?.rawValue
        return .approved
    }

    /// A push sign-in approved in a subscribed browser with a passkey the caller verified: approved unless the
    /// number chosen is not the one shown (then rejected, as a phone's answer would be).
    mutating func approveInBrowser(number: Int?, now: Millis) -> Outcome {
        if let obstacle = obstacle(for: nil, now: now) { return obstacle }
        if matchingNumber != nil, number == nil { return .refused(AssentServerError.numberMissing()) }
        if let matchingNumber, number != matchingNumber {
            finish(.rejected, reason: OperationRecord.wrongNumber, activationId: nil, at: now)
            return .wrongNumber
        }
        finish(.approved, reason: nil, activationId: nil, at: now)
        approvedWith = BrowserApprovers.approvedWith
        return .approved
    }

    /// A push sign-in rejected in a subscribed browser.
    mutating func rejectInBrowser(now: Millis) -> Outcome {
        if let obstacle = obstacle(for: nil, now: now) { return obstacle }
        finish(.rejected, reason: nil, activationId: nil, at: now)
        return .rejected
    }

    /// The device's user rejects the operation (with the app's reason).
    mutating func reject(by device: DevicePrincipal, reason: String?, now: Millis) -> Outcome {
        if let obstacle = obstacle(for: device, now: now) { return obstacle }
        userId = device.userId
        finish(.rejected, reason: reason, activationId: device.activationId, at: now)
        return .rejected
    }

    /// The operator (or whoever `actor` names) cancels the operation.
    mutating func cancel(reason: String?, by actor: String? = nil, now: Millis) -> Outcome {
        if let obstacle = obstacle(for: nil, now: now) { return obstacle }
        finish(.canceled, reason: reason, activationId: nil, at: now)
        statusActor = actor
        return .canceled
    }

    /// A signature of `device` that matched none of its factors, counted against the operation it tried to approve.
    mutating func countFailedSignature(by device: DevicePrincipal, now: Millis) -> Outcome {
        if let obstacle = obstacle(for: device, now: now) { return obstacle }
        return countFailedAttempt(
            .authenticationFailed("The signature does not match."), by: device.activationId, now: now)
    }

    /// A new offline QR code was shown: the nonce and TOTP its answer will be checked against.
    mutating func showOffline(nonce: String, totp: String?, now: Millis) -> Outcome? {
        if let obstacle = obstacle(for: nil, now: now) { return obstacle }
        offlineNonce = nonce
        offlineTOTP = totp
        return nil
    }

    /// One more failed attempt of a pending operation; the last allowed one fails it (`MAX_FAILED_ATTEMPTS`).
    private mutating func countFailedAttempt(_ problem: AssentServerError, by activationId: String, now: Millis)
        -> Outcome
    {
        failedAttempts += 1
        guard failedAttempts >= maxFailedAttempts else { return .attemptFailed(problem) }
        finish(.failed, reason: "MAX_FAILED_ATTEMPTS", activationId: activationId, at: now)
        return .operationFailed(problem)
    }
}
