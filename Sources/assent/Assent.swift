import ArgumentParser

/// The `assent` command: the server, its administration, and the command-line token.
@main
struct Assent: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assent",
        abstract: "Assent: an open mobile-token platform (PowerAuth 3.3 server, operator tools and CLI token).",
        discussion: """
            Start a server with `assent serve`, manage it with `assent admin …`, approve operations with `assent token …`.

            Exit codes: 0 success, 1 failure, 2 usage error, 3 not found, 4 not authorised, 5 conflict with the \
            current state, 6 server unreachable.
            """,
        version: "0.3.0",
        subcommands: [ServeCommand.self, AdminCommand.self, TokenCommand.self]
    )
}
