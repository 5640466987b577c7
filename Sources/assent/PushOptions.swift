import ArgumentParser
import AssentServer
import Foundation

/// `assent serve`'s push-service options. Every option also reads an environment variable; secrets (the HMS app
/// secret) only come from the environment or files.
struct PushOptions: ParsableArguments {
    @Option(help: "APNs signing key (.p8) file. Env: ASSENT_APNS_KEY_FILE.") var apnsKeyFile: String?
    @Option(help: "APNs Key ID of that key (10 characters). Env: ASSENT_APNS_KEY_ID.") var apnsKeyId: String?
    @Option(help: "Apple Team ID (10 characters). Env: ASSENT_APNS_TEAM_ID.") var apnsTeamId: String?
    @Option(help: "The app's bundle id, the APNs topic. Env: ASSENT_APNS_TOPIC.") var apnsTopic: String?
    @Option(
        help: "Send every APNs push (every application's) to this gateway instead of Apple's. Env: ASSENT_APNS_URL.")
    var apnsURL: String?
    @Option(help: "FCM service-account JSON file. Env: ASSENT_FCM_SERVICE_ACCOUNT.") var fcmServiceAccount: String?
    @Option(help: "FCM API base URL instead of Google's. Env: ASSENT_FCM_URL.") var fcmURL: String?
    @Option(help: "Huawei Push Kit app id; its secret comes from ASSENT_HMS_APP_SECRET. Env: ASSENT_HMS_APP_ID.")
    var hmsAppId: String?
    @Option(help: "Push Kit API base URL instead of Huawei's. Env: ASSENT_HMS_URL.") var hmsURL: String?
    @Option(help: "Huawei OAuth token URL instead of Huawei's. Env: ASSENT_HMS_TOKEN_URL.") var hmsTokenURL: String?
    @Option(
        help: """
            Extra CA certificates (PEM) trusted for the push services, Web Push endpoints, webhooks and callbacks. \
            Env: ASSENT_PUSH_CA_FILE.
            """)
    var pushCAFile: String?
    @Option(
        help: ArgumentHelp(
            "Send Web Push (browsers, UnifiedPush) with this VAPID contact: mailto:… or https://…. Env: ASSENT_VAPID_SUBJECT.",
            discussion: "The VAPID key pair is made at first start and sealed in the database."))
    var vapidSubject: String?
    @Option(help: "Days push attempts stay in the delivery trace (default 30). Env: ASSENT_PUSH_TRACE_DAYS.")
    var pushTraceDays: Int?

    /// The settings these options describe: the server's own credentials (the first application's unless it has its
    /// own), the gateways every application's pushes go through, and Web Push.
    func settings(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> PushSettings {
        func value(_ option: String?, _ name: String) -> String? {
            (option ?? environment[name]).flatMap { $0.isEmpty ? nil : $0 }
        }
        func file(_ path: String, _ what: String) throws -> Data {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("Cannot read the \(what) file \(path).")
            }
            return data
        }
        func url(_ text: String?, _ what: String) throws -> URL? {
            guard let text else { return nil }
            guard let url = URL(string: text), url.scheme == "https", url.host != nil else {
                throw ValidationError("The \(what) must be an https URL.")
            }
            return url
        }
        var settings = PushSettings()
        settings.gateways = PushGateways(
            apns: try url(value(apnsURL, "ASSENT_APNS_URL"), "APNs URL"),
            fcm: try url(value(fcmURL, "ASSENT_FCM_URL"), "FCM URL"),
            hms: try url(value(hmsURL, "ASSENT_HMS_URL"), "HMS URL"),
            hmsToken: try url(value(hmsTokenURL, "ASSENT_HMS_TOKEN_URL"), "HMS token URL"))
        if let keyFile = value(apnsKeyFile, "ASSENT_APNS_KEY_FILE") {
            guard let keyId = value(apnsKeyId, "ASSENT_APNS_KEY_ID"),
                let teamId = value(apnsTeamId, "ASSENT_APNS_TEAM_ID"), let topic = value(apnsTopic, "ASSENT_APNS_TOPIC")
            else { throw ValidationError("APNs needs --apns-key-id, --apns-team-id and --apns-topic with the key.") }
            settings.apns = try APNsSettings(
                teamId: teamId, keyId: keyId,
                privateKeyPEM: String(decoding: try file(keyFile, "APNs key"), as: UTF8.self), topic: topic)
        }
        if let account = value(fcmServiceAccount, "ASSENT_FCM_SERVICE_ACCOUNT") {
            settings.fcm = try FCMSettings(serviceAccountJSON: try file(account, "FCM service account"))
        }
        if let appId = value(hmsAppId, "ASSENT_HMS_APP_ID") {
            guard let secret = environment["ASSENT_HMS_APP_SECRET"], !secret.isEmpty else {
                throw ValidationError("Set ASSENT_HMS_APP_SECRET to the Huawei app secret.")
            }
            settings.hms = try HMSSettings(appId: appId, appSecret: secret)
        }
        if let subject = value(vapidSubject, "ASSENT_VAPID_SUBJECT") {
            settings.webPush = try WebPushSettings(subject: subject)
        }
        if let caFile = value(pushCAFile, "ASSENT_PUSH_CA_FILE") {
            settings.additionalTrustRootsPEM = String(decoding: try file(caFile, "push CA"), as: UTF8.self)
        }
        if let days = try pushTraceDays
            ?? value(nil, "ASSENT_PUSH_TRACE_DAYS").map({ text -> Int in
                guard let days = Int(text) else { throw ValidationError("ASSENT_PUSH_TRACE_DAYS is a number of days.") }
                return days
            })
        {
            guard (1...3650).contains(days) else { throw ValidationError("--push-trace-days is 1 to 3650.") }
            settings.traceRetention = .seconds(days * 86_400)
        }
        return settings
    }
}
