import ArgumentParser
import AssentCrypto
import AssentModel
import AssentServer
import Foundation
import Hummingbird
import Logging

/// `assent serve`: runs the server until SIGTERM or SIGINT.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the Assent server.",
        discussion: """
            With no flags it listens on 127.0.0.1:8080 and keeps everything in ./assent-data: the SQLite database, \
            the key-encryption key (mode 0600) that encrypts every secret at rest, and nothing else. The first \
            start creates an application and an operator API key, printed once.

            Example: assent serve --port 9000 --database postgres://assent:secret@127.0.0.1:5432/assent
            """
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on (0 picks a free one).") var port = 8080
    @OptionGroup var storage: StorageOptions
    @Option(help: "Counter look-ahead window for signatures (1-255).") var lookAhead = 20
    @Option(help: "Failed signature attempts that block an activation (1-255).") var maxFailedAttempts = 5
    @Option(help: "Activation code lifetime in seconds.") var codeLifetime = 300
    @Option(help: "Operation lifetime in seconds unless the creator sets expiresIn.") var operationLifetime = 300
    @Option(
        help: """
            Remove finished operations this many days after their creation (default: keep them). On PostgreSQL a \
            month's partition is dropped once the whole month is past it.
            """)
    var operationRetentionDays: Int?
    @Option(help: "Shortest PIN devices accept (at least 4).") var pinMinLength = 4
    @Option(help: "Longest PIN devices accept (at most 64).") var pinMaxLength = 16
    @Flag(help: "Allow any characters in PINs, not only digits.") var pinAlphanumeric = false
    @Flag(help: "Refuse signatures made with biometry, and tell devices not to offer it.") var disableBiometry = false
    @Option(help: "Days a PIN may be used before the device must change it to approve operations (default: never).")
    var maxPinAge: Int?
    @Option(
        help: """
            URL that receives every operation status change as a signed POST (X-Assent-Signature). The HMAC key \
            comes from ASSENT_WEBHOOK_SECRET. Env: ASSENT_WEBHOOK_URL.
            """)
    var webhookURL: String?
    @OptionGroup(title: "Push notifications") var push: PushOptions
    @OptionGroup(title: "Two-factor login") var tfa: TFAOptions
    @OptionGroup(title: "Audit trail") var audit: AuditOptions
    @OptionGroup(title: "Tracing") var tracing: TracingOptions
    @Option(
        name: .customLong("rate-limit"),
        help: ArgumentHelp(
            "Change a rate limit: NAME=LIMIT/SECONDS (repeatable).",
            discussion: """
                Names and defaults: activation-address=20/300 and activation-code=5/300 (wrong activation codes per \
                client address and per code's first two groups), operator-key-failures=10/300 (wrong operator keys \
                and console sign-ins per address), operator-account-failures=20/900 (wrong console sign-ins per \
                operator account), offline-operation=10/300 and offline-activation=30/300 (offline-code verifications), \
                proximity-operation=10/300 (approvals with a proximity check), client-auth-failures=10/300 (failed \
                OpenID client authentications per address), login-user=10/900 and login-address=50/900 (wrong \
                passwords per account and per address), tfa-user=10/900 (wrong second-factor codes per account), \
                code-destination=5/3600 and code-user=10/3600 (codes sent per address or number and per account).
                """))
    var rateLimits: [String] = []
    @Flag(help: "Turn every rate limit off (load tests only: they guard against guessing).") var noRateLimits = false
    @Flag(
        help: """
            Let an operator API key sign in to the console too (break-glass; operator accounts with a password and \
            TOTP otherwise).
            """)
    var consoleAPIKeySignIn = false
    @Option(
        help: """
            Seconds a console session lasts after the operator's last page or action (60-86400; PCI DSS asks for 900 \
            at most).
            """)
    var consoleIdleTimeout = ConsoleSessionSettings().idleTimeout
    @Option(help: "Seconds a console session lasts after signing in, however active (300-604800).")
    var consoleMaxSession = ConsoleSessionSettings().maxLifetime
    @Option(
        name: .customLong("trusted-proxy"),
        help: ArgumentHelp(
            "A reverse proxy in front of the server: an address or network such as 10.0.0.0/8 (repeatable).",
            discussion: """
                Requests from these peers are counted by the client their X-Forwarded-For names (the right-most \
                address that is not itself a trusted proxy) in the per-address rate limits; from any other peer the \
                header is ignored. Without this, every client behind a proxy shares the proxy's limits. \
                Env: ASSENT_TRUSTED_PROXIES (comma-separated).
                """))
    var trustedProxies: [String] = []
    @Option(
        name: .customLong("egress-allow"),
        help: ArgumentHelp(
            "A network the server may send requests to although it is not public, e.g. 10.1.0.0/16 (repeatable).",
            discussion: """
                Web Push endpoints, webhooks, CIBA and back-channel logout callbacks and the phone gateway are \
                reached only at public addresses: loopback, private, link-local, carrier-grade NAT, multicast and \
                reserved addresses are refused, and plain http goes only to the networks allowed here. Allow a \
                lab's loopback with 127.0.0.0/8, an internal webhook receiver with its network. \
                Env: ASSENT_EGRESS_ALLOW (comma-separated).
                """))
    var egressAllow: [String] = []
    @Option(
        help: """
            The OpenID provider's issuer: the public https URL relying parties reach this server at (default \
            http://HOST:PORT it listens on). Env: ASSENT_ISSUER.
            """)
    var issuer: String?
    @Option(
        help: """
            The organisation's name people see on the pages, in push requests and in authenticator apps, given to \
            the first application at the first start (default: the issuer's host, else this machine's name; \
            rename later with assent admin application update --name or in the console). Env: ASSENT_ORGANISATION.
            """)
    var organisation: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") var logLevel = "info"
    @Option(
        help: ArgumentHelp(
            "Seconds a stopping server keeps serving before it closes its listener (0-300).",
            discussion: """
                On SIGTERM or SIGINT the server first drains: it answers readiness with 503 and every request with \
                Connection: close, so a proxy closes its connections to it instead of sending a request on one the \
                server is closing. Make it longer than the proxy's idle timeout for upstream connections \
                (keepalive_timeout 2s in deploy/nginx/assent.conf). A second signal stops at once.
                """))
    var drainSeconds = 5

    @Option(
        help: ArgumentHelp(
            "A YAML file of settings: each key is a flag's name (port: 8080). Env: ASSENT_CONFIG.",
            discussion: """
                Secrets may be keys too (smtp-password, webhook-secret, kek, …) or come from files \
                (smtp-password-file: /run/credentials/assent.service/smtp-password). A flag on the command line \
                wins over the environment, which wins over the file. `assent config keys` lists every key, \
                `assent config check FILE` names each mistake in a file.
                """))
    var config: String?

    /// What ``settings(environment:)`` found wrong: a sentence per setting.
    struct Mistakes: Error {
        var sentences: [String]
    }

    /// Everything `serve` starts with besides its listener and storage.
    struct Settings {
        var logLevel: Logger.Level
        var policy: SecurityPolicy
        var limits: RateLimits
        var webhook: WebhookSettings?
        var proxies: TrustedProxies
        var push: PushSettings
        var tfa: TFASettings
        var egress: Egress
        var audit: AuditSettings
        var consoleSessions: ConsoleSessionSettings
        var issuer: String?
        var organisation: String?
        /// Where spans go, when anywhere.
        var tracing: TracingOptions.Settings?
    }

    /// The settings the flags and `environment` describe.
    /// - Throws: ``Mistakes`` naming every setting that is wrong, not only the first.
    func settings(environment: [String: String]) async throws(Mistakes) -> Settings {
        var mistakes: [String] = []
        func checked<T>(_ body: () throws -> T) -> T? {
            do {
                return try body()
            } catch {
                mistakes.append(Self.sentence(error))
                return nil
            }
        }
        let level = checked { () throws -> Logger.Level in
            guard let level = Logger.Level(rawValue: logLevel) else {
                throw ValidationError(
                    "Unknown log level \(logLevel): trace, debug, info, notice, warning, error or critical.")
            }
            return level
        }
        var policy = SecurityPolicy()
        policy.counterLookAhead = lookAhead
        policy.maxFailedAttempts = maxFailedAttempts
        policy.activationCodeLifetime = codeLifetime
        policy.operationLifetime = operationLifetime
        policy.pinMinimumLength = pinMinLength
        policy.pinMaximumLength = pinMaxLength
        policy.pinAlphanumeric = pinAlphanumeric
        policy.biometryEnabled = !disableBiometry
        policy.maximumPINAge = maxPinAge.map { $0 * 86_400 }
        policy.operationRetention = operationRetentionDays.map { min($0, 1_000_000) * 86_400 }
        _ = checked { try policy.validate() }
        var limits = RateLimits()
        limits.enabled = !noRateLimits
        for text in rateLimits {
            _ = checked { try limits.set(text) }
        }
        let webhook = checked { try webhookSettings(environment) }
        let proxies = checked { try trustedProxySettings(environment) }
        let pushSettings = checked { try push.settings(environment: environment) }
        var tfaSettings = TFASettings()
        let tfaApplied: Void? = checked { try tfa.apply(to: &tfaSettings, environment: environment) }
        let egress = checked { try egressSettings(environment, trustRootsPEM: pushSettings?.additionalTrustRootsPEM) }
        var auditSettings = AuditSettings()
        let auditApplied: Void? = checked { try audit.apply(to: &auditSettings, environment: environment) }
        if !(0...300).contains(drainSeconds) { mistakes.append("--drain-seconds is 0 to 300.") }
        var consoleSessions = ConsoleSessionSettings()
        (consoleSessions.idleTimeout, consoleSessions.maxLifetime) = (consoleIdleTimeout, consoleMaxSession)
        _ = checked { try consoleSessions.validate() }
        let issuer = checked { try issuerURL(environment) }
        let tracingSettings = checked { try tracing.settings(environment: environment) }
        let organisation = checked { try organisationName(environment) }
        // The operator's own destinations obey the egress policy: refused now rather than at the first delivery.
        if let egress {
            var destinations = [
                ("--webhook-url", webhook??.url), ("--phone-gateway-url", tfaSettings.phoneGateway?.url),
            ]
            for witness in auditSettings.witnesses {
                guard case .webhook(let url, _) = witness.destination else { continue }
                destinations.append(("--audit-witness \(url)", url))
            }
            for (flag, url) in destinations {
                guard let url else { continue }
                do {
                    _ = try await egress.check(url.absoluteString)
                } catch {
                    mistakes.append("\(flag) is refused: \(error.message)")
                }
            }
        }
        guard mistakes.isEmpty, let level, let webhook, let proxies, let pushSettings, tfaApplied != nil,
            let egress, auditApplied != nil, let issuer, let organisation, let tracingSettings
        else { throw Mistakes(sentences: mistakes) }
        return Settings(
            logLevel: level, policy: policy, limits: limits, webhook: webhook, proxies: proxies, push: pushSettings,
            tfa: tfaSettings, egress: egress, audit: auditSettings, consoleSessions: consoleSessions, issuer: issuer,
            organisation: organisation, tracing: tracingSettings)
    }

    /// The sentence an error of a setting says.
    static func sentence(_ error: any Error) -> String {
        switch error {
        case let error as ValidationError: error.message
        case let error as AssentServerError: error.message
        default: "\(error)"
        }
    }

    /// The webhook settings from `--webhook-url` / `ASSENT_WEBHOOK_URL` and `ASSENT_WEBHOOK_SECRET`.
    func webhookSettings(_ environment: [String: String]) throws -> WebhookSettings? {
        guard let text = webhookURL ?? environment["ASSENT_WEBHOOK_URL"] else { return nil }
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw ValidationError("The webhook URL must be an http(s) URL.")
        }
        guard let secret = environment["ASSENT_WEBHOOK_SECRET"], secret.utf8.count >= 16 else {
            throw ValidationError(
                "Set ASSENT_WEBHOOK_SECRET or webhook-secret (at least 16 characters) to sign webhook deliveries.")
        }
        return WebhookSettings(url: url, secret: Data(secret.utf8))
    }

    /// The values of a repeatable option, else of its environment variable (comma-separated).
    static func list(_ given: [String], _ variable: String, _ environment: [String: String]) -> [String] {
        guard given.isEmpty else { return given }
        return (environment[variable] ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
    }

    /// `--trusted-proxy` / `ASSENT_TRUSTED_PROXIES`.
    func trustedProxySettings(_ environment: [String: String]) throws -> TrustedProxies {
        TrustedProxies(
            try Self.list(trustedProxies, "ASSENT_TRUSTED_PROXIES", environment).map(IPNetwork.init(parsing:)))
    }

    /// `--egress-allow` / `ASSENT_EGRESS_ALLOW`, and the CA certificates of `--push-ca-file`.
    func egressSettings(_ environment: [String: String], trustRootsPEM: String?) throws -> Egress {
        Egress(
            policy: EgressPolicy(
                allowing: try Self.list(egressAllow, "ASSENT_EGRESS_ALLOW", environment).map(IPNetwork.init(parsing:))),
            trustRoots: try trustRootsPEM.map(Egress.certificates(pem:)) ?? [])
    }

    /// `--organisation` / `ASSENT_ORGANISATION`: 1 to 100 characters, not only spaces.
    func organisationName(_ environment: [String: String]) throws -> String? {
        guard let text = organisation ?? environment["ASSENT_ORGANISATION"] else { return nil }
        guard let name = InputText.displayName(text) else {
            throw ValidationError("The organisation's name has 1 to 100 characters, not only spaces.")
        }
        return name
    }

    /// `--issuer` / `ASSENT_ISSUER`: an absolute http(s) URL without query or fragment.
    func issuerURL(_ environment: [String: String]) throws -> String? {
        guard let text = issuer ?? environment["ASSENT_ISSUER"] else { return nil }
        guard let url = URLComponents(string: text), url.scheme == "https" || url.scheme == "http", url.host != nil,
            url.query == nil, url.fragment == nil
        else { throw ValidationError("The issuer must be an http(s) URL without query or fragment.") }
        return text
    }

    func run() async throws {
        let environment = SettingsEnvironment.current
        let settings: Settings
        do {
            settings = try await self.settings(environment: environment)
        } catch {
            throw ValidationError(error.sentences.joined(separator: "\n"))
        }
        let (policy, limits, webhook, pushSettings, tfaSettings) = (
            settings.policy, settings.limits, settings.webhook, settings.push, settings.tfa
        )
        LoggingSystem.bootstrap(
            { label, provider in
                var handler = JSONLogHandler(label: label, metadataProvider: provider)
                handler.logLevel = settings.logLevel
                return handler
            },
            metadataProvider: settings.tracing == nil
                ? RequestID.metadataProvider
                : .multiplex([RequestID.metadataProvider, TracingOptions.Settings.logMetadata]))
        let logger = Logger(label: "assent")
        try await CLIFailure.reporting {
            let exporting = try settings.tracing?.bootstrap()
            let store = try await ServerBootstrap.openStore(
                storage.location(environment), environment: environment, logger: logger)
            var environment = ServerEnvironment(
                store: store, policy: policy, logger: logger, webhook: webhook, push: pushSettings)
            environment.rateLimits = limits
            environment.trustedProxies = settings.proxies
            environment.egress = settings.egress
            environment.tfa = tfaSettings
            environment.audit = settings.audit
            environment.consoleAPIKeySignIn = consoleAPIKeySignIn
            environment.consoleSessions = settings.consoleSessions
            environment.openID.configuredIssuer = settings.issuer
            environment.traceRequests = exporting != nil
            let prepared = try await ServerBootstrap.prepare(environment, organisation: settings.organisation)
            // The OpenID signing keys, so that the first token request does not wait for an RSA key.
            try await Services(environment).signingKeys.ensureKeys()
            let openID = environment.openID
            let app = try AssentServerApplication.application(environment: environment, host: host, port: port) {
                port in
                say("Assent is listening on http://\(host):\(port)")
                if let path = prepared.firstAdminSetupPath {
                    say("First admin's console set-up link (one-time, 24 hours): \(openID.base)\(path)")
                }
                say(
                    "Operator console: http://\(host):\(port)/console (sign in with an operator account"
                        + (consoleAPIKeySignIn ? " or an API key)" : ")"))
                say("OpenID issuer: \(openID.issuer) (discovery at /.well-known/openid-configuration)")
            }
            say(
                "Database: \(store.backend.rawValue)\(store.backend == .sqlite ? " in \(storage.dataDirectory)" : "")"
            )
            say("Application key: \(prepared.application.applicationKey)")
            if prepared.applicationCreated {
                say(
                    "Organisation name on the pages: \(prepared.application.name) (change it with assent admin "
                        + "application update --name, or on the console's application page)")
            }
            if let webhook { say("Webhook: operation status changes go to \(webhook.url.absoluteString)") }
            let services = [
                pushSettings.apns.map { _ in "APNs" }, pushSettings.fcm.map { _ in "FCM" },
                pushSettings.hms.map { _ in "HMS" }, pushSettings.webPush.map { _ in "Web Push" },
            ].compactMap { $0 }
            if !services.isEmpty {
                say("Push: new and finished operations are notified through \(services.joined(separator: ", "))")
            }
            if pushSettings.webPush != nil {
                // Made now, not at the first push: subscribers need it before anything is sent.
                let key = try await Services(environment).pushDeliveries.applicationServerKey()
                say("Web Push key (applicationServerKey, also at /api/push/webpush/key): \(Base64URL.encode(key.x963))")
            }
            say(
                "Two-factor login: /api/tfa with "
                    + tfaSettings.offeredProviders.map(\.rawValue).joined(separator: ", ")
                    + (tfaSettings.mail.map { " (mail relay \($0.host):\($0.port))" } ?? ""))
            say("SDK configuration: \(try ApplicationService.sdkConfiguration(of: prepared.application))")
            if let key = prepared.bootstrapAPIKey {
                say("Operator API key (shown once, store it now): \(key)")
            }

            do {
                try await AssentServerApplication.serve(
                    app, alongside: exporting.map { [$0] } ?? [], logger: logger, drain: environment.drain,
                    drainFor: .seconds(drainSeconds))
            } catch {
                try? await store.shutdown()
                throw error
            }
            try await store.shutdown()
        }
    }
}

/// Where the server keeps its data; shared by `serve` and the store-level admin commands.
struct StorageOptions: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: "Directory for the SQLite database and the key-encryption key.")
    var dataDirectory = "assent-data"

    @Option(
        name: .customLong("database"),
        help:
            "PostgreSQL URL (postgres://user:password@host:port/db); default: SQLite in --data-dir. Env: ASSENT_DATABASE_URL."
    )
    var databaseOption: String?

    var databaseURL: String? { databaseURL(ProcessInfo.processInfo.environment) }

    func databaseURL(_ environment: [String: String]) -> String? {
        databaseOption ?? environment["ASSENT_DATABASE_URL"]
    }

    var location: ServerBootstrap.Location { location(ProcessInfo.processInfo.environment) }

    func location(_ environment: [String: String]) -> ServerBootstrap.Location {
        ServerBootstrap.Location(
            dataDirectory: URL(fileURLWithPath: dataDirectory, isDirectory: true), databaseURL: databaseURL(environment)
        )
    }
}

/// Writes a line to standard output at once (unbuffered), so keys printed at start-up reach pipes and files.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
