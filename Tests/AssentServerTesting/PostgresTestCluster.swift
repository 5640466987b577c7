import AssentTesting
import Foundation

/// A throwaway PostgreSQL cluster for the tests: `initdb` in a temporary directory, `pg_ctl start` on a free
/// loopback port, one database per test. A watchdog stops the cluster when the test process exits.
///
/// `ASSENT_TEST_POSTGRES_URL` points the tests at an existing server instead (a database is still created per
/// test). As root, the PostgreSQL programs run as the `postgres` user.
enum PostgresTestCluster {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The cluster's base URL (without a database), started once per test process.
    static let shared = Task<(host: String, port: Int, user: String, bindir: String), any Error> { try start() }

    /// The path of one of the cluster's programs (`pg_dump`, `pg_restore`, …).
    static func program(_ name: String) async throws -> String {
        "\(try await shared.value.bindir)/\(name)"
    }

    /// Creates a new empty database and returns its URL.
    static func makeDatabase() async throws -> String {
        let cluster = try await shared.value
        let name = "assent_test_\(UUID().uuidString.prefix(8).lowercased())"
        try run(
            "\(cluster.bindir)/createdb",
            ["-h", cluster.host, "-p", String(cluster.port), "-U", cluster.user, name], asPostgres: false)
        return "postgres://\(cluster.user)@\(cluster.host):\(cluster.port)/\(name)?sslmode=disable"
    }

    private static func start() throws -> (host: String, port: Int, user: String, bindir: String) {
        let bindir = try binaryDirectory()
        if let url = ProcessInfo.processInfo.environment["ASSENT_TEST_POSTGRES_URL"],
            let components = URLComponents(
                string: url), let host = components.host, let port = components.port
        {
            return (host, port, components.user ?? "postgres", bindir)
        }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("assent-pg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: root.path)
        let data = root.appendingPathComponent("data").path
        let port = try freePort()
        try run("\(bindir)/initdb", ["-D", data, "-U", "assent", "--auth=trust", "-E", "UTF8", "--no-sync"])
        try run(
            "\(bindir)/pg_ctl",
            [
                "-D", data, "-l", root.appendingPathComponent("server.log").path, "-w", "-t", "60", "-o",
                "-p \(port) -k \(root.path) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=2000",
                "start",
            ])
        try startWatchdog(pgctl: "\(bindir)/pg_ctl", data: data, root: root.path)
        return ("127.0.0.1", port, "assent", bindir)
    }

    /// `pg_config --bindir`, else the newest `/usr/lib/postgresql/*/bin`.
    private static func binaryDirectory() throws -> String {
        if let output = try? capture("/usr/bin/env", ["pg_config", "--bindir"]),
            FileManager.default.fileExists(atPath: output + "/initdb")
        {
            return output
        }
        let base = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) })
        where FileManager.default.fileExists(atPath: "\(base)/\(version)/bin/initdb") {
            return "\(base)/\(version)/bin"
        }
        throw Failure(
            description:
                "PostgreSQL is not installed (no pg_config --bindir, no /usr/lib/postgresql/*/bin/initdb). Install postgresql-15, or set ASSENT_SKIP_POSTGRES=1 to run the SQLite half only."
        )
    }

    /// Stops the cluster and deletes its directory once this process is gone, however it ends.
    private static func startWatchdog(pgctl: String, data: String, root: String) throws {
        let parent = ProcessInfo.processInfo.processIdentifier
        let stop = isRoot ? "runuser -u postgres -- \(pgctl)" : pgctl
        let script =
            "while kill -0 \(parent) 2>/dev/null; do sleep 1; done; \(stop) -D \(data) -m immediate stop >/dev/null 2>&1; rm -rf \(root)"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    static var isRoot: Bool { getuid() == 0 }

    /// Runs a program to completion (see ``Spawn``), as the `postgres` user when the tests run as root.
    private static func run(_ executable: String, _ arguments: [String], asPostgres: Bool = true) throws {
        let argv =
            isRoot && asPostgres
            ? ["/usr/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        let outcome = try Spawn.run(argv)
        guard outcome.status == 0 else {
            throw Failure(
                description: "\(executable) failed (status \(outcome.status)): \(outcome.output)\(outcome.errors)")
        }
    }

    private static func capture(_ executable: String, _ arguments: [String]) throws -> String {
        try Spawn.run([executable] + arguments).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A port nothing listens on right now (bind to port 0, read it, close).
    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) }
        }
        guard bound == 0 else { throw Failure(description: "bind() failed") }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0 else { throw Failure(description: "getsockname() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
