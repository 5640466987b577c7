import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs a program to completion with `posix_spawn` and `waitpid`: standard input from a file holding `input`
/// (or /dev/null), standard output and error to temporary files read afterwards.
///
/// Foundation's `Process` with pipes is not used: a long-lived process another test spawns at the same moment (a
/// server, `pg_ctl`'s daemon) can inherit a pipe's write end, and a reader would then wait for EOF forever.
public enum Spawn {
    public struct Outcome: Sendable {
        /// The exit status, or 128 + the signal that ended the program.
        public var status: Int32
        public var output: String
        public var errors: String
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The absolute path of `name` on PATH, if it is there.
    public static func program(_ name: String) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return paths.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// ``run(_:environment:input:)`` on a thread of its own: waiting for a subprocess must not hold one of the few
    /// threads of Swift's concurrency pool (two on a two-core machine), or parallel tests starve each other.
    public static func runOnThread(_ argv: [String], environment: [String: String]? = nil, input: String? = nil)
        async throws -> Outcome
    {
        try await runOnThread(argv, environment: environment, bytes: input.map { Data($0.utf8) })
    }

    /// ``run(_:environment:bytes:)`` on a thread of its own.
    public static func runOnThread(_ argv: [String], environment: [String: String]? = nil, bytes input: Data?)
        async throws -> Outcome
    {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try run(argv, environment: environment, bytes: input) })
            }
        }
    }

    /// Runs `argv` (its first element an absolute path) with `input` as text on standard input.
    public static func run(_ argv: [String], environment: [String: String]? = nil, input: String? = nil) throws
        -> Outcome
    {
        try run(argv, environment: environment, bytes: input.map { Data($0.utf8) })
    }

    /// Runs `argv` (its first element an absolute path) with `bytes` on standard input.
    public static func run(_ argv: [String], environment: [String: String]? = nil, bytes input: Data?) throws
        -> Outcome
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("assent-spawn-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let inputPath = directory.appendingPathComponent("in").path
        let outputPath = directory.appendingPathComponent("out").path
        let errorPath = directory.appendingPathComponent("err").path
        try (input ?? Data()).write(to: URL(fileURLWithPath: inputPath))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, input == nil ? "/dev/null" : inputPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var cEnvironment = variables.map { strdup($0) } + [nil]
        defer { cEnvironment.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, &cArguments, &cEnvironment)
        guard spawned == 0 else { throw Failure(description: "cannot start \(argv[0]): errno \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
        let signal = status & 0x7F
        return Outcome(
            status: signal == 0 ? (status >> 8) & 0xFF : 128 + signal,
            output: (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "",
            errors: (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "")
    }
}
