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
        subcommands: [ServeCommand.self, AdminCommand.self, TokenCommand.self, RPCommand.self]
    )

    static func main() async {
        let arguments = SharedOptions.reordered(Array(CommandLine.arguments.dropFirst()))
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            // A usage error exits 2, as the discussion above promises (the parser's own default is 64).
            guard exitCode(for: error) == .validationFailure else { exit(withError: error) }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(2)
        }
    }
}
