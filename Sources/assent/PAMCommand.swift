import ArgumentParser
import AssentCrypto
import AssentModel
import Crypto
import Foundation

/// `assent pam start|finish`: a host's second factor from Assent, run by PAM's `pam_exec` (SSH logins).
///
/// Two `pam_exec` lines make one conversation: `start` (with `stdout`) asks Assent, which sends the push, and prints
/// what the person must do ("Approve … and choose 42, then press Enter"); sshd shows it with the next prompt, which
/// `finish` (with `expose_authtok`) asks for — a code, or nothing after approving — and Assent decides. Both run in
/// the same PAM process, whose id keys the state between them in a root-only directory.
struct PAMCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pam",
        abstract: "A host's second factor from Assent, for PAM's pam_exec (SSH logins).",
        discussion: """
            In /etc/pam.d/sshd, after the first factor (an SSH key: AuthenticationMethods \
            publickey,keyboard-interactive), as the auth stack:
              auth requisite pam_exec.so stdout quiet /usr/local/bin/assent pam start --url URL --key-file FILE
              auth required pam_exec.so expose_authtok quiet /usr/local/bin/assent pam finish --url URL --key-file FILE
              auth required pam_permit.so
            The key (scope access:check) is read from FILE, which only its owner may read. When Assent cannot be \
            reached the login is refused, except for the users named by --break-glass; a refusal by Assent is never \
            overridden. docs/INTEGRATIONS.md.
            """,
        subcommands: [Start.self, Finish.self])

    /// What both steps take.
    struct HostOptions: ParsableArguments {
        @Option(help: "Assent's address (https://…).") var url: String
        @Option(help: "A file holding the host's API key (scope access:check), readable by its owner only.")
        var keyFile: String
        @Option(help: "The application whose accounts sign in here (its id; default: the key's or the first).")
        var application: String?
        @Option(help: "The host's name as the phone shows it (default: this machine's).") var host: String?
        @Option(
            name: .customLong("break-glass"),
            help: "A user let in when Assent cannot be reached (repeatable); never when Assent refuses.")
        var breakGlass: [String] = []
        @Option(help: "Where start leaves the sign-in for finish (root only).") var stateDir = "/run/assent-pam"

        func client() throws -> OperatorClient {
            guard let baseURL = URL(string: url), baseURL.scheme == "https" || baseURL.scheme == "http" else {
                throw ValidationError("--url must be an http(s) URL.")
            }
            let attributes = try FileManager.default.attributesOfItem(atPath: keyFile)
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0o777
            guard mode & 0o077 == 0 else {
                throw ValidationError("\(keyFile) may be read by others: chmod 600 it.")
            }
            let key = try String(contentsOfFile: keyFile, encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)
            guard !key.isEmpty else { throw ValidationError("\(keyFile) holds no key.") }
            return OperatorClient(baseURL: baseURL, apiKey: key, application: application)
        }

        /// The PAM user and the person's address (pam_exec's environment); refuses outside PAM's auth stack.
        func pamUser() throws -> (user: String, address: String?) {
            let environment = ProcessInfo.processInfo.environment
            guard environment["PAM_TYPE"] == "auth" else {
                throw ValidationError("assent pam runs in PAM's auth stack (pam_exec sets PAM_TYPE=auth).")
            }
            guard let user = environment["PAM_USER"], !user.isEmpty else {
                throw ValidationError("PAM_USER is not set: run assent pam through pam_exec.")
            }
            return (user, environment["PAM_RHOST"].flatMap { $0.isEmpty ? nil : $0 })
        }

        /// The file start leaves for finish: named by the PAM process and the user.
        func stateFile(user: String) throws -> URL {
            let directory = URL(fileURLWithPath: stateDir, isDirectory: true)
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let name = Hex.encode(Data(SHA256.hash(data: Data(user.utf8)).prefix(12)))
            return directory.appendingPathComponent("\(getppid())-\(name)")
        }

        var hostName: String { host ?? ProcessInfo.processInfo.hostName }

        func isUnreachable(_ error: any Error) -> Bool {
            (error as? OperatorClient.Failure)?.code == CLIFailure.unreachableCode
        }
    }

    /// What start leaves for finish.
    struct Pending: Codable {
        /// `CHALLENGE` (finish answers it), `ACCEPT` (no second factor due) or `BREAK_GLASS`.
        var outcome: String
        var state: String?
        var at: Date
    }

    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Ask Assent for the second factor; print what the person must do (pam_exec stdout).")
        @OptionGroup var options: HostOptions

        func run() async throws {
            let (user, address) = try options.pamUser()
            let file = try options.stateFile(user: user)
            try? FileManager.default.removeItem(at: file)
            func leave(_ pending: Pending) throws {
                let data = try JSONEncoder().encode(pending)
                guard
                    FileManager.default.createFile(
                        atPath: file.path, contents: data, attributes: [.posixPermissions: 0o600])
                else { throw ValidationError("Cannot write \(file.path).") }
            }
            let answer: HostAccessResponse
            do {
                answer = try await options.client().post(
                    "api/v1/access/start",
                    body: HostAccessRequest(userId: user, host: options.hostName, clientAddress: address),
                    as: HostAccessResponse.self)
            } catch  where options.isUnreachable(error) && options.breakGlass.contains(user) {
                try leave(Pending(outcome: "BREAK_GLASS", at: Date()))
                say("Assent cannot be reached: signed in as a break-glass user.")
                return
            } catch  where options.isUnreachable(error) {
                say("Assent cannot be reached: the sign-in is refused.")
                throw ExitCode(1)
            } catch let failure as OperatorClient.Failure {
                say("The sign-in cannot be checked: \(failure.message)")
                throw ExitCode(1)
            }
            switch answer.decision {
            case "ACCEPT", "CHALLENGE":
                try leave(Pending(outcome: answer.decision, state: answer.state, at: Date()))
                if answer.decision == "CHALLENGE" { say(answer.message) }
            default:
                say(answer.message)
                throw ExitCode(1)
            }
        }
    }

    struct Finish: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read what the person typed (pam_exec expose_authtok) and let Assent decide; exit 0 lets in.")
        @OptionGroup var options: HostOptions

        func run() async throws {
            let (user, address) = try options.pamUser()
            let file = try options.stateFile(user: user)
            let data = try? Data(contentsOf: file)
            try? FileManager.default.removeItem(at: file)
            // pam_exec writes the typed text and a NUL.
            let input = FileHandle.standardInput.readDataToEndOfFile().prefix(1024)
            let typed = String(decoding: input.prefix { $0 != 0 }, as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            guard let data, let pending = try? JSONDecoder().decode(Pending.self, from: data),
                Date().timeIntervalSince(pending.at) < 600
            else {
                FileHandle.standardError.write(Data("assent pam: no sign-in was started (run start first)\n".utf8))
                throw ExitCode(1)
            }
            switch pending.outcome {
            case "ACCEPT", "BREAK_GLASS": return
            default: break
            }
            let answer: HostAccessResponse
            do {
                answer = try await options.client().post(
                    "api/v1/access/finish",
                    body: HostAccessRequest(
                        userId: user, host: options.hostName, clientAddress: address, state: pending.state,
                        typed: typed),
                    as: HostAccessResponse.self)
            } catch {
                // Assent decided at start that a second factor is due: without it, no one is let in.
                FileHandle.standardError.write(Data("assent pam: \(error)\n".utf8))
                throw ExitCode(1)
            }
            guard answer.decision == "ACCEPT" else {
                FileHandle.standardError.write(Data("assent pam: \(answer.message)\n".utf8))
                throw ExitCode(1)
            }
        }
    }
}
