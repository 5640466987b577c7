import Foundation

/// TOTP codes from an implementation we did not write: `oathtool` from Debian's oathtool package (`.ci/run`
/// installs it), fed the secret of an `otpauth://` URI as an authenticator app would read it.
public enum Oathtool {
    public struct Missing: Error, CustomStringConvertible {
        public var description: String {
            "oathtool is not installed: install Debian's oathtool (apt-get install oathtool; .ci/run does)."
        }
    }

    /// The code an authenticator shows at `date` for the key URI (SHA1, the URI's digits and period).
    public static func code(uri: String, at date: Date) async throws -> String {
        guard let oathtool = Spawn.program("oathtool") else { throw Missing() }
        let items = URLComponents(string: uri)?.queryItems ?? []
        func item(_ name: String) -> String? { items.first { $0.name == name }?.value }
        guard let secret = item("secret") else { throw TestFailure("The key URI has no secret: \(uri)") }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        let outcome = try await Spawn.runOnThread([
            oathtool, "--totp", "--base32", "--digits=\(item("digits") ?? "6")",
            "--time-step-size=\(item("period") ?? "30")s", "--now=\(formatter.string(from: date)) UTC", secret,
        ])
        guard outcome.status == 0 else { throw TestFailure("oathtool failed: \(outcome.errors)") }
        return outcome.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
