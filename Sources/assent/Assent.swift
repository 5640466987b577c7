import ArgumentParser
import Foundation

/// The `assent` command: the server, its administration, and the command-line token.
@main
struct Assent: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assent",
        abstract: "Assent: an open mobile-token platform (PowerAuth 3.3 server, operator tools and CLI token).",
        discussion: """
            Start a server with `assent serve`, manage it with `assent admin …`, approve operations with `assent token …`,
            try the OpenID provider as a relying party with `assent rp ciba`.

            Exit codes: 0 success, 1 failure, 2 usage error, 3 not found, 4 not authorised, 5 conflict with the \
            current state, 6 server unreachable.
            """,
        version: "0.3.0",
        subcommands: [
            ServeCommand.self, MigrateCommand.self, ConfigCommand.self, DoctorCommand.self, AdminCommand.self,
            TokenCommand.self,
            AuditToolCommand.self,
            PAMCommand.self,
            RPCommand.self,
        ]
    )

    static func main() async {
        var arguments = SharedOptions.reordered(Array(CommandLine.arguments.dropFirst()))
        let environment: [String: String]
        do {
            (arguments, environment) = try ServeConfiguration.expanding(
                arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            let lines = error.mistakes.map { "error: \(error.path): \($0)\n" }.joined()
            FileHandle.standardError.write(Data((lines + "Check it with: assent config check \(error.path)\n").utf8))
            Foundation.exit(2)
        }
        SettingsEnvironment.use(environment)
        var parsed: (any ParsableCommand.Type)?
        do {
            var command = try parseAsRoot(arguments)
            parsed = type(of: command)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            // A usage error exits 2, as the discussion above promises (the parser's own default is 64).
            guard exitCode(for: error) == .validationFailure else { exit(withError: error) }
            let hint = suggestion(for: arguments).map { "\n\($0)" } ?? ""
            FileHandle.standardError.write(Data((usageError(error, in: parsed) + hint + "\n").utf8))
            Foundation.exit(2)
        }
    }

    /// "Did you mean …?" for a mistyped subcommand: the first word that names no subcommand where one is expected,
    /// and the subcommands there within two edits of it.
    static func suggestion(for arguments: [String]) -> String? {
        var command: any ParsableCommand.Type = Assent.self
        var path = ["assent"]
        for argument in arguments where !argument.hasPrefix("-") {
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty else { return nil }
            if let next = subcommands.first(where: { names(of: $0).contains(argument) }) {
                command = next
                path.append(argument)
                continue
            }
            var close: [String] = []
            for subcommand in subcommands where editDistance(subcommand._commandName, argument) <= 2 {
                close.append(subcommand._commandName)
            }
            guard !close.isEmpty else { return nil }
            return "Did you mean " + close.map { "'\((path + [$0]).joined(separator: " "))'" }.joined(separator: " or ")
                + "?"
        }
        return nil
    }

    /// The names a subcommand answers to.
    static func names(of command: any ParsableCommand.Type) -> [String] {
        [command._commandName] + command.configuration.aliases
    }

    /// The Levenshtein distance of two words.
    static func editDistance(_ first: String, _ second: String) -> Int {
        let a = Array(first)
        let b = Array(second)
        var previous: [Int] = Array(0...b.count)
        for i in 0..<a.count {
            var current: [Int] = [i + 1]
            for j in 0..<b.count {
                let substitution = previous[j] + (a[i] == b[j] ? 0 : 1)
                current.append(Swift.min(previous[j + 1] + 1, current[j] + 1, substitution))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// A usage error with the usage of the command it is about: the parser's own message for errors found while
    /// parsing, and for one a command's `run` found, its usage rather than the top-level one.
    static func usageError(_ error: any Error, in command: (any ParsableCommand.Type)?) -> String {
        guard let command, let validation = error as? ValidationError else { return fullMessage(for: error) }
        let usage = usageString(for: command)
        let path = usage.split(separator: " ").prefix { !"[<-".contains($0.first ?? "-") }.joined(separator: " ")
        return "Error: \(validation.message)\nUsage: \(usage)\n  See '\(path) --help' for more information."
    }
}
