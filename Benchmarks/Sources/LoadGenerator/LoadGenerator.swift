import ArgumentParser
import AssentCrypto
import AssentModel
import AssentTesting
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore

/// Drives `/pa/v3/signature/validate` on a running server with 2FA signatures from many activations.
///
/// Every activation signs in sequence on one connection, as a real device does; `--concurrency` connections run
/// in parallel for `--duration` seconds. Prints requests/s and latency percentiles.
@main
struct LoadGenerator: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assent-load",
        abstract: "Load-test signature validation on a running Assent server.",
        discussion:
            "Example: assent-load --url http://127.0.0.1:8080 --api-key ak_… --activations 1000 --concurrency 64")

    @Option(help: "Server URL.") var url = "http://127.0.0.1:8080"
    @Option(help: "Operator API key (activations:write, application:read).") var apiKey: String
    @Option(help: "How many activations sign.") var activations = 1000
    @Option(help: "Parallel connections.") var concurrency = 64
    @Option(help: "Seconds of measured load.") var duration = 20.0
    @Option(help: "A label for the report, e.g. sqlite or postgres.") var label = "run"

    func run() async throws {
        guard let base = URL(string: url), let host = base.host, let port = base.port else {
            throw ValidationError("--url must be http://host:port")
        }
        let client = HTTPClient(base: base)
        let auth = ["Authorization": "Bearer \(apiKey)"]
        let appResponse = try await client.send("GET", "/api/v1/application", headers: auth)
        guard appResponse.status == 200 else { throw TestFailure("application: \(appResponse.text)") }
        let info = try OperatorJSON.decoder().decode(ApplicationInfo.self, from: appResponse.body)
        let configuration = try SDKConfiguration(parsing: info.sdkConfiguration)

        print("Activating \(activations) devices…")
        let setupStart = ContinuousClock.now
        let devices = try await withThrowingTaskGroup(of: [TestDevice].self) { group in
            let perTask = (activations + 15) / 16
            for task in 0..<16 {
                group.addTask {
                    var made: [TestDevice] = []
                    for index in stride(from: task * perTask, to: min(activations, (task + 1) * perTask), by: 1) {
                        let body = try OperatorJSON.encoder().encode(
                            CreateActivationRequest(userId: "load-\(index)", commitMode: "auto"))
                        let created = try await client.send("POST", "/api/v1/activations", headers: auth, body: body)
                        guard created.status == 201 else { throw TestFailure("create: \(created.text)") }
                        let code = try OperatorJSON.decoder().decode(CreateActivationResponse.self, from: created.body)
                        var device = TestDevice(client: client, configuration: configuration)
                        try await device.activate(code: code.activationCode)
                        made.append(device)
                    }
                    return made
                }
            }
            return try await group.reduce(into: [TestDevice]()) { $0 += $1 }
        }
        print("Activated \(devices.count) devices in \(ContinuousClock.now - setupStart).")

        let body = Data(#"{"operation":"payment","amount":"100.00","currency":"EUR"}"#.utf8)
        let deadline = ContinuousClock.now + .milliseconds(Int(duration * 1000))
        let measuredStart = ContinuousClock.now
        let results = try await withThrowingTaskGroup(of: (latencies: [Duration], errors: Int).self) { group in
            for worker in 0..<concurrency {
                let mine = stride(from: worker, to: devices.count, by: concurrency).map { devices[$0] }
                guard !mine.isEmpty else { continue }
                group.addTask {
                    try await TestClient.withClient(host: host, port: port) { connection in
                        var owned = mine
                        var latencies: [Duration] = []
                        var errors = 0
                        var next = 0
                        while ContinuousClock.now < deadline {
                            let header = try owned[next].authorization(uriId: "/pa/signature/validate", body: body)
                            next = (next + 1) % owned.count
                            var headers = HTTPFields()
                            headers[HTTPField.Name("X-PowerAuth-Authorization")!] = header
                            headers[.contentType] = "application/json"
                            let start = ContinuousClock.now
                            let response = try await connection.post(
                                "/pa/v3/signature/validate", headers: headers, body: ByteBuffer(bytes: body))
                            latencies.append(ContinuousClock.now - start)
                            if response.status != .ok { errors += 1 }
                        }
                        return (latencies, errors)
                    }
                }
            }
            return try await group.reduce(into: (latencies: [Duration](), errors: 0)) {
                $0.latencies += $1.latencies
                $0.errors += $1.errors
            }
        }
        let elapsed = ContinuousClock.now - measuredStart
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let sorted = results.latencies.sorted()
        func percentile(_ p: Double) -> String {
            guard !sorted.isEmpty else { return "-" }
            let value = sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
            return String(
                format: "%.2f ms", Double(value.components.attoseconds) / 1e15 + Double(value.components.seconds) * 1000
            )
        }
        print(
            """
            [\(label)] signature/validate: \(sorted.count) requests in \(String(format: "%.1f", seconds)) s = \
            \(String(format: "%.0f", Double(sorted.count) / seconds)) req/s, p50 \(percentile(0.5)), \
            p99 \(percentile(0.99)), errors \(results.errors) (activations \(devices.count), concurrency \(concurrency))
            """)
        if results.errors > 0 { throw ExitCode(1) }
    }
}
