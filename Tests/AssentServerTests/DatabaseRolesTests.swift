import AssentModel
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

/// PostgreSQL with least privilege, as deploy/postgres/roles.sql sets it up on a real server: `assent migrate` runs
/// as the schema's owner, the servers' role reads and writes rows and cannot change the schema.
@Suite("PostgreSQL roles: the owner migrates, the server's role only reads and writes rows")
struct DatabaseRolesTests {
    /// Runs `sql` (or the file `-f path`) through psql as `user` on `database`; status, output and errors.
    static func psql(_ user: String, _ database: String, _ arguments: [String]) async throws -> Spawn.Outcome {
        let cluster = try await PostgresTestCluster.shared.value
        return try await Spawn.runOnThread(
            [
                try await PostgresTestCluster.program("psql"), "-X", "-v", "ON_ERROR_STOP=1", "-h", cluster.host,
                "-p", String(cluster.port), "-U", user, "-d", database,
            ] + arguments)
    }

    /// The roles and database of roles.sql under names of their own; the owner's and the server's URLs.
    static func makeRoles() async throws -> (owner: String, server: String, database: String) {
        let cluster = try await PostgresTestCluster.shared.value
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let (owner, server, database) = ("owner_\(suffix)", "server_\(suffix)", "roles_\(suffix)")
        let file = ConfigFileTests.root.appendingPathComponent("deploy/postgres/roles.sql").path
        let made = try await psql(
            cluster.user, "postgres",
            ["-v", "owner=\(owner)", "-v", "server=\(server)", "-v", "database=\(database)", "-f", file])
        #expect(made.status == 0, "\(made.errors)")
        func url(_ role: String) -> String {
            "postgres://\(role)@\(cluster.host):\(cluster.port)/\(database)?sslmode=disable"
        }
        return (url(owner), url(server), database)
    }

    @Test(
        "assent migrate as the owner; a server on the least-privilege role activates and approves; it cannot change the schema"
    )
    func leastPrivilege() async throws {
        let roles = try await Self.makeRoles()
        // The server's role may not migrate: a server on an empty database refuses with what to do.
        let work = try ConfigFileTests.folder()
        let early = try await CLITests.run([
            "serve", "--port", "0", "--data-dir", work.appendingPathComponent("early").path, "--database", roles.server,
        ])
        #expect(
            early.status != 0 && early.errors.contains("may not change it: run `assent migrate`"), "\(early.errors)")
        let migrated = try await CLITests.run(["migrate", "--database", roles.owner])
        #expect(
            migrated.status == 0 && migrated.output.contains("Applied ") && migrated.output.contains("now version"),
            "\(migrated.output) \(migrated.errors)")
        #expect(!FileManager.default.fileExists(atPath: "assent-data/kek"), "migrate makes no key")
        let again = try await CLITests.run(["migrate", "--database", roles.owner, "--json"])
        #expect(again.status == 0 && again.output.contains(#""applied":[]"#), "\(again.output) \(again.errors)")

        // A server on the server's role: the whole path of a phone, from activation to an approved operation.
        let (server, printed) = try await CLITests.serve(work, arguments: ["--database", roles.server])
        defer { if server.isRunning { server.terminate() } }
        let url = try #require(printed["url"], "\(printed)")
        let config = try #require(printed["SDK configuration"])
        let environment = try CLITests.connection(printed)
        let profile = ["--profile", work.appendingPathComponent("token").path]
        let activation = try await CLITests.admin(
            ["activation", "create", "--user", "alice"], environment: environment, as: CreateActivationResponse.self)
        let activated = try await CLITests.run(
            ["token", "activate", "--server", url, "--config", config, activation.activationCode, "--pin-stdin"]
                + profile, environment: environment, input: "2468\n")
        #expect(activated.status == 0, "\(activated.errors)")
        let operation = try await CLITests.admin(
            ["operation", "create", "--user", "alice", "--data", "A1*A100CZK", "--title", "Pay"],
            environment: environment, as: OperationInfo.self)
        let approved = try await CLITests.run(
            ["token", "approve", operation.id, "--pin-stdin"] + profile, environment: environment, input: "2468\n")
        #expect(approved.status == 0, "\(approved.errors)")
        let shown = try await CLITests.admin(
            ["operation", "show", operation.id], environment: environment, as: OperationInfo.self)
        #expect(shown.status == .approved)

        // The server's role changes no schema: PostgreSQL itself refuses.
        let serverRole = String(try #require(URLComponents(string: roles.server)?.user))
        for (statement, refusal) in [
            ("CREATE TABLE intruder (a int)", "permission denied for schema public"),
            ("ALTER TABLE activations ADD COLUMN intruder int", "must be owner of table activations"),
            ("DROP TABLE audit_events", "must be owner of table audit_events"),
            ("TRUNCATE operations", "permission denied for table operations"),
        ] {
            let refused = try await Self.psql(serverRole, roles.database, ["-c", statement])
            #expect(refused.status != 0 && refused.errors.contains(refusal), "\(statement): \(refused.errors)")
        }
        let reads = try await Self.psql(serverRole, roles.database, ["-At", "-c", "SELECT count(*) FROM operations"])
        #expect(reads.status == 0 && reads.output.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
    }
}
