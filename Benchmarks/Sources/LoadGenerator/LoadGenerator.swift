import ArgumentParser
import AssentCrypto
import AssentModel
import AssentTesting
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore

/// Drives a running server from many activations with one of three scenarios:
/// - `validate`: `/pa/v3/signature/validate` with 2FA signatures;
/// - `list`: `/api/auth/token/app/operation/list` with MAC tokens (each user has one pending operation);
/// - `authorize`: `/api/auth/token/app/operation/authorize` with 2FA signatures, each approving a fresh operation;
/// - `health`: `GET /health`, which reads nothing: the ceiling of the HTTP stack, the middleware and this generator
///   on the machine, for comparison with the others.
///
/// Every activation signs in sequence on one connection, as a real device does; `--concurrency` connections run
/// in parallel for `--duration` seconds. Prints requests/s and latency percentiles.
@main
struct LoadGenerator: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assent-load",
        abstract: "Load-test signature validation or the Mobile Token API on a running Assent server.",
        discussion:
            "Example: assent-load --url http://127.0.0.1:8080 --api-key ak_… --scenario list --activations 1000")

    @Option(help: "Server URL.") var url = "http://127.0.0.1:8080"
    @Option(help: "Operator API key (activations:write, application:read, operations:write).") var apiKey: String
    @Option(help: "How many activations sign.") var activations = 1000
    @Option(help: "Parallel connections.") var concurrency = 64
    @Option(help: "Seconds of measured load.") var duration = 20.0
    @Option(help: "A label for the report, e.g. sqlite or postgres.") var label = "run"
    @Option(help: "validate, list, authorize or health.") var scenario = "validate"
    @Option(help: "authorize: operations prepared per activation (the run stops early when they run out).")
    var operationsPerActivation = 40
    @Option(help: "list: how many of the activations get a pending operation (default: all).")
    var pendingOperations: Int?
    @Option(
        help: """
            Crash test: write what the server acknowledged (approved operations, each activation's last accepted \
            request) to this file, and end quietly when the server goes away mid-run.
            """)
    var record: String?
    @Option(
        help: """
            Crash test, after the restart: check a --record file against the server — every acknowledged approval \
            is APPROVED, and each activation's last accepted request, sent again, is refused as a replay (401).
            """)
    var verify: String?
    @Option(
        help: """
            The server's process id: the report adds the server's CPU time per request over the measured window             (user and system time from /proc/PID/stat).
            """)
    var serverPid: Int32?
    @Option(
        help: """
            Instead of sending: write this many requests of the scenario (list or health) to --wrk-file, one per             line as the X-PowerAuth-Token header value (list) or an empty line (health), for Benchmarks/wrk/requests.lua.
            """)
    var wrkRequests: Int?
    @Option(help: "Where --wrk-requests writes.") var wrkFile = "wrk-requests.txt"

    /// What a crash-test run saw acknowledged.
    struct Acknowledged: Codable {
        struct Sent: Codable {
            var path: String
            var headers: [String: String]
            var body: Data
        }
        var scenario: String
        var approved: [String]
        var lastAccepted: [Sent]
    }

    /// This run's users' names: fresh for every run.
    let run = UUID().uuidString.prefix(8).lowercased()

    /// The user of device `index`.
    func user(_ index: Int) -> String { "load-\(run)-\(index)" }

    /// One request of the scenario: method, path, headers, body.
    typealias Request = (method: HTTPRequest.Method, path: String, headers: HTTPFields, body: Data)

    func run() async throws {
        guard let base = URL(string: url), let host = base.host, let port = base.port else {
            throw ValidationError("--url must be http://host:port")
        }
        let client = HTTPClient(base: base)
        let auth = ["Authorization": "Bearer \(apiKey)"]
        if let verify { return try await check(URL(fileURLWithPath: verify), client: client, auth: auth) }
        let appResponse = try await client.send("GET", "/api/v1/application", headers: auth)
        guard appResponse.status == 200 else { throw TestFailure("application: \(appResponse.text)") }
        let info = try OperatorJSON.decoder().decode(ApplicationInfo.self, from: appResponse.body)
        let configuration = try SDKConfiguration(parsing: info.sdkConfiguration)

        print("Activating \(activations) devices…")
        let setupStart = ContinuousClock.now
        // Device i belongs to user load-<run>-i, names no earlier run on the same database used (its pending
        // operations would show in this run's lists): the chunks are put back in order after the parallel activation.
        let devices = try await withThrowingTaskGroup(of: (Int, [TestDevice]).self) { group in
            let perTask = (activations + 15) / 16
            for task in 0..<16 {
                group.addTask {
                    var made: [TestDevice] = []
                    for index in stride(from: task * perTask, to: min(activations, (task + 1) * perTask), by: 1) {
                        let body = try OperatorJSON.encoder().encode(
                            CreateActivationRequest(userId: user(index), commitMode: "auto"))
                        let created = try await client.send("POST", "/api/v1/activations", headers: auth, body: body)
                        guard created.status == 201 else { throw TestFailure("create: \(created.text)") }
                        let code = try OperatorJSON.decoder().decode(CreateActivationResponse.self, from: created.body)
                        var device = TestDevice(client: client, configuration: configuration)
                        try await device.activate(code: code.activationCode)
                        made.append(device)
                    }
                    return (task, made)
                }
            }
            return try await group.reduce(into: [(Int, [TestDevice])]()) { $0.append($1) }.sorted { $0.0 < $1.0 }
                .flatMap(\.1)
        }
        print("Activated \(devices.count) devices in \(ContinuousClock.now - setupStart).")

        let requests = try await prepare(devices: devices, client: client, auth: auth)
        if let wrkRequests {
            try exportForWrk(requests, count: wrkRequests)
            return
        }
        let cpuStart = serverPid.flatMap(ProcessCPU.seconds(of:))
        let deadline = ContinuousClock.now + .milliseconds(Int(duration * 1000))
        let measuredStart = ContinuousClock.now
        let crashTest = record != nil
        // Unbuffered: the crash script waits for this line.
        FileHandle.standardOutput.write(Data("Load started.\n".utf8))
        typealias WorkerResult = (
            latencies: [Duration], errors: Int, approved: [String], lastAccepted: [Acknowledged.Sent],
            serverGone: Bool
        )
        let results = try await withThrowingTaskGroup(of: WorkerResult.self) { group in
            for worker in 0..<concurrency {
                let mine = Array(stride(from: worker, to: devices.count, by: concurrency))
                guard !mine.isEmpty else { continue }
                group.addTask {
                    do {
                        return try await TestClient.withClient(host: host, port: port) { connection in
                            var result: WorkerResult = ([], 0, [], [], false)
                            var last: [Int: Acknowledged.Sent] = [:]
                            var owned = mine.map { requests.devices[$0] }
                            var queues = mine.map { requests.operations[$0] }
                            var next = 0
                            while ContinuousClock.now < deadline {
                                let operationId = queues[next].first?.id
                                guard let request = try requests.make(&owned[next], &queues[next]) else { break }
                                let slot = next
                                next = (next + 1) % owned.count
                                let start = ContinuousClock.now
                                let response: TestClient.Response
                                do {
                                    response = try await connection.execute(
                                        .init(
                                            request.path, method: request.method, headers: request.headers,
                                            body: ByteBuffer(bytes: request.body)))
                                } catch  where crashTest {
                                    // The server was killed: what it acknowledged so far is what the check needs.
                                    result.serverGone = true
                                    break
                                }
                                result.latencies.append(ContinuousClock.now - start)
                                guard response.status == .ok else {
                                    result.errors += 1
                                    continue
                                }
                                if crashTest {
                                    if let operationId { result.approved.append(operationId) }
                                    last[slot] = Acknowledged.Sent(
                                        path: request.path,
                                        headers: Dictionary(
                                            request.headers.map { ($0.name.rawName, $0.value) },
                                            uniquingKeysWith: { $1 }),
                                        body: request.body)
                                }
                            }
                            result.lastAccepted = Array(last.values)
                            return result
                        }
                    } catch  where crashTest {
                        // Closing a connection to a killed server can fail too; this worker's records are lost.
                        return ([], 0, [], [], true)
                    }
                }
            }
            return try await group.reduce(into: WorkerResult([], 0, [], [], false)) {
                $0.latencies += $1.latencies
                $0.errors += $1.errors
                $0.approved += $1.approved
                $0.lastAccepted += $1.lastAccepted
                $0.serverGone = $0.serverGone || $1.serverGone
            }
        }
        if let record {
            let acknowledged = Acknowledged(
                scenario: scenario, approved: results.approved, lastAccepted: results.lastAccepted)
            try JSONEncoder().encode(acknowledged).write(to: URL(fileURLWithPath: record))
            print(
                "[\(label)] acknowledged: \(results.approved.count) approvals, \(results.lastAccepted.count) activations; "
                    + (results.serverGone ? "the server went away mid-run." : "the server ran to the end."))
            return
        }
        let elapsed = ContinuousClock.now - measuredStart
        let cpuEnd = serverPid.flatMap(ProcessCPU.seconds(of:))
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
            [\(label)] \(scenario): \(sorted.count) requests in \(String(format: "%.1f", seconds)) s = \
            \(String(format: "%.0f", Double(sorted.count) / seconds)) req/s, p50 \(percentile(0.5)), \
            p99 \(percentile(0.99)), errors \(results.errors) (activations \(devices.count), concurrency \(concurrency))
            """)
        if let cpuStart, let cpuEnd, !sorted.isEmpty {
            // One line a script can read: the server's CPU per answered request over the measured window.
            print(
                "[\(label)] \(scenario): server CPU "
                    + String(format: "%.1f", (cpuEnd - cpuStart) * 1e6 / Double(sorted.count)) + " µs/request")
        }
        if results.errors > 0 { throw ExitCode(1) }
    }

    /// Writes `count` requests of the scenario for wrk, each usable once (a MAC token's nonce is single use), spread
    /// over the activations in turn.
    func exportForWrk(_ requests: Prepared, count: Int) throws {
        guard ["list", "health"].contains(scenario) else {
            throw ValidationError("--wrk-requests prepares list or health requests; \(scenario) must run in order.")
        }
        var devices = requests.devices
        var operations = requests.operations
        var lines: [String] = []
        lines.reserveCapacity(count)
        for index in 0..<count {
            let slot = index % devices.count
            guard let request = try requests.make(&devices[slot], &operations[slot]) else { break }
            lines.append(request.headers[HTTPField.Name(TokenHeader.name)!] ?? "")
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: wrkFile, atomically: true, encoding: .utf8)
        print("Wrote \(lines.count) \(scenario) requests to \(wrkFile).")
    }

    /// The crash test's check after the restart (see `--verify`).
    func check(_ file: URL, client: HTTPClient, auth: [String: String]) async throws {
        let acknowledged = try JSONDecoder().decode(Acknowledged.self, from: Data(contentsOf: file))
        let notApproved = try await inParallel(acknowledged.approved) { id -> String? in
            let response = try await client.send("GET", "/api/v1/operations/\(id)", headers: auth)
            guard response.status == 200,
                let info = try? OperatorJSON.decoder().decode(OperationInfo.self, from: response.body),
                info.status == .approved
            else { return "\(id): \(response.status) \(response.text.prefix(200))" }
            return nil
        }.compactMap { $0 }
        let accepted = try await inParallel(acknowledged.lastAccepted) { sent -> String? in
            let response = try await client.send("POST", sent.path, headers: sent.headers, body: sent.body)
            return response.status == 401 ? nil : "\(sent.path): \(response.status) \(response.text.prefix(200))"
        }.compactMap { $0 }
        print(
            """
            [\(label)] after the kill: \(acknowledged.approved.count - notApproved.count) of \
            \(acknowledged.approved.count) acknowledged approvals APPROVED; \
            \(acknowledged.lastAccepted.count - accepted.count) of \(acknowledged.lastAccepted.count) last accepted \
            requests refused as replays (no counter went back)
            """)
        for problem in (notApproved + accepted).prefix(10) { print("  \(problem)") }
        if !notApproved.isEmpty || !accepted.isEmpty { throw ExitCode(1) }
    }

    /// What the workers send: per activation a queue of operations (authorize) and the request builder.
    struct Prepared: Sendable {
        var devices: [TestDevice]
        var operations: [[(id: String, data: String)]]
        var make: @Sendable (inout TestDevice, inout [(id: String, data: String)]) throws -> Request?
    }

    func prepare(devices: [TestDevice], client: HTTPClient, auth: [String: String]) async throws -> Prepared {
        let json: HTTPFields = [.contentType: "application/json"]
        switch scenario {
        case "validate":
            let body = Data(#"{"operation":"payment","amount":"100.00","currency":"EUR"}"#.utf8)
            return Prepared(devices: devices, operations: devices.map { _ in [] }) { device, _ in
                var headers = json
                headers[HTTPField.Name(AuthorizationHeader.name)!] = try device.authorization(
                    uriId: "/pa/signature/validate", body: body)
                return (.post, "/pa/v3/signature/validate", headers, body)
            }
        case "list":
            let pending = pendingOperations ?? devices.count
            print("Creating a MAC token per activation and a pending operation for \(pending) of them…")
            let tokens = try await inParallel(Array(devices.enumerated())) { index, device in
                var device = device
                let token = try await device.createToken()
                if index < pending {
                    _ = try await createOperation(client: client, auth: auth, userId: user(index))
                }
                return (index, device, token)
            }
            var signed = devices
            var tokenOf: [Int: TokenCreateResponse] = [:]
            for (index, device, token) in tokens {
                signed[index] = device
                tokenOf[index] = token
            }
            let byIndex = tokenOf
            let indexOf = Dictionary(uniqueKeysWithValues: signed.enumerated().map { ($1.activationId, $0) })
            let body = Data("{}".utf8)
            return Prepared(devices: signed, operations: signed.map { _ in [] }) { device, _ in
                guard let index = indexOf[device.activationId], let token = byIndex[index] else { return nil }
                var headers = json
                headers[HTTPField.Name(TokenHeader.name)!] = device.tokenHeader(token)
                return (.post, "/api/auth/token/app/operation/list", headers, body)
            }
        case "authorize":
            print("Creating \(operationsPerActivation) operations per activation…")
            let created = try await inParallel(Array(devices.indices)) { index in
                var made: [(id: String, data: String)] = []
                for _ in 0..<operationsPerActivation {
                    made.append(try await createOperation(client: client, auth: auth, userId: user(index)))
                }
                return (index, made)
            }
            var operations = devices.map { _ in [(id: String, data: String)]() }
            for (index, made) in created { operations[index] = made }
            return Prepared(devices: devices, operations: operations) { device, queue in
                guard !queue.isEmpty else { return nil }
                let operation = queue.removeFirst()
                let body = try MobileTokenJSON.encoder().encode(
                    RequestEnvelope(OperationAuthorizeRequest(id: operation.id, data: operation.data)))
                var headers = json
                headers[HTTPField.Name(AuthorizationHeader.name)!] = try device.authorization(
                    uriId: "/operation/authorize", body: body)
                return (.post, "/api/auth/token/app/operation/authorize", headers, body)
            }
        case "health":
            return Prepared(devices: devices, operations: devices.map { _ in [] }) { _, _ in
                (.get, "/health", [:], Data())
            }
        default:
            throw ValidationError("--scenario is validate, list, authorize or health.")
        }
    }

    func createOperation(client: HTTPClient, auth: [String: String], userId: String) async throws
        -> (id: String, data: String)
    {
        let request = CreateOperationRequest(
            userId: userId, name: "authorize_payment", data: "A1*A100.00EUR*ICZ2730300000001165254011",
            formData: [
                "en": FormData(
                    title: "Confirm payment", message: "Pay 100 EUR?",
                    attributes: [
                        OperationAttribute(type: "KEY_VALUE", id: "operation.account").with(label: "To account")
                            .settingValue("CZ2730300000001165254011")
                    ])
            ], expiresIn: 3600)
        let response = try await client.send(
            "POST", "/api/v1/operations", headers: auth, body: try OperatorJSON.encoder().encode(request))
        guard response.status == 201 else { throw TestFailure("create operation: \(response.text)") }
        let info = try OperatorJSON.decoder().decode(OperationInfo.self, from: response.body)
        return (info.id, info.data)
    }

    /// Runs `body` over `items` with 16 tasks.
    func inParallel<Item: Sendable, Result: Sendable>(
        _ items: [Item], _ body: @escaping @Sendable (Item) async throws -> Result
    ) async throws -> [Result] {
        try await withThrowingTaskGroup(of: [Result].self) { group in
            for task in 0..<16 {
                group.addTask {
                    var results: [Result] = []
                    for index in stride(from: task, to: items.count, by: 16) {
                        results.append(try await body(items[index]))
                    }
                    return results
                }
            }
            return try await group.reduce(into: [Result]()) { $0 += $1 }
        }
    }
}

extension OperationAttribute {
    func settingValue(_ value: String) -> OperationAttribute {
        var copy = self
        copy.value = value
        return copy
    }
}

/// A process's CPU time (user and system) as Linux accounts it in `/proc/PID/stat`.
enum ProcessCPU {
    static func seconds(of pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state is field 3, utime field 14, stime field 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
