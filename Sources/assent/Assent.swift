import ArgumentParser

/// The `assent` command: the server, its administration, and the command-line token.
@main
struct Assent: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assent",
        abstract: "Assent: an open mobile-token platform (PowerAuth 3.3 server, operator tools and CLI token).",
        version: "0.1.0"
    )
}
