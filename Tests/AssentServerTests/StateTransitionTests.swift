import AssentCrypto
import AssentModel
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// The activation and operation state machines as pure functions of their records: every state against every
/// change, no database.
@Suite("State transitions of activations and operations")
struct StateTransitionTests {
    static func activation(_ state: ActivationState, failed: Int = 0, commitMode: CommitMode = .auto)
        -> ActivationRecord
    {
        ActivationRecord(
            id: "a1", applicationId: "app", userId: "alice", state: state,
            activationCode: state == .created ? "AAAAA-AAAAA-AAAAA-AAAAA" : nil, codeExpiresAt: 1_000,
            commitMode: commitMode, activationName: nil, platform: nil, deviceInfo: nil, extras: nil,
            devicePublicKeyX963: nil, serverPrivateKeyScalar: ECPrivateKey().scalar, masterSecret: nil,
            counterData: .random(), counter: 0, failedAttempts: failed, maxFailedAttempts: 5,
            blockedReason: state == .blocked ? "BLOCKED_BY_OPERATOR" : nil, version: 1, createdAt: 0, updatedAt: 0,
            lastUsedAt: nil)
    }

    enum Change: String, CaseIterable {
        case commit, block, unblock, remove
    }

    static func apply(_ change: Change, to activation: inout ActivationRecord) throws {
        switch change {
        case .commit: try activation.commit()
        case .block: try activation.block(reason: "LOST")
        case .unblock: try activation.unblock()
        case .remove: try activation.remove()
        }
    }

    @Test("Operator changes of an activation: each allowed from exactly one set of states, refused from the rest")
    func activationOperatorChanges() throws {
        let states: [ActivationState] = [.created, .pendingCommit, .active, .blocked, .removed]
        let allowed: [Change: [ActivationState: ActivationState]] = [
            .commit: [.pendingCommit: .active],
            .block: [.active: .blocked],
            .unblock: [.blocked: .active],
            .remove: [.created: .removed, .pendingCommit: .removed, .active: .removed, .blocked: .removed],
        ]
        for change in Change.allCases {
            for state in states {
                var activation = Self.activation(state, failed: 3)
                let before = activation
                if let after = allowed[change]?[state] {
                    try Self.apply(change, to: &activation)
                    #expect(activation.state == after, "\(change) from \(state.name)")
                } else {
                    let error = #expect(throws: AssentServerError.self, "\(change) from \(state.name)") {
                        try Self.apply(change, to: &activation)
                    }
                    #expect(error?.code == .activationInvalidState)
                    #expect(activation == before, "a refused \(change) from \(state.name) changes nothing")
                }
            }
        }
        var blocked = Self.activation(.active, failed: 3)
        try blocked.block(reason: "LOST")
        #expect(blocked.blockedReason == "LOST" && blocked.failedAttempts == 3)
        try blocked.unblock()
        #expect(blocked.blockedReason == nil && blocked.failedAttempts == 0)
        var created = Self.activation(.created)
        try created.remove()
        #expect(created.activationCode == nil)
    }

    @Test("A device's key exchange spends a valid code once; failed signatures block at the limit; codes expire")
    func activationDeviceChanges() throws {
        let device = ECPrivateKey().publicKey
        let description = ActivationRecord.DeviceDescription(name: "Phone", platform: "ios", info: nil, extras: nil)
        for (mode, after) in [(CommitMode.auto, ActivationState.active), (.manual, .pendingCommit)] {
            var activation = Self.activation(.created, commitMode: mode)
            try activation.completeKeyExchange(
                code: "AAAAA-AAAAA-AAAAA-AAAAA", devicePublicKey: device, device: description, now: 999)
            #expect(activation.state == after && activation.activationCode == nil)
            #expect(activation.masterSecret?.count == 16 && activation.activationName == "Phone")
            // The code is spent: a second use is refused.
            #expect(throws: AssentServerError.self) {
                try activation.completeKeyExchange(
                    code: "AAAAA-AAAAA-AAAAA-AAAAA", devicePublicKey: device, device: description, now: 999)
            }
        }
        for (code, now) in [("BBBBB-BBBBB-BBBBB-BBBBB", Millis(999)), ("AAAAA-AAAAA-AAAAA-AAAAA", 1_000)] {
            var activation = Self.activation(.created)
            let before = activation
            let error = #expect(throws: AssentServerError.self) {
                try activation.completeKeyExchange(code: code, devicePublicKey: device, device: description, now: now)
            }
            #expect(error?.code == .activationCodeInvalid && activation == before)
        }

        var activation = Self.activation(.active, failed: 3)
        #expect(!activation.countFailedSignature() && activation.state == .active && activation.failedAttempts == 4)
        #expect(activation.countFailedSignature() && activation.state == .blocked)
        #expect(activation.blockedReason == "MAX_FAILED_ATTEMPTS")

        var unused = Self.activation(.created)
        #expect(!unused.expireUnusedCode(now: 999) && unused.state == .created)
        #expect(unused.expireUnusedCode(now: 1_000) && unused.state == .removed && unused.activationCode == nil)
        #expect(unused.blockedReason == ActivationService.codeExpiredReason)
        var used = Self.activation(.active)
        #expect(!used.expireUnusedCode(now: 5_000) && used.state == .active)
    }

    static let alice = DevicePrincipal(activationId: "a1", applicationId: "app", userId: "alice")
    static let bob = DevicePrincipal(activationId: "b1", applicationId: "app", userId: "bob")

    static func operation(
        _ status: OperationStatus = .pending, userId: String? = "alice", failed: Int = 0,
        allowed: AllowedSignatureType = .twoFactor, proximity: Bool = false
    ) -> OperationRecord {
        OperationRecord(
            id: "op", applicationId: "app", userId: userId, name: "payment", data: "A1*A100CZK", status: status,
            statusReason: nil,
            content: OperationContent(
                defaultLanguage: "en", formData: ["en": FormData(title: "Pay", message: "Pay 100 CZK", attributes: [])],
                ui: nil),
            allowedSignatureType: allowed, failedAttempts: failed, maxFailedAttempts: 3,
            proximitySeed: proximity ? Data(repeating: 7, count: 32) : nil, offlineNonce: nil, offlineTOTP: nil,
            activationId: nil, template: nil, createdAt: 0, expiresAt: 10_000, updatedAt: 0,
            finishedAt: status == .pending ? nil : 1, version: 1)
    }

    static func approval(
        _ device: DevicePrincipal = alice, data: String = "A1*A100CZK", type: SignatureType = .possessionKnowledge,
        proximity: ProximityCheck? = nil
    ) -> OperationRecord.Approval {
        .init(device: device, data: data, signatureType: type, proximityCheck: proximity, mobileContext: "ctx")
    }

    @Test("Approval: right data and factors approve; a wrong one counts and the last fails; finished stays finished")
    func operationApproval() throws {
        var approved = Self.operation()
        guard case .approved = try approved.approve(Self.approval(), now: 5, tolerance: 0) else {
            Issue.record("not approved")
            return
        }
        #expect(approved.status == .approved && approved.activationId == "a1" && approved.finishedAt == 5)
        #expect(approved.approvedWith == "possession_knowledge" && approved.mobileContext == "ctx")

        // A non-personalised operation becomes the approving user's.
        var open = Self.operation(userId: nil)
        _ = try open.approve(Self.approval(Self.bob), now: 5, tolerance: 0)
        #expect(open.status == .approved && open.userId == "bob")

        var counted = Self.operation()
        // Other data, correctly signed, is its own failure (no wrong PIN); too few factors is an authentication one.
        let attempts: [(OperationRecord.Approval, ServerErrorCode)] = [
            (Self.approval(data: "A1*A999CZK"), .operationDataMismatch),
            (Self.approval(type: .possession), .authenticationFailed),
        ]
        for (attempt, (approval, code)) in attempts.enumerated() {
            guard case .attemptFailed(let problem) = try counted.approve(approval, now: 5, tolerance: 0) else {
                Issue.record("attempt \(attempt) not counted")
                return
            }
            #expect(problem.code == code)
            #expect(counted.status == .pending && counted.failedAttempts == attempt + 1)
        }
        guard case .operationFailed = try counted.approve(Self.approval(data: "x"), now: 6, tolerance: 0) else {
            Issue.record("the last attempt did not fail the operation")
            return
        }
        #expect(counted.status == .failed && counted.statusReason == "MAX_FAILED_ATTEMPTS")

        // 1FA accepts possession alone.
        var oneFactor = Self.operation(allowed: .oneFactor)
        _ = try oneFactor.approve(Self.approval(type: .possession), now: 5, tolerance: 0)
        #expect(oneFactor.status == .approved)

        for status in [OperationStatus.approved, .rejected, .canceled, .expired, .failed] {
            var finished = Self.operation(status)
            let before = finished
            guard case .finished(let seen) = try finished.approve(Self.approval(), now: 5, tolerance: 0) else {
                Issue.record("\(status) was changed")
                return
            }
            #expect(seen == status && finished == before)
        }
    }

    @Test("Every change lets an overdue operation expire first; another user's device changes nothing")
    func operationObstacles() throws {
        let changes: [(String, (inout OperationRecord, Millis) throws -> OperationRecord.Outcome)] = [
            ("approve", { try $0.approve(Self.approval(), now: $1, tolerance: 0) }),
            ("reject", { $0.reject(by: Self.alice, reason: "UNEXPECTED", now: $1) }),
            ("cancel", { $0.cancel(reason: nil, now: $1) }),
            ("count", { $0.countFailedSignature(by: Self.alice, now: $1) }),
            ("offline", { $0.approveOffline(by: Self.alice, matched: true, signatureType: nil, now: $1) }),
        ]
        for (name, change) in changes {
            var overdue = Self.operation()
            guard case .finished(.expired) = try change(&overdue, 10_000) else {
                Issue.record("\(name): an overdue operation did not expire")
                continue
            }
            #expect(overdue.status == .expired && overdue.finishedAt == 10_000, "\(name)")
        }
        // Bob's device acting on alice's operation: nothing changes, not even an overdue expiry.
        let foreignChanges: [(String, (inout OperationRecord) throws -> OperationRecord.Outcome)] = [
            ("approve", { try $0.approve(Self.approval(Self.bob), now: 10_000, tolerance: 0) }),
            ("reject", { $0.reject(by: Self.bob, reason: nil, now: 10_000) }),
            ("count", { $0.countFailedSignature(by: Self.bob, now: 10_000) }),
        ]
        for (name, change) in foreignChanges {
            var foreign = Self.operation()
            let before = foreign
            guard case .notVisible = try change(&foreign) else {
                Issue.record("\(name): another user's device was not refused")
                continue
            }
            #expect(foreign == before, "\(name)")
        }
    }

    @Test("Reject, cancel, offline approval and the proximity check, each from a pending operation")
    func operationOtherChanges() throws {
        var rejected = Self.operation(userId: nil)
        guard case .rejected = rejected.reject(by: Self.bob, reason: "UNEXPECTED", now: 3) else {
            Issue.record("not rejected")
            return
        }
        #expect(rejected.status == .rejected && rejected.statusReason == "UNEXPECTED" && rejected.userId == "bob")

        var canceled = Self.operation()
        guard case .canceled = canceled.cancel(reason: "BY_BANK", now: 3) else {
            Issue.record("not canceled")
            return
        }
        #expect(canceled.status == .canceled && canceled.statusReason == "BY_BANK" && canceled.activationId == nil)
        guard case .finished(.canceled) = canceled.cancel(reason: nil, now: 4) else {
            Issue.record("canceled twice")
            return
        }

        var offline = Self.operation()
        guard case .attemptFailed = offline.approveOffline(by: Self.alice, matched: false, signatureType: nil, now: 3)
        else {
            Issue.record("a wrong offline code was not counted")
            return
        }
        _ = offline.approveOffline(by: Self.alice, matched: true, signatureType: .possessionBiometry, now: 4)
        #expect(offline.status == .approved && offline.approvedWith == "possession_biometry")
        #expect(offline.failedAttempts == 1)

        var shown = Self.operation()
        #expect(shown.showOffline(nonce: "bm9uY2U=", totp: nil, now: 3) == nil)
        #expect(shown.offlineNonce == "bm9uY2U=")

        // Proximity: a missing check counts nothing; a wrong code counts.
        var proximity = Self.operation(proximity: true)
        guard case .refused(let missing) = try proximity.approve(Self.approval(), now: 5, tolerance: 0) else {
            Issue.record("a missing proximity check was not refused")
            return
        }
        #expect(missing.code == .proximityCheckMissing && proximity.failedAttempts == 0)
        let wrong = ProximityCheck(
            otp: "00000000", type: .qrCode, timestampReceived: Date(millis: 4), timestampSent: Date(millis: 5))
        guard
            case .attemptFailed(let failed) = try proximity.approve(
                Self.approval(proximity: wrong), now: 5, tolerance: 0)
        else {
            Issue.record("a wrong proximity code was not counted")
            return
        }
        #expect(failed.code == .proximityCheckFailed && proximity.failedAttempts == 1)
    }
}
