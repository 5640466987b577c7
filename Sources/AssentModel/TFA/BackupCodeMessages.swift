import Foundation

/// `POST /api/tfa/backup/verify`: one of the account's backup codes.
public struct BackupCodeVerifyRequest: Codable, Sendable {
    public var assertion: String
    public var code: String

    public init(assertion: String, code: String) {
        self.assertion = assertion
        self.code = code
    }
}

/// A backup code passed: the proof, and how many unused codes the account has left (a sign-in with one of the
/// last two should tell the person to make new ones).
public struct BackupCodeProofResponse: Codable, Sendable, Equatable {
    public var providerAssertion: String
    public var remaining: Int

    public init(providerAssertion: String, remaining: Int) {
        self.providerAssertion = providerAssertion
        self.remaining = remaining
    }
}

/// `POST /api/tfa/backup/generate`: new backup codes for the account a fresh two-factor login token names.
public struct BackupCodeGenerateRequest: Codable, Sendable {
    public var loginToken: String

    public init(loginToken: String) { self.loginToken = loginToken }
}

/// New backup codes, shown once: the account's previous ones stop working.
public struct BackupCodeList: Codable, Sendable, Equatable {
    public var codes: [String]

    public init(codes: [String]) { self.codes = codes }
}
