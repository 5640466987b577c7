import AssentCrypto
import AssentModel
import AssentTesting
import Foundation
import Logging
import Synchronization
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// A rolling restart behind the real proxy: three `assent serve` processes on one PostgreSQL behind Debian's nginx
/// with the site of deploy/, phones approving operations, reads and held event streams going through nginx, while
/// each server in turn is stopped with SIGTERM and started again. Nothing may fail, no approval may be lost, and
/// every stream resumes on another server without missing an event (`Last-Event-ID`). Before the restarts, a later
/// version's migration (a column on the operations every approval writes, a table, an index built without locking
/// writers) is applied under that load, as the new version's `assent migrate` would be: the servers keep serving, stay
/// ready and start again on the schema it made; a migration after it that removes the column stops them.
@Suite("Rolling restart behind nginx: three servers, one PostgreSQL, no one dropped")
struct RollingUpgradeTests {
    /// One `assent serve` process on a fixed port.
    final class Server: Sendable {
        let port: Int
        let work: URL
        let environment: [String: String]
        let process = Mutex<Process?>(nil)

        init(port: Int, work: URL, environment: [String: String]) {
            (self.port, self.work, self.environment) = (port, work, environment)
        }

        /// Starts it and waits until `/health/ready` answers 200.
        func start(_ arguments: [String]) async throws {
            let output = work.appendingPathComponent("serve-\(port)-\(UUID().uuidString.prefix(4)).out")
            #expect(FileManager.default.createFile(atPath: output.path, contents: nil))
            let started = Process()
            started.executableURL = CLITests.executable
            started.arguments = ["serve", "--port", String(port)] + arguments
            started.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            started.standardOutput = try FileHandle(forWritingTo: output)
            started.standardError = try FileHandle(forWritingTo: output)
            try started.run()
            process.withLock { $0 = started }
            let health = HTTPClient(base: URL(string: "http://127.0.0.1:\(port)")!)
            for _ in 0..<600 {
                if (try? await health.send("GET", "/health/ready"))?.status == 200 { return }
                guard started.isRunning else { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            throw TestFailure(
                "the server on \(port) did not become ready: \((try? String(contentsOf: output, encoding: .utf8)) ?? "")"
            )
        }

        /// SIGTERM, and waits until it has exited; its exit status.
        func stop() async throws -> Int32 {
            guard let running = process.withLock({ $0 }) else { return 0 }
            running.terminate()
            for _ in 0..<600 where running.isRunning {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(!running.isRunning, "the server on \(port) did not stop within 30 s")
            return running.terminationStatus
        }
    }

    /// What the load saw.
    final class Tally: Sendable {
        let failures = Mutex<[String]>([])
        let approved = Mutex<[String: String]>([:])
        /// Operations each user's creator was told were made.
        let made = Mutex<[String: Int]>([:])
        let requests = Atomic<Int>(0)
        /// The load stops first; the streams once they caught up.
        let stopping = Atomic<Bool>(false)
        let streamsStopping = Atomic<Bool>(false)

        func fail(_ what: String) { failures.withLock { $0.append(what) } }
        var isStopping: Bool { stopping.load(ordering: .relaxed) }
    }

    /// A device's event stream, reopened with `Last-Event-ID` whenever it ends, until told to stop.
    final class Follower: Sendable {
        let events = Mutex<[ServerSentEvent]>([])
        let connections = Atomic<Int>(0)
        /// The stream open now.
        let current = Mutex<EventStreamReader?>(nil)

        func follow(_ base: URL, header: @escaping @Sendable () async throws -> String, until tally: Tally) async {
            while !tally.streamsStopping.load(ordering: .relaxed) {
                var headers = [TokenHeader.name: (try? await header()) ?? "", "Accept": "text/event-stream"]
                if let last = events.withLock({ $0.last(where: { $0.id != nil })?.id }) {
                    headers["Last-Event-ID"] = last
                }
                guard let stream = try? await EventStreamReader(base: base, headers: headers), stream.status == 200
                else {
                    try? await Task.sleep(for: .milliseconds(100))
                    continue
                }
                connections.add(1, ordering: .relaxed)
                current.withLock { $0 = stream }
                while !stream.hasEnded && !tally.streamsStopping.load(ordering: .relaxed) {
                    try? await Task.sleep(for: .milliseconds(20))
                }
                try? await Task.sleep(for: .milliseconds(50))
                stream.close()
                events.withLock { $0 += stream.received }
                current.withLock { $0 = nil }
            }
        }

        /// The operations whose `operation.created` event arrived on the streams that ended.
        var created: Set<String> { Self.created(events.withLock { $0 }) }
        /// …and on the stream open now.
        var receiving: Set<String> { Self.created(current.withLock { $0?.received } ?? []) }

        static func created(_ events: [ServerSentEvent]) -> Set<String> {
            Set(
                events.filter { $0.event == OperationEvent.created }.compactMap {
                    try? EventStreamReader.operationEvent($0).operationId
                })
        }
    }

    @Test("SIGTERM each of three servers in turn under load: 0 failed requests, 0 lost approvals, no missed event")
    func rollingRestart() async throws {
        // Benchmarks/rolling.sh asks for more: ASSENT_ROLLING_ROUNDS rounds of restarts, ASSENT_ROLLING_PHONES phones.
        let variables = ProcessInfo.processInfo.environment
        let rounds = variables["ASSENT_ROLLING_ROUNDS"].flatMap(Int.init) ?? 1
        let phones = variables["ASSENT_ROLLING_PHONES"].flatMap(Int.init) ?? 3
        let work = try ConfigFileTests.folder()
        let database = try await PostgresTestCluster.makeDatabase()
        let environment = [
            "ASSENT_KEK": Bytes.random(count: 32).base64EncodedString(), "ASSENT_DATABASE_URL": database,
        ]
        // The operator key, made in the database before any server runs (and the schema with it).
        let created = try await CLITests.run(
            ["admin", "api-key", "create", "--name", "rolling", "--data-dir", work.path, "--json"],
            environment: environment)
        #expect(created.status == 0, "\(created.errors)")
        struct Key: Decodable { var apiKey: String }
        let apiKey = try JSONDecoder().decode(Key.self, from: Data(created.output.utf8)).apiKey
        let ports = try (0..<3).map { _ in try PostgresTestCluster.freePort() }
        let arguments = ["--data-dir", work.path, "--trusted-proxy", "127.0.0.1", "--log-level", "warning"]
        let servers = ports.map { Server(port: $0, work: work, environment: environment) }
        for server in servers { try await server.start(arguments) }
        defer { for server in servers { server.process.withLock { $0?.terminate() } } }

        let site = try await DeploymentTests.Site.make(upstreams: ports, plainHTTP: true)
        let started = try await site.run([])
        #expect(started.status == 0, "\(started.errors)")
        defer { Task { _ = try? await site.run(["-s", "stop"]) } }
        let base = try #require(URL(string: "http://127.0.0.1:\(site.port)"))
        let proxy = HTTPClient(base: base)
        let operatorHeaders = ["Authorization": "Bearer \(apiKey)"]
        func operatorCall<T: Decodable>(_ method: String, _ path: String, _ body: some Encodable, as: T.Type)
            async throws -> T
        {
            let response = try await proxy.send(
                method, path, headers: operatorHeaders, body: try OperatorJSON.encoder().encode(body))
            guard (200..<300).contains(response.status) else {
                throw TestFailure("\(method) \(path): \(response.status) \(response.text)")
            }
            return try OperatorJSON.decoder().decode(T.self, from: response.body)
        }
        let application = try await proxy.send("GET", "/api/v1/application", headers: operatorHeaders)
        struct Application: Decodable { var sdkConfiguration: String }
        let configuration = try SDKConfiguration(
            parsing: try OperatorJSON.decoder().decode(Application.self, from: application.body).sdkConfiguration)

        // Three phones, each activated and holding its user's event stream through nginx.
        let tally = Tally()
        var devices: [TestDevice] = []
        var followers: [Follower] = []
        var streams: [Task<Void, Never>] = []
        for index in 0..<phones {
            let activation = try await operatorCall(
                "POST", "/api/v1/activations", CreateActivationRequest(userId: "user\(index)", commitMode: "auto"),
                as: CreateActivationResponse.self)
            var device = TestDevice(client: proxy, configuration: configuration)
            try await device.activate(code: activation.activationCode)
            let token = try await device.createToken()
            let follower = Follower()
            let phone = device
            streams.append(
                Task { await follower.follow(base, header: { phone.tokenHeader(token) }, until: tally) })
            devices.append(device)
            followers.append(follower)
        }
        for follower in followers {
            for _ in 0..<200 where follower.connections.load(ordering: .relaxed) == 0 {
                try await Task.sleep(for: .milliseconds(50))
            }
        }

        // The load: each phone approves operations made for it, one after another; two readers list and read.
        let load = devices.enumerated().map { index, device in
            Task {
                var phone = device
                while !tally.isStopping {
                    do {
                        let operation = try await operatorCall(
                            "POST", "/api/v1/operations", try OperationFixtures.payment(userId: "user\(index)"),
                            as: OperationInfo.self)
                        tally.made.withLock { $0["user\(index)", default: 0] += 1 }
                        let answer = try await phone.authorizeOperation(id: operation.id, data: operation.data)
                        tally.requests.add(2, ordering: .relaxed)
                        if answer.status == 200 {
                            tally.approved.withLock { $0[operation.id] = "user\(index)" }
                        } else {
                            tally.fail("approve \(operation.id): \(answer.status) \(answer.text)")
                        }
                    } catch {
                        tally.fail("approval of user\(index): \(error)")
                    }
                }
            }
        }
        let readers = (0..<2).map { _ in
            Task {
                while !tally.isStopping {
                    do {
                        let answer = try await proxy.send(
                            "GET", "/api/v1/users/user0/operations", headers: operatorHeaders)
                        tally.requests.add(1, ordering: .relaxed)
                        if answer.status != 200 { tally.fail("read: \(answer.status) \(answer.text)") }
                    } catch {
                        tally.fail("read: \(error)")
                    }
                }
            }
        }

        // The later version migrates under load (a role that owns the schema, as `assent migrate` runs with).
        try await Task.sleep(for: .seconds(2))
        var logger = Logger(label: "assent.test")
        logger.logLevel = .critical
        let schema = try await SQLStore.postgres(
            url: database, secretBox: try SecretBox(keyEncryptionKey: Bytes.random(count: 32)), logger: logger,
            maxConnections: 2)
        defer { Task { try? await schema.shutdown() } }
        let newest = schema.newestKnown
        let later = MigrationTests.laterVersions(after: newest)
        let migrated = ContinuousClock.now
        #expect(try await schema.knowing(Migrations.all + [later.adds]).migrateSchema() == [newest + 1])
        let migrating = ContinuousClock.now - migrated
        #expect(try await schema.schemaState() == .aheadCompatible(unknown: [newest + 1]))
        let requestsBeforeRoll = tally.requests.load(ordering: .relaxed)
        for server in servers {
            let ready = try await HTTPClient(base: URL(string: "http://127.0.0.1:\(server.port)")!).send(
                "GET", "/health/ready")
            #expect(ready.status == 200 && ready.text.contains("AHEAD_COMPATIBLE"), "\(ready.status) \(ready.text)")
        }

        // Each server in turn: SIGTERM, gone, started again, ready; the others carry the load meanwhile.
        try await Task.sleep(for: .seconds(1))
        for _ in 0..<rounds {
            for server in servers {
                let status = try await server.stop()
                #expect(status == 0, "the server on \(server.port) exited with \(status)")
                try await Task.sleep(for: .milliseconds(500))
                try await server.start(arguments)
                try await Task.sleep(for: .seconds(2))
            }
        }
        tally.stopping.store(true, ordering: .relaxed)
        for task in load + readers { await task.value }
        // The last operations' events are on their way: the streams stop once they have them (or after 30 s).
        let approvedSoFar = tally.approved.withLock { $0 }
        for (index, follower) in followers.enumerated() {
            let mine = Set(approvedSoFar.filter { $0.value == "user\(index)" }.keys)
            let waited = ContinuousClock.now
            while !mine.isSubset(of: follower.created.union(follower.receiving)),
                ContinuousClock.now - waited < .seconds(30)
            {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        tally.streamsStopping.store(true, ordering: .relaxed)
        for task in streams { await task.value }

        let failures = tally.failures.withLock { $0 }
        let approved = tally.approved.withLock { $0 }
        let proxyErrors =
            (try? String(contentsOf: site.folder.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
        let connections = followers.map { $0.connections.load(ordering: .relaxed) }
        // The figures, for Benchmarks/rolling.sh and a reader of the log.
        print(
            "rolling: \(rounds) round(s) of \(servers.count) restarts, \(tally.requests.load(ordering: .relaxed)) requests, "
                + "\(approved.count) approvals, \(failures.count) failed, stream connections \(connections)")
        #expect(failures.isEmpty, "\(failures.count) failed: \(failures.prefix(5)); nginx: \(proxyErrors.suffix(2000))")
        #expect(approved.count >= 20 * rounds, "too little load to mean anything: \(approved.count) approvals")
        // No approval lost: every one the phone was told succeeded is approved in the database.
        for (id, _) in approved {
            let answer = try await proxy.send("GET", "/api/v1/operations/\(id)", headers: operatorHeaders)
            let operation = try OperatorJSON.decoder().decode(OperationInfo.self, from: answer.body)
            #expect(operation.status == .approved, "\(id) is \(operation.status)")
        }
        // Nothing done twice: nginx passes a request a stopping server closed unanswered to another server, POSTs too;
        // each user has exactly the operations its creator was told were made.
        let cluster = try await PostgresTestCluster.shared.value
        let name = try #require(URLComponents(string: database)?.path.dropFirst())
        let counted = try await DatabaseRolesTests.psql(
            cluster.user, String(name),
            ["-At", "-F", " ", "-c", "SELECT user_id, count(*) FROM operations GROUP BY user_id ORDER BY user_id"])
        let inDatabase = Dictionary(
            uniqueKeysWithValues: counted.output.split(separator: "\n").compactMap { line -> (String, Int)? in
                let fields = line.split(separator: " ")
                guard fields.count == 2, let count = Int(fields[1]) else { return nil }
                return (String(fields[0]), count)
            })
        #expect(inDatabase == tally.made.withLock { $0 }, "\(counted.output) \(counted.errors)")
        // No missed event: each phone's stream, reopened after every stop, saw every operation made for it.
        for (index, follower) in followers.enumerated() {
            let mine = Set(approved.filter { $0.value == "user\(index)" }.keys)
            let missed = mine.subtracting(follower.created)
            #expect(missed.isEmpty, "user\(index)'s stream missed \(missed.count) of \(mine.count) operations")
            #expect(follower.connections.load(ordering: .relaxed) >= 2, "the stream was never cut and resumed")
            // Each operation event once, in order (a reconnection's `ready` restates the position it resumes from).
            let ids = follower.events.withLock { $0 }.filter { $0.event != OperationEvent.ready }.compactMap {
                $0.id.flatMap { Int64($0) }
            }
            #expect(ids == ids.sorted() && Set(ids).count == ids.count, "events repeated or out of order: \(ids)")
        }
        print("rolling: the later version's migration took \(migrating) under load, \(requestsBeforeRoll) requests in")

        // The version after removes what it added, declaring only builds that know the addition serve it: this
        // build's servers are no longer ready, and one does not start on it, saying why.
        #expect(
            try await schema.knowing(Migrations.all + [later.adds, later.removes]).migrateSchema() == [newest + 2])
        let ready = try await HTTPClient(base: URL(string: "http://127.0.0.1:\(ports[0])")!).send(
            "GET", "/health/ready")
        #expect(ready.status == 503 && ready.text.contains(#""schema":"AHEAD""#), "\(ready.status) \(ready.text)")
        let refused = Server(port: try PostgresTestCluster.freePort(), work: work, environment: environment)
        defer { refused.process.withLock { $0?.terminate() } }
        do {
            try await refused.start(arguments)
            Issue.record("a server started on a schema declared not to serve it")
        } catch {
            #expect("\(error)".contains("newer than this server knows (up to \(newest))"), "\(error)")
            #expect(refused.process.withLock { $0?.isRunning } == false)
        }
    }
}
