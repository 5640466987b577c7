import Foundation

/// Reading the audit trail (writing it is ``ServerEnvironment/audit(_:activation:userId:actor:_:)``).
public struct AuditService: Sendable {
    let environment: ServerEnvironment
    /// The part of the store this sees.
    var store: any AuditStore { environment.store }

    public init(environment: ServerEnvironment) { self.environment = environment }

    /// Events matching `filter`, newest first.
    public func events(_ filter: AuditFilter, limit: Int) async throws -> [AuditEvent] {
        try await store.auditEvents(filter, limit: limit)
    }
}

/// What an audit event records. The operation status changes (`operation.approved`, `.rejected`, `.canceled`,
/// `.expired`, `.failed`) are written by the database in the same statement as the change; every other type by the
/// service that acted. Stored as the raw value; a reader meets only these (and the names of later versions).
public enum AuditEventType: String, Sendable, CaseIterable {
    case activationBlocked = "activation.blocked"
    case activationCommitted = "activation.committed"
    case activationCreated = "activation.created"
    case activationDeviceCompleted = "activation.device_completed"
    case activationExpired = "activation.expired"
    case activationPinChanged = "activation.pin_changed"
    case activationRemoved = "activation.removed"
    case activationUnblocked = "activation.unblocked"
    case apiKeyCreated = "api_key.created"
    case apiKeyRevoked = "api_key.revoked"
    case applicationBrandingChanged = "application.branding_changed"
    case applicationCreated = "application.created"
    case applicationRateLimitsChanged = "application.rate_limits_changed"
    case applicationPushRemoved = "application.push_removed"
    case applicationPushSet = "application.push_set"
    case applicationRenamed = "application.renamed"
    case applicationWebhookRemoved = "application.webhook_removed"
    case applicationWebhookSet = "application.webhook_set"
    case applicationVersionCreated = "application.version_created"
    case applicationVersionSupported = "application.version_supported"
    case applicationVersionUnsupported = "application.version_unsupported"
    case cibaRequested = "ciba.requested"
    case cibaTokensIssued = "ciba.tokens_issued"
    case clientCreated = "client.created"
    case clientRemoved = "client.removed"
    case consoleSignInRefused = "console.sign_in_refused"
    case consoleSignedIn = "console.signed_in"
    case consoleSignedOut = "console.signed_out"
    case openidCodeIssued = "openid.code_issued"
    case openidCodeReplayed = "openid.code_replayed"
    case openidConsentGranted = "openid.consent_granted"
    case openidConsentRevoked = "openid.consent_revoked"
    case openidKeysRotated = "openid.keys_rotated"
    case openidRefreshReused = "openid.refresh_reused"
    case openidSessionEnded = "openid.session_ended"
    case openidTokensIssued = "openid.tokens_issued"
    case operationApproved = "operation.approved"
    case operationAttemptFailed = "operation.attempt_failed"
    case operationCanceled = "operation.canceled"
    case operationCreated = "operation.created"
    case operationExpired = "operation.expired"
    case operationFailed = "operation.failed"
    case operationNumberMismatch = "operation.number_mismatch"
    case operationRejected = "operation.rejected"
    case operationTemplateDeleted = "operation_template.deleted"
    case operatorPhoneLinked = "operator.phone_linked"
    case operatorPhoneUnlinked = "operator.phone_unlinked"
    case operatorPasskeyAdded = "operator.passkey_added"
    case operatorPasskeyRefused = "operator.passkey_refused"
    case operatorPasskeyRemoved = "operator.passkey_removed"
    case operatorCreated = "operator.created"
    case operatorDisabled = "operator.disabled"
    case operatorEnabled = "operator.enabled"
    case operatorPasswordChanged = "operator.password_changed"
    case operatorReset = "operator.reset"
    case operatorSetUp = "operator.set_up"
    case operationTemplateSaved = "operation_template.saved"
    case passkeyAdded = "passkey.added"
    case passkeyCounterWentBack = "passkey.counter_went_back"
    case passkeyRefused = "passkey.refused"
    case passkeySignIn = "passkey.sign_in"
    case pushRegistered = "push.registered"
    case pushUnregistered = "push.unregistered"
    case securityFraudReported = "security.fraud_reported"
    case signatureFailed = "signature.failed"
    case signatureReplayed = "signature.replayed"
    case tfaAccountCreated = "tfa.account_created"
    case tfaAccountRemoved = "tfa.account_removed"
    case tfaAccountRenamed = "tfa.account_renamed"
    case tfaBackupCodeUsed = "tfa.backup_code_used"
    case tfaBrowserAnswered = "tfa.browser_answered"
    case tfaBrowserSubscribed = "tfa.browser_subscribed"
    case tfaBackupCodesGenerated = "tfa.backup_codes_generated"
    case tfaPasswordChanged = "tfa.password_changed"
    case passkeyRenamed = "passkey.renamed"
    case activationLost = "activation.lost"
    case tfaCodeSent = "tfa.code_sent"
    case tfaDeviceRemembered = "tfa.device_remembered"
    case tfaDeviceRevoked = "tfa.device_revoked"
    case tfaEmailAdded = "tfa.email_added"
    case tfaFactorRemoved = "tfa.factor_removed"
    case tfaLogin = "tfa.login"
    case tfaLoginFailed = "tfa.login_failed"
    case tfaPolicySet = "tfa.policy_set"
    case tfaTotpRegistered = "tfa.totp_registered"
    case tokenCreated = "token.created"
    case tokenRemoved = "token.removed"
    case vaultUnlocked = "vault.unlocked"
}
