import ArgumentParser
import AssentCrypto
import AssentServer
import Foundation

/// `assent serve`'s two-factor login options: the mail relay for e-mail codes, the SMS/voice gateway for phone
/// codes, the issuer name in authenticator apps. Secrets come only from the environment.
struct TFAOptions: ParsableArguments {
    @Option(help: "Mail relay for e-mail codes; without it e-mail is not offered. Env: ASSENT_SMTP_HOST.")
    var smtpHost: String?
    @Option(help: "Mail relay port (default 587, 465 with --smtp-security tls). Env: ASSENT_SMTP_PORT.")
    var smtpPort: Int?
    @Option(help: "starttls (default), tls, or none (a relay on this machine only). Env: ASSENT_SMTP_SECURITY.")
    var smtpSecurity: String?
    @Option(help: "Relay user name; the password comes from ASSENT_SMTP_PASSWORD. Env: ASSENT_SMTP_USER.")
    var smtpUser: String?
    @Option(help: "Sender address of code mails. Env: ASSENT_SMTP_FROM.") var smtpFrom: String?
    @Option(help: "Sender name of code mails (default Assent). Env: ASSENT_SMTP_FROM_NAME.") var smtpFromName: String?
    @Option(help: "Extra CA certificates (PEM) trusted for the relay. Env: ASSENT_SMTP_CA_FILE.") var smtpCAFile:
        String?
    @Option(
        help: """
            URL that receives SMS and voice codes as signed JSON (X-Assent-Signature, docs/TFA.md); the HMAC key \
            comes from ASSENT_PHONE_GATEWAY_SECRET. Without it, phone is not offered. Env: ASSENT_PHONE_GATEWAY_URL.
            """)
    var phoneGatewayURL: String?
    @Option(help: "Issuer shown in authenticator apps (default: the application's name). Env: ASSENT_TOTP_ISSUER.")
    var totpIssuer: String?
    @Option(help: "Push sign-ins one account may start per hour (default 10).") var pushLoginsPerHour: Int?
    @Option(
        help: "Cool-down: this many push sign-ins rejected or unanswered within --push-refusal-window (default 3).")
    var pushRefusalLimit: Int?
    @Option(help: "The cool-down's window and length, seconds (default 900).") var pushRefusalWindow: Int?
    @Option(help: "How long a fraud report suspends the account's push sign-ins, seconds (default 3600).")
    var pushFraudSuspension: Int?
    @Option(
        help: """
            [FORMAT=]FILE (repeatable): a PEM file of root certificates a passkey's attestation of FORMAT (packed, \
            tpm, android-key, apple, …; without it: every format) may chain to, for applications whose passkey \
            policy asks for direct attestation. Env: ASSENT_PASSKEY_ATTESTATION_ROOTS, comma-separated.
            """)
    var passkeyAttestationRoots: [String] = []

    /// Applies the options to `settings`.
    func apply(to settings: inout TFASettings, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws
    {
        func value(_ option: String?, _ name: String) -> String? {
            (option ?? environment[name]).flatMap { $0.isEmpty ? nil : $0 }
        }
        settings.totpIssuer = value(totpIssuer, "ASSENT_TOTP_ISSUER")
        let roots =
            !passkeyAttestationRoots.isEmpty
            ? passkeyAttestationRoots
            : (value(nil, "ASSENT_PASSKEY_ATTESTATION_ROOTS") ?? "").split(separator: ",").map(String.init)
        do {
            settings.passkeyAttestationRoots = try TFASettings.attestationRoots(roots) {
                FileManager.default.contents(atPath: $0)
            }
        } catch {
            throw ValidationError(error.message)
        }
        for (given, path, name) in [
            (pushLoginsPerHour, \TFASettings.pushLoginsPerHour, "--push-logins-per-hour"),
            (pushRefusalLimit, \.pushRefusalLimit, "--push-refusal-limit"),
            (pushRefusalWindow, \.pushRefusalWindow, "--push-refusal-window"),
            (pushFraudSuspension, \.pushFraudSuspension, "--push-fraud-suspension"),
        ] {
            guard let given else { continue }
            guard given > 0 else { throw ValidationError("\(name) is a whole number above 0.") }
            settings[keyPath: path] = given
        }
        if let host = value(smtpHost, "ASSENT_SMTP_HOST") {
            let securityName = value(smtpSecurity, "ASSENT_SMTP_SECURITY") ?? "starttls"
            guard let security = SMTPSettings.Security(rawValue: securityName) else {
                throw ValidationError("--smtp-security is starttls, tls or none.")
            }
            guard let from = value(smtpFrom, "ASSENT_SMTP_FROM"), SMTPClient.isAddress(from) else {
                throw ValidationError("Set --smtp-from (ASSENT_SMTP_FROM) to the sender address of code mails.")
            }
            let portText = smtpPort.map(String.init) ?? environment["ASSENT_SMTP_PORT"]
            guard let port = portText.map({ Int($0) }) ?? (security == .tls ? 465 : 587), (1...65_535).contains(port)
            else { throw ValidationError("--smtp-port is 1 to 65535.") }
            let user = value(smtpUser, "ASSENT_SMTP_USER")
            let password = environment["ASSENT_SMTP_PASSWORD"]
            if user != nil && password == nil {
                throw ValidationError("Set ASSENT_SMTP_PASSWORD for the relay user.")
            }
            if user != nil && security == .none {
                throw ValidationError("Relay credentials are only sent over TLS: use --smtp-security starttls or tls.")
            }
            var ca: String?
            if let path = value(smtpCAFile, "ASSENT_SMTP_CA_FILE") {
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw ValidationError("Cannot read the SMTP CA file \(path).")
                }
                ca = String(decoding: data, as: UTF8.self)
            }
            settings.mail = SMTPSettings(
                host: host, port: port, security: security, senderAddress: from,
                senderName: value(smtpFromName, "ASSENT_SMTP_FROM_NAME") ?? "Assent", username: user,
                password: password, trustRootsPEM: ca)
        }
        if let text = value(phoneGatewayURL, "ASSENT_PHONE_GATEWAY_URL") {
            guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw ValidationError("The phone gateway URL must be an http(s) URL.")
            }
            guard let secret = environment["ASSENT_PHONE_GATEWAY_SECRET"], secret.utf8.count >= 16 else {
                throw ValidationError(
                    "Set ASSENT_PHONE_GATEWAY_SECRET (at least 16 characters) to sign gateway messages.")
            }
            settings.phoneGateway = WebhookSettings(url: url, secret: Data(secret.utf8))
        }
    }
}
