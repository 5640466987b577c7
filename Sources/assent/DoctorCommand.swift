import ArgumentParser
import AssentServer
import Foundation
import Logging

/// `assent doctor`: a server's configuration checked against reality, a line per check.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check a server's configuration against reality, a line per check.",
        discussion: """
            Give it what assent serve is given (--config FILE, or its flags and environment). It checks the \
            settings as serve does; that the database answers and its schema is this build's; that the \
            key-encryption key is there and opens the database's secrets; the clock against PostgreSQL's; that \
            APNs, FCM and Push Kit accept the push credentials (an OAuth token, or for APNs a made-up device \
            token refused after the provider token was accepted); that the mail relay answers with its TLS and \
            accepts its user; that the public URL (issuer) answers as this server. It changes nothing and sends no \
            notification or mail. Each line is OK or FAIL with a sentence; exit 0 when every check is OK, 1 otherwise.

            Example: assent doctor --config /etc/assent/assent.yaml
            """)

    @Argument(parsing: .captureForPassthrough, help: "assent serve's flags, such as --config FILE.")
    var serveArguments: [String] = []

    func run() async throws {
        var findings: [Doctor.Finding] = []
        defer { Self.report(findings) }
        let configurationFailed = { (sentences: [String]) in
            sentences.map { Doctor.Finding("configuration", ok: false, $0) }
        }
        let arguments: [String]
        let environment: [String: String]
        do {
            (arguments, environment) = try ServeConfiguration.expanding(
                ["serve"] + serveArguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            findings += configurationFailed(error.mistakes.map { "\(error.path): \($0)" })
            return
        }
        let command: ServeCommand
        do {
            command = try ServeCommand.parse(Array(arguments.dropFirst()))
        } catch {
            findings += configurationFailed([ServeCommand.message(for: error)])
            return
        }
        var logger = Logger(label: "assent.doctor")
        logger.logLevel = .critical
        let settings: ServeCommand.Settings?
        do {
            settings = try await command.settings(environment: environment)
            findings.append(Doctor.Finding("configuration", ok: true, "Every setting is valid."))
        } catch {
            settings = nil
            findings += configurationFailed(error.sentences)
        }
        findings += await Doctor.storage(
            command.storage.location(environment), environment: environment, logger: logger)
        guard let settings else { return }
        findings += await Doctor.push(settings.push)
        if let mail = settings.tfa.mail { findings.append(await Doctor.mail(mail)) }
        if let issuer = settings.issuer {
            findings.append(await Doctor.publicURL(issuer, trustRootsPEM: settings.push.additionalTrustRootsPEM))
        } else {
            findings.append(
                Doctor.Finding(
                    "public URL", ok: false,
                    "No issuer is set: relying parties and links use http://HOST:PORT. Set issuer to the public "
                        + "https URL people and relying parties reach."))
        }
    }

    /// Prints the findings, a line each, and exits 1 when one failed.
    static func report(_ findings: [Doctor.Finding]) {
        for finding in findings {
            say((finding.ok ? "OK    " : "FAIL  ") + "\(finding.check): \(finding.sentence)")
        }
        let failed = findings.filter { !$0.ok }.count
        say("\(findings.count) checks, \(failed) failed.")
        if failed > 0 { Foundation.exit(1) }
    }
}
