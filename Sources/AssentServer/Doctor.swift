import AssentCrypto
import AsyncHTTPClient
import Foundation
import Logging
import NIOSSL
import SQLKit

/// What `assent doctor` checks against reality, a finding per line: the database and its schema, the
/// key-encryption key against the database, the clock against the database's, the push services' acceptance of the
/// server's credentials, the mail relay. Nothing is changed and nothing is sent to a person or a device.
public enum Doctor {
    /// One line of the report: OK with what was found, or a sentence saying what is wrong and what to do.
    public struct Finding: Sendable, Equatable {
        public var check: String
        public var ok: Bool
        public var sentence: String

        public init(_ check: String, ok: Bool, _ sentence: String) {
            self.check = check
            self.ok = ok
            self.sentence = sentence
        }
    }

    /// How far the machine's clock may be from the database's.
    public static let clockTolerance: Double = 2

    /// The database at `location`, its schema, the key-encryption key of `environment` / the data directory, and
    /// the clock. Opens the database without migrating it and never makes a key.
    public static func storage(_ location: ServerBootstrap.Location, environment: [String: String], logger: Logger)
        async -> [Finding]
    {
        var findings: [Finding] = []
        let kekFile = location.dataDirectory.appendingPathComponent("kek")
        var box: SecretBox?
        if environment["ASSENT_KEK"].map({ !$0.isEmpty }) == true
            || FileManager.default.fileExists(atPath: kekFile.path)
        {
            do {
                let loaded = try SecretBox.load(dataDirectory: location.dataDirectory, environment: environment)
                let source = environment["ASSENT_KEK"].map { !$0.isEmpty } == true ? "ASSENT_KEK" : kekFile.path
                findings.append(
                    Finding(
                        "key-encryption key", ok: true,
                        "\(loaded.keyIds.count) key\(loaded.keyIds.count == 1 ? "" : "s") from \(source): "
                            + loaded.keyIds.joined(separator: ", ")))
                box = loaded
            } catch {
                findings.append(Finding("key-encryption key", ok: false, sentence(error)))
            }
        } else {
            findings.append(
                Finding(
                    "key-encryption key", ok: false,
                    "None: neither ASSENT_KEK (kek, kek-file) nor \(kekFile.path). A first start makes one; a database "
                        + "that already holds data needs the key it was sealed with."))
        }
        let store: SQLStore
        do {
            // Without the ring, a key of the moment opens the database for the checks that need no secret.
            let opening = try box ?? SecretBox(keyEncryptionKey: Bytes.random(count: 32))
            guard location.usesPostgres || FileManager.default.fileExists(atPath: location.sqlitePath) else {
                findings.append(
                    Finding(
                        "database", ok: false,
                        "No SQLite database at \(location.sqlitePath): the first start makes one."))
                return findings
            }
            store = try await ServerBootstrap.open(location, box: opening, logger: logger, maxConnections: 2)
        } catch {
            findings.append(Finding("database", ok: false, sentence(error)))
            return findings
        }
        let known = store.newestKnown
        var current = false
        do {
            switch try await store.schemaState() {
            case .current:
                current = true
                findings.append(
                    Finding(
                        "database", ok: true, "\(store.backend.rawValue) answers; schema current (version \(known))."))
            case .behind(let missing):
                findings.append(
                    Finding(
                        "database", ok: false,
                        "\(store.backend.rawValue) answers, but its schema lacks versions "
                            + missing.map(String.init).joined(separator: ", ")
                            + ": run `assent migrate` (with the schema owner's URL on PostgreSQL)."))
            case .aheadCompatible(let unknown):
                current = true
                findings.append(
                    Finding(
                        "database", ok: true,
                        "\(store.backend.rawValue) answers; schema at version \(unknown.last ?? 0), newer than this "
                            + "build (\(known)) and declared to serve it: a newer Assent migrated it first."))
            case .ahead(let unknown):
                findings.append(
                    Finding(
                        "database", ok: false,
                        SchemaNewerThanServer(unknown: unknown, known: known).description))
            }
        } catch {
            findings.append(Finding("database", ok: false, "The database does not answer: \(sentence(error))"))
        }
        if current, let box {
            findings.append(await keyMatches(store, box))
        }
        findings.append(await clock(store))
        try? await store.shutdown()
        return findings
    }

    /// Whether the ring holds the key the database names and opens what it sealed (the applications' master keys).
    static func keyMatches(_ store: SQLStore, _ box: SecretBox) async -> Finding {
        do {
            let state = try await store.keyRingState()
            guard box.holds(state.sealingKeyId) else {
                return Finding(
                    "key matches", ok: false,
                    SecretBox.missingKey(state.sealingKeyId) + " This ring holds " + box.keyIds.joined(separator: ", ")
                        + ".")
            }
            try box.seal(with: state.sealingKeyId)
            let applications = try await store.applications()
            return Finding(
                "key matches", ok: true,
                "The database seals with \(state.sealingKeyId), which the ring holds; it opens the master keys of "
                    + "\(applications.count) application\(applications.count == 1 ? "" : "s").")
        } catch {
            return Finding(
                "key matches", ok: false, "The ring does not open the database's secrets: \(sentence(error))")
        }
    }

    /// The machine's clock against PostgreSQL's (SQLite is this machine's clock).
    static func clock(_ store: SQLStore) async -> Finding {
        guard store.backend == .postgres else {
            return Finding("clock", ok: true, "SQLite keeps time by this machine's clock.")
        }
        do {
            let before = Date().timeIntervalSince1970
            let row = try await store.database.raw("SELECT extract(epoch FROM clock_timestamp())::float8 AS now")
                .first()
            let after = Date().timeIntervalSince1970
            let database = try row?.decode(column: "now", as: Double.self) ?? 0
            let skew = database - (before + after) / 2
            let text = String(format: "%+.3f", skew)
            guard abs(skew) <= clockTolerance else {
                return Finding(
                    "clock", ok: false,
                    "This machine's clock is \(text) s from the database's: expiries, TOTP codes and signature "
                        + "timestamps depend on both agreeing; synchronise them (NTP).")
            }
            return Finding("clock", ok: true, "Within \(text) s of the database's.")
        } catch {
            return Finding("clock", ok: false, "The database's clock could not be read: \(sentence(error))")
        }
    }

    /// Each configured push service's answer to the server's credentials, without a notification: an OAuth token
    /// for FCM and Push Kit; for APNs a request to a device token that cannot exist, which APNs refuses for the
    /// token only after it accepted the provider token.
    public static func push(_ settings: PushSettings) async -> [Finding] {
        guard settings.apns != nil || settings.fcm != nil || settings.hms != nil else { return [] }
        let transport: PushTransport
        do {
            transport = try PushTransport(settings: settings)
        } catch {
            return [Finding("push", ok: false, sentence(error))]
        }
        var findings: [Finding] = []
        if let apns = settings.apns.map(settings.gateways.routing) {
            findings.append(await apnsCredentials(apns, transport))
        }
        if let fcm = settings.fcm.map(settings.gateways.routing) {
            do {
                _ = try await FCMClient(settings: fcm, transport: transport).fetchAccessToken()
                findings.append(
                    Finding(
                        "FCM", ok: true, "Google issued an access token to \(fcm.clientEmail) for \(fcm.projectId)."))
            } catch {
                findings.append(Finding("FCM", ok: false, sentence(error)))
            }
        }
        if let hms = settings.hms.map(settings.gateways.routing) {
            do {
                _ = try await OAuthToken.fetch(
                    transport: transport, url: hms.tokenURL,
                    form: [
                        ("grant_type", "client_credentials"), ("client_id", hms.appId),
                        ("client_secret", hms.appSecret),
                    ],
                    service: "Huawei OAuth")
                findings.append(Finding("HMS", ok: true, "Huawei issued an access token to app \(hms.appId)."))
            } catch {
                findings.append(Finding("HMS", ok: false, sentence(error)))
            }
        }
        await transport.shutdown()
        return findings
    }

    static func apnsCredentials(_ settings: APNsSettings, _ transport: PushTransport) async -> Finding {
        let url = settings.productionURL.appendingPathComponent("3/device/" + String(repeating: "0", count: 64))
        do {
            let token = try APNsClient.ProviderTokens(settings: settings).token()
            let response = try await transport.send(
                .POST, url.absoluteString,
                headers: [
                    ("authorization", "bearer \(token)"), ("apns-topic", settings.topic),
                    ("apns-push-type", "background"), ("apns-priority", "5"), ("content-type", "application/json"),
                ],
                body: Data(#"{"aps":{"content-available":1}}"#.utf8))
            struct Answer: Decodable { var reason: String? }
            let reason = (try? JSONDecoder().decode(Answer.self, from: response.body))?.reason ?? "no reason"
            switch (response.status, reason) {
            case (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"), (200, _):
                return Finding(
                    "APNs", ok: true,
                    "APNs accepted the provider token of team \(settings.teamId), key \(settings.keyId), for topic "
                        + "\(settings.topic) (and refused the made-up device token, as it should).")
            default:
                return Finding(
                    "APNs", ok: false,
                    "APNs refused the provider token of team \(settings.teamId), key \(settings.keyId), topic "
                        + "\(settings.topic): \(reason) (HTTP \(response.status)).")
            }
        } catch {
            return Finding("APNs", ok: false, "APNs could not be reached at \(url.host ?? "?"): \(sentence(error))")
        }
    }

    /// The mail relay: connected, secured as configured, signed in, and left with QUIT (no message).
    public static func mail(_ settings: SMTPSettings) async -> Finding {
        do {
            try await SMTPClient(settings: settings).check()
            let security =
                switch settings.security {
                case .startTLS: "STARTTLS"
                case .tls: "TLS"
                case .none: "no TLS"
                }
            return Finding(
                "mail relay", ok: true,
                "\(settings.host):\(settings.port) answers with \(security)"
                    + (settings.username.map { " and accepts user \($0)" } ?? "") + "; no message sent.")
        } catch {
            return Finding("mail relay", ok: false, "\(settings.host):\(settings.port): \(sentence(error))")
        }
    }

    /// An error as a sentence: the server's own errors by their message, others as they describe themselves.
    static func sentence(_ error: any Error) -> String {
        switch error {
        case let error as AssentServerError: error.message
        case let error as SMTPError: error.message
        default:
            String(describing: error).contains("CERTIFICATE_VERIFY_FAILED")
                ? "Its TLS certificate does not verify against the system's CA certificates and the configured ones."
                : String(describing: error)
        }
    }
}

extension Doctor {
    /// The public URL answers as this server: `<issuer>/.well-known/openid-configuration` names the same issuer.
    public static func publicURL(_ issuer: String, trustRootsPEM: String?) async -> Finding {
        let address = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        var tls = TLSConfiguration.makeClientConfiguration()
        if let pem = trustRootsPEM, let roots = try? NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)) {
            tls.additionalTrustRoots = [.certificates(roots)]
        }
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow))
        defer { Task { try? await client.shutdown() } }
        do {
            let request = HTTPClientRequest(url: address + "/.well-known/openid-configuration")
            let response = try await client.execute(request, timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 256 * 1024)
            struct Discovery: Decodable { var issuer: String }
            guard response.status == .ok,
                let discovery = try? JSONDecoder().decode(Discovery.self, from: Data(body.readableBytesView))
            else {
                return Finding(
                    "public URL", ok: false,
                    "\(address)/.well-known/openid-configuration answered HTTP \(response.status.code), not this "
                        + "server's discovery document.")
            }
            guard discovery.issuer == issuer else {
                return Finding(
                    "public URL", ok: false,
                    "\(address) answers as issuer \(discovery.issuer), not \(issuer): another server, or one started "
                        + "with another issuer.")
            }
            return Finding("public URL", ok: true, "\(address) answers as this issuer.")
        } catch {
            return Finding("public URL", ok: false, "\(address) does not answer: \(sentence(error))")
        }
    }
}
