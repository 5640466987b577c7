import AssentModel
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// The deployment recipe in `deploy/`, checked by the programs that run it: systemd reads the unit and rates its
/// sandbox, Debian's nginx parses the site and serves the Assent server through it, over TLS and HTTP/2, with the
/// live event streams passed through as they are written.
@Suite("The deployment recipe works with the real programs")
struct DeploymentTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    static func folder() throws -> URL {
        let folder = TestFiles.folder.appendingPathComponent("deploy-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// The unit with its `ExecStart` pointing at the `assent` this test run built.
    static func unit(in folder: URL, name: String = "assent.service", _ change: (String) -> String = { $0 }) throws
        -> URL
    {
        let unit = try text("deploy/assent.service").replacingOccurrences(
            of: "/usr/local/bin/assent", with: CLITests.executable.path)
        let file = folder.appendingPathComponent(name)
        try change(unit).write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test("systemd reads the unit without a complaint and rates its sandbox at most 2.0 (of 10)")
    func systemdUnit() async throws {
        let analyze = try #require(Spawn.program("systemd-analyze"), "systemd-analyze is missing (Debian: systemd)")
        let folder = try Self.folder()
        let unit = try Self.unit(in: folder)
        let verified = try await Spawn.runOnThread([analyze, "verify", "--man=no", unit.path])
        // Complaints about the machine's own units (systemd reads those the unit's targets pull in) are not ours.
        let complaints = verified.errors.split(separator: "\n").filter { line in
            !["/lib/systemd/", "/usr/lib/systemd/", "/etc/systemd/"].contains { line.hasPrefix($0) }
                && !line.trimmingCharacters(in: .whitespaces).isEmpty
        }
        #expect(verified.status == 0 && complaints.isEmpty && verified.output.isEmpty, "\(verified.errors)")
        // A mistake is reported: the check reads the file, it does not just accept it.
        let broken = try Self.unit(in: folder, name: "broken.service") {
            $0.replacingOccurrences(of: "NoNewPrivileges=yes", with: "NoNewPrivileges=perhaps")
        }
        let refused = try await Spawn.runOnThread([analyze, "verify", "--man=no", broken.path])
        #expect(refused.errors.contains("broken.service:") && refused.errors.contains("perhaps"), "\(refused.errors)")
        // systemd's own exposure rating: 0 is a locked box, 10 an unprotected service.
        let security = try await Spawn.runOnThread([analyze, "security", "--offline=yes", unit.path])
        let rating = try #require(
            security.output.firstMatch(of: /Overall exposure level for [\w.]+: ([0-9.]+)/).flatMap { Double($0.1) },
            "\(security.output.suffix(400))")
        #expect(rating <= 2.0, "exposure \(rating)")
        let loose = try Self.unit(in: folder, name: "loose.service") {
            $0.replacingOccurrences(of: "ProtectSystem=strict", with: "ProtectSystem=no")
                .replacingOccurrences(of: "CapabilityBoundingSet=\n", with: "")
        }
        let looser = try await Spawn.runOnThread([analyze, "security", "--offline=yes", loose.path])
        let looseRating = looser.output.firstMatch(of: /Overall exposure level for [\w.]+: ([0-9.]+)/)
            .flatMap { Double($0.1) }
        #expect((looseRating ?? 0) > rating, "the rating reads the sandbox")
    }

    /// The site, made to run in a test: loopback ports, a throwaway certificate, the test server as its upstream.
    struct Site {
        let folder: URL
        let configuration: URL
        let port: Int

        static func make(upstream: Int) async throws -> Site { try await make(upstreams: [upstream]) }

        /// The site over `upstreams`, one `server` line each; with `plainHTTP` its main listener speaks HTTP/1.1
        /// without TLS (everything else — upstream, proxy headers, stream locations — is the site's own).
        static func make(upstreams: [Int], plainHTTP: Bool = false) async throws -> Site {
            let folder = try DeploymentTests.folder()
            let openssl = try #require(Spawn.program("openssl"), "openssl is missing")
            let made = try await Spawn.runOnThread([
                openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                "-subj", "/CN=localhost", "-keyout", folder.appendingPathComponent("privkey.pem").path, "-out",
                folder.appendingPathComponent("fullchain.pem").path,
            ])
            #expect(made.status == 0, "\(made.errors)")
            let port = try PostgresTestCluster.freePort()
            let plain = try PostgresTestCluster.freePort()
            var site = try DeploymentTests.text("deploy/nginx/assent.conf")
            let servers = upstreams.map { "server 127.0.0.1:\($0) max_fails=1 fail_timeout=5s;" }
                .joined(separator: "\n    ")
            for (from, to) in [
                ("/etc/ssl/assent/", folder.path + "/"),
                (
                    "listen 443 ssl http2;",
                    plainHTTP ? "listen 127.0.0.1:\(port);" : "listen 127.0.0.1:\(port) ssl http2;"
                ),
                ("listen 80;", "listen 127.0.0.1:\(plain);"),
                ("server 127.0.0.1:8080 max_fails=1 fail_timeout=5s;", servers),
            ] {
                #expect(site.contains(from), "the site no longer has \(from)")
                site = site.replacingOccurrences(of: from, with: to)
            }
            site = site.split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.contains("listen [::]") }.joined(separator: "\n")
            try site.write(to: folder.appendingPathComponent("assent.conf"), atomically: true, encoding: .utf8)
            let main = """
                \(getuid() == 0 ? "user root;" : "")
                daemon on;
                pid \(folder.path)/nginx.pid;
                error_log \(folder.path)/error.log;
                events { worker_connections 256; }
                http {
                    access_log off;
                    client_body_temp_path \(folder.path)/body;
                    proxy_temp_path \(folder.path)/proxy;
                    fastcgi_temp_path \(folder.path)/fastcgi;
                    uwsgi_temp_path \(folder.path)/uwsgi;
                    scgi_temp_path \(folder.path)/scgi;
                    include \(folder.path)/assent.conf;
                }
                """
            let configuration = folder.appendingPathComponent("nginx.conf")
            try main.write(to: configuration, atomically: true, encoding: .utf8)
            return Site(folder: folder, configuration: configuration, port: port)
        }

        static var nginx: String? {
            ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
        }

        func run(_ arguments: [String]) async throws -> Spawn.Outcome {
            let nginx = try #require(Self.nginx, "nginx is missing (Debian: nginx)")
            return try await Spawn.runOnThread([nginx, "-p", folder.path, "-c", configuration.path] + arguments)
        }
    }

    @Test("nginx accepts the site; a broken site is refused with the line")
    func nginxParsesTheSite() async throws {
        let site = try await Site.make(upstream: 8080)
        let tested = try await site.run(["-t"])
        #expect(tested.status == 0, "\(tested.errors)")
        try "server { listen 127.0.0.1:1; proxy_buffering maybe; }".write(
            to: site.folder.appendingPathComponent("assent.conf"), atomically: true, encoding: .utf8)
        let broken = try await site.run(["-t"])
        #expect(broken.status != 0 && broken.errors.contains("proxy_buffering"), "\(broken.errors)")
    }

    @Test("Through nginx over TLS and HTTP/2: readiness answers, and a waiting page's stream reaches the client open")
    func throughNginx() async throws {
        let curl = try #require(Spawn.program("curl"), "curl is missing")
        try await SDKClients.withActivatedClient(.sqlite) { server, http, _, _ in
            let upstream = try #require(http.base.port)
            let site = try await Site.make(upstream: upstream)
            let started = try await site.run([])
            #expect(started.status == 0, "\(started.errors)")
            defer {
                _ = try? Spawn.run([
                    Site.nginx ?? "nginx", "-p", site.folder.path, "-c", site.configuration.path, "-s", "stop",
                ])
            }
            let base = "https://127.0.0.1:\(site.port)"
            var ready = try await Spawn.runOnThread([
                curl, "-sk", "--http2", "-o", "-", "-w", "\n%{http_code} %{http_version}", "\(base)/health/ready",
            ])
            for _ in 0..<50 where !ready.output.hasSuffix("200 2") {
                try await Task.sleep(for: .milliseconds(100))
                ready = try await Spawn.runOnThread([
                    curl, "-sk", "--http2", "-o", "-", "-w", "\n%{http_code} %{http_version}", "\(base)/health/ready",
                ])
            }
            #expect(ready.output.hasSuffix("200 2"), "\(ready.output) \(ready.errors)")
            #expect(ready.output.contains(#""schema":"CURRENT""#))
            // X-Request-Id: nginx's $request_id, which the server trusts from its proxy and answers.
            let headers = try await Spawn.runOnThread([
                curl, "-sk", "--http2", "-D", "-", "-o", "/dev/null", "\(base)/health",
            ])
            #expect(headers.output.lowercased().contains("x-request-id: "), "\(headers.output)")
            // The metrics stay inside: Prometheus scrapes the servers, the site refuses them.
            let metrics = try await Spawn.runOnThread([
                curl, "-sk", "--http2", "-o", "/dev/null", "-w", "%{http_code}", "\(base)/metrics",
            ])
            #expect(metrics.output == "403", "\(metrics.output)")

            // A pending operation's waiting page: its stream sends a comment every 15 s while nothing happens; through
            // the site it reaches the browser while the stream is still open.
            let operation = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            let link = try await server.operatorCall(
                http, "POST", "/api/v1/operations/\(operation.id)/approval-link",
                body: try OperatorJSON.encoder().encode(ApprovalLinkRequest(returnUrl: "https://shop.example/done")),
                as: ApprovalLinkResponse.self)
            let url = try #require(URLComponents(string: link.url))
            let stream = try await Spawn.runOnThread([
                curl, "-skN", "--http2", "--max-time", "18",
                "\(base)/approve/\(operation.id)/events?\(url.query ?? "")",
            ])
            #expect(stream.output.contains(": waiting"), "received \(stream.output.debugDescription)")
        }
    }
}
