import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// The watching half of deploy/: Prometheus's own `promtool` checks the alert rules and proves each alert fires
/// when it should (deploy/prometheus/assent-alerts.test.yaml); every metric the Grafana dashboard and the rules read
/// is in a running server's `/metrics`; and a real Prometheus scraping that server evaluates every query of both.
@Suite("Metrics, the dashboard and the alert rules, checked by Prometheus")
struct MonitoringTests {
    static let root = ConfigFileTests.root
    static let rules = "deploy/prometheus/assent-alerts.yaml"
    static let dashboard = "deploy/grafana/assent-dashboard.json"

    static func promtool() throws -> String {
        try #require(Spawn.program("promtool"), "promtool is missing (Debian: prometheus)")
    }

    /// Every query of the dashboard, with Grafana's interval variable as Prometheus reads it.
    static func dashboardQueries() throws -> [String] {
        struct Dashboard: Decodable {
            struct Panel: Decodable {
                struct Target: Decodable { var expr: String }
                var targets: [Target]
            }
            var panels: [Panel]
        }
        let data = try Data(contentsOf: root.appendingPathComponent(dashboard))
        return try JSONDecoder().decode(Dashboard.self, from: data).panels.flatMap(\.targets).map {
            $0.expr.replacingOccurrences(of: "$__rate_interval", with: "1m")
        }
    }

    /// Every alert's expression (the rules file is YAML; its `expr:` values are one line or a `|` block).
    static func ruleQueries() throws -> [String] {
        let text = try String(contentsOf: root.appendingPathComponent(rules), encoding: .utf8)
        var queries: [String] = []
        var block: [String]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if var lines = block {
                if line.hasPrefix("          ") {
                    lines.append(line.trimmingCharacters(in: .whitespaces))
                    block = lines
                    continue
                }
                queries.append(lines.joined(separator: " "))
                block = nil
            }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("expr:") else { continue }
            let value = trimmed.dropFirst("expr:".count).trimmingCharacters(in: .whitespaces)
            if value == "|" { block = [] } else { queries.append(value) }
        }
        return queries
    }

    /// The `assent_…` series names a query reads.
    static func names(in query: String) -> Set<String> {
        Set(query.matches(of: /assent_[a-z_]+/).map { String($0.0) })
    }

    @Test("promtool accepts the rules and their unit tests pass; a broken or loosened copy is caught")
    func promtoolChecksTheRules() async throws {
        let promtool = try Self.promtool()
        let checked = try await Spawn.runOnThread([
            promtool, "check", "rules", Self.root.appendingPathComponent(Self.rules).path,
        ])
        #expect(
            checked.status == 0 && checked.output.contains("SUCCESS: 7 rules found"),
            "\(checked.output) \(checked.errors)")
        let tests = Self.root.appendingPathComponent("deploy/prometheus/assent-alerts.test.yaml").path
        let tested = try await Spawn.runOnThread([promtool, "test", "rules", tests])
        #expect(tested.status == 0 && tested.output.contains("SUCCESS"), "\(tested.output) \(tested.errors)")

        let folder = try ConfigFileTests.folder()
        let original = try String(contentsOf: Self.root.appendingPathComponent(Self.rules), encoding: .utf8)
        // A query that does not parse is refused with the rule's file.
        let broken = folder.appendingPathComponent("broken.yaml")
        try original.replacingOccurrences(of: "expr: assent_ready == 0", with: "expr: assent_ready == (0")
            .write(to: broken, atomically: true, encoding: .utf8)
        let refused = try await Spawn.runOnThread([promtool, "check", "rules", broken.path])
        #expect(refused.status != 0 && refused.errors.contains("broken.yaml"), "\(refused.errors)")
        // The unit tests read the rules: a backlog threshold ten times higher no longer fires when it should.
        try original.replacingOccurrences(
            of: "assent_outbox_oldest_pending_age_seconds) > 300",
            with: "assent_outbox_oldest_pending_age_seconds) > 3000"
        )
        .write(to: folder.appendingPathComponent("assent-alerts.yaml"), atomically: true, encoding: .utf8)
        try String(contentsOfFile: tests, encoding: .utf8).write(
            to: folder.appendingPathComponent("assent-alerts.test.yaml"), atomically: true, encoding: .utf8)
        let loosened = try await Spawn.runOnThread(
            [promtool, "test", "rules", folder.appendingPathComponent("assent-alerts.test.yaml").path])
        #expect(
            loosened.status != 0 && (loosened.output + loosened.errors).contains("alertname: AssentOutboxBacklog"),
            "\(loosened.output) \(loosened.errors)")
    }

    @Test("Every name the dashboard and the rules read is served at /metrics, and Prometheus evaluates every query")
    func namesAreServed() async throws {
        let queries = try Self.dashboardQueries() + Self.ruleQueries()
        #expect(queries.count >= 20, "\(queries)")
        let wanted = queries.reduce(into: Set<String>()) { $0.formUnion(Self.names(in: $1)) }
        #expect(wanted.count >= 10, "\(wanted)")
        var limits = RateLimits()
        limits.operatorKeyFailuresPerAddress = RateLimitRule(limit: 1, window: 300)
        let server = try await TestServer.make(.sqlite, rateLimits: limits)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            // A refusal by a rate limit, and answers of several statuses.
            for _ in 0..<3 {
                _ = try await client.send("GET", "/api/v1/audit", headers: ["Authorization": "Bearer ak_wrong"])
            }
            _ = try await client.send("GET", "/health/ready")
            // The checkpoint age exists once the chain has its first checkpoint, which the server seals soon after
            // it starts (later on a busy machine).
            for _ in 0..<200 where try await server.store.latestAuditCheckpoint() == nil {
                try await Task.sleep(for: .milliseconds(50))
            }
            let exposition = try await client.send("GET", "/metrics").text
            let served = Set(
                exposition.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
                    $0.split(separator: "{").first?.split(separator: " ").first.map(String.init)
                })
            #expect(wanted.subtracting(served).isEmpty, "not served: \(wanted.subtracting(served).sorted())")
            #expect(exposition.contains("assent_ready 1.0"), "\(exposition)")
            // The first wrong key is counted, the next two are refused.
            #expect(exposition.contains(#"assent_rate_limit_refusals_total{scope="operator.key"} 2"#))

            // A real Prometheus scrapes this server and answers every query without an error.
            let prometheus = try #require(Spawn.program("prometheus"), "prometheus is missing (Debian: prometheus)")
            let folder = try ConfigFileTests.folder()
            let port = try PostgresTestCluster.freePort()
            let target = "\(client.base.host ?? "127.0.0.1"):\(client.base.port ?? 0)"
            let configuration = folder.appendingPathComponent("prometheus.yml")
            try """
            global:
              scrape_interval: 1s
            scrape_configs:
              - job_name: assent
                static_configs:
                  - targets: ['\(target)']
            """.write(to: configuration, atomically: true, encoding: .utf8)
            let log = folder.appendingPathComponent("prometheus.log")
            #expect(FileManager.default.createFile(atPath: log.path, contents: nil))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: prometheus)
            process.arguments = [
                "--config.file=\(configuration.path)",
                "--storage.tsdb.path=\(folder.appendingPathComponent("data").path)",
                "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
            ]
            process.standardOutput = try FileHandle(forWritingTo: log)
            process.standardError = try FileHandle(forWritingTo: log)
            try process.run()
            defer { process.terminate() }
            let api = HTTPClient(base: try #require(URL(string: "http://127.0.0.1:\(port)")))
            struct Answer: Decodable {
                struct Data: Decodable { var result: [Series] }
                struct Series: Decodable { var metric: [String: String] }
                var status: String
                var data: Data?
                var error: String?
            }
            func query(_ text: String) async throws -> Answer? {
                var components = URLComponents()
                components.queryItems = [URLQueryItem(name: "query", value: text)]
                let path = "/api/v1/query?" + (components.percentEncodedQuery ?? "")
                guard let answer = try? await api.send("GET", path), answer.status == 200 || answer.status == 400
                else { return nil }
                return try? JSONDecoder().decode(Answer.self, from: answer.body)
            }
            // Three scrapes at least, so that rates over them have two samples.
            var scraped = false
            for _ in 0..<100 where !scraped {
                try await Task.sleep(for: .milliseconds(200))
                let enough = try await query("count_over_time(assent_ready[1m]) >= 3")
                scraped = enough?.data?.result.isEmpty == false
            }
            let logged = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            try #require(scraped, "Prometheus did not scrape \(target): \(logged)")
            for text in queries {
                let answer = try #require(try await query(text), "\(text)")
                #expect(answer.status == "success", "\(text): \(answer.error ?? "")")
            }
            // Queries over this server's series answer with them. The series' last sample over a minute, not the
            // instant value: on a busy machine a scrape can miss its one-second timeout, and Prometheus then marks
            // the series stale, so an instant query finds nothing though every earlier scrape was served.
            let ready = try await query("sum(last_over_time(assent_ready[1m]))")
            #expect(ready?.data?.result.count == 1)
            let refusals = try await query("sum by (scope) (rate(assent_rate_limit_refusals_total[1m]))")
            #expect(refusals?.data?.result.first?.metric["scope"] == "operator.key", "\(String(describing: refusals))")
        }
    }
}
