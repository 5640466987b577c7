import AssentCrypto
import AssentModel
import AssentSDK
import AssentServer
import AssentTesting
import Foundation
import Synchronization
import Testing

@testable import AssentServerTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Collects the operations events of a stream and of an observer.
final class EventRecorder: OperationsObserver {
    private let streamEvents = Mutex<[OperationsEvent]>([])
    private let observed = Mutex<[OperationsEvent]>([])

    var events: [OperationsEvent] { streamEvents.withLock { $0 } }
    var observerEvents: [OperationsEvent] { observed.withLock { $0 } }
    func record(_ event: OperationsEvent) { streamEvents.withLock { $0.append(event) } }

    func operationsLoading(_ loading: Bool) { observed.withLock { $0.append(.loading(loading)) } }
    func operationsFailed(_ error: AssentError) { observed.withLock { $0.append(.failed(error)) } }
    func operationsChanged(_ change: OperationsChange) { observed.withLock { $0.append(.changed(change)) } }

    var changes: [OperationsChange] {
        events.compactMap { if case .changed(let change) = $0 { change } else { nil } }
    }
    var loadings: Int { events.filter { if case .loading(true) = $0 { true } else { false } }.count }

    /// Waits until `condition` holds for the recorded stream events (at most 30 s).
    func wait(_ what: String, until condition: ([OperationsEvent]) -> Bool) async throws {
        for _ in 0..<300 {
            if condition(events) { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("timed out waiting for \(what); events: \(events.map(SDKOperationsTests.describe))")
    }
}

/// A loopback TCP port that accepts connections (the kernel's backlog) and never answers: a server that hangs.
final class SilentListener: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        #if canImport(Glibc)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0 else {
            throw TestFailure("cannot listen on loopback")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    deinit { close(descriptor) }
}

@Suite("AssentSDK operations: polling events, cancellation, custom and local operations, authentication")
struct SDKOperationsTests {
    @Test(
        "Polling and refreshes emit loading, added and removed, failures; observers see the same",
        arguments: Backend.all)
    func polling(backend: Backend) async throws {
        try await SDKClients.withActivatedClient(backend) { server, http, client, _ in
            let operations = OperationsService(client: client)
            let recorder = EventRecorder()
            await operations.addObserver(recorder)
            let events = await operations.events()
            let consumer = Task { for await event in events { recorder.record(event) } }
            defer { consumer.cancel() }

            let first = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            #expect(await operations.lastFetchResult == nil)
            await operations.startPollingOperations(interval: .seconds(1))
            #expect(await operations.isPollingOperations)
            #expect(await operations.pollingInterval == OperationsService.minimumPollingInterval)
            try await recorder.wait("the first fetch") { events in
                events.contains { if case .loading(false) = $0 { true } else { false } }
            }
            await operations.stopPollingOperations()
            #expect(await !operations.isPollingOperations)
            guard case .loading(true) = recorder.events.first else {
                Issue.record("the first event is not loading on: \(recorder.events)")
                return
            }
            #expect(recorder.changes.first.map { $0.added.map(\.id) } == [first.id])
            #expect(recorder.changes.first?.removed == [])
            #expect(abs(try #require(await operations.currentServerDate).timeIntervalSinceNow) < 5)

            // Approving removes the operation from the list at once; the next fetch adds the new one.
            let second = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            let listed = try #require(try await operations.lastFetchResult?.get().first)
            try await operations.authorize(listed, factor: .pin("1234"))
            try await recorder.wait("the removal after approval") { _ in
                recorder.changes.last?.removed.map(\.id) == [first.id]
            }
            let afterApproval = recorder.changes.count
            let refreshed = await operations.refreshOperations()
            #expect(try refreshed.get().map(\.id) == [second.id])
            try await recorder.wait("the refresh") { _ in recorder.changes.count > afterApproval }
            #expect(recorder.changes.last.map { $0.added.map(\.id) } == [second.id])
            #expect(recorder.changes.last?.removed == [])

            // Canceled by the operator: the next fetch reports it removed, the list empty.
            _ = try await server.operatorCall(
                http, "POST", "/api/v1/operations/\(second.id)/cancel", as: OperationInfo.self)
            await operations.refreshOperations()
            try await recorder.wait("the removal") { _ in recorder.changes.last?.removed.map(\.id) == [second.id] }
            #expect(recorder.changes.last?.operations == [])
            #expect(try await operations.lastFetchResult?.get() == [])

            // Delayed start fetches nothing at once; pausing and resuming fetches at resume.
            let loadingsBefore = recorder.loadings
            await operations.startPollingOperations(delayStart: true)
            await operations.pausePolling()
            try await Task.sleep(for: .milliseconds(500))
            #expect(recorder.loadings == loadingsBefore)
            #expect(await operations.isPollingPaused)
            await operations.resumePolling()
            try await recorder.wait("the fetch on resume") { events in
                recorder.loadings > loadingsBefore && Self.isIdle(events)
            }
            await operations.stopPollingOperations()

            // A failing fetch (the activation was removed) is reported as such and kept as the last result.
            _ = try await server.operatorCall(
                http, "DELETE", "/api/v1/activations/\(try #require(await client.registrationId))",
                as: ActivationInfo.self)
            let failed = await operations.refreshOperations()
            #expect(throws: AssentError.self) { try failed.get() }
            try await recorder.wait("the failure") { events in
                events.contains { if case .failed = $0 { true } else { false } }
            }
            if case .failure(let error) = await operations.lastFetchResult {
                #expect(error.code == .removed)
            } else {
                Issue.record("the last fetch result is not the failure")
            }

            // Every loading on has its loading off; the observer saw what the stream saw.
            try await recorder.wait("the stream to catch up") { events in
                events.count == recorder.observerEvents.count
            }
            #expect(Self.isIdle(recorder.events))
            #expect(recorder.events.map(Self.describe) == recorder.observerEvents.map(Self.describe))
        }
    }

    /// Whether every fetch that started has ended.
    static func isIdle(_ events: [OperationsEvent]) -> Bool {
        let ons = events.filter { if case .loading(true) = $0 { true } else { false } }.count
        let offs = events.filter { if case .loading(false) = $0 { true } else { false } }.count
        return ons == offs
    }

    static func describe(_ event: OperationsEvent) -> String {
        switch event {
        case .loading(let on): "loading \(on)"
        case .failed(let error): "failed \(error.code)"
        case .changed(let change):
            "changed \(change.operations.map(\.id)) +\(change.added.map(\.id)) -\(change.removed.map(\.id))"
        }
    }

    @Test(
        "status() moves a counter restored from an older copy of the keystore up to the server's",
        arguments: Backend.all)
    func counterResynchronisation(backend: Backend) async throws {
        try await SDKClients.withActivatedClient(backend) { server, http, client, directory in
            let files = ["state", "state.key"].map { directory.appendingPathComponent($0) }
            let backup = try files.map { try Data(contentsOf: $0) }
            let operations = OperationsService(client: client)
            for _ in 0..<3 {
                let operation = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
                try await operations.reject(id: operation.id)
            }
            // The device comes back from a backup: its counter is behind values the server has already seen, so
            // its next signature would be a replay. Reading the status moves it forward first.
            for (file, data) in zip(files, backup) { try data.write(to: file) }
            let restored = try SDKClients.client(server, base: http.base, directory: directory)
            #expect(try await restored.status().failedAttempts == 0)
            let next = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            try await OperationsService(client: restored).reject(id: next.id)
            #expect(try await server.operation(http, next.id).status == .rejected)
            #expect(try await restored.status().failedAttempts == 0)
        }
    }

    @Test("Cancelling the task ends a hanging call at once with .cancelled, for every kind of call")
    func cancellation() async throws {
        let silent = try SilentListener()
        try await SDKClients.withActivatedClient(.sqlite) { server, http, _, directory in
            let payment = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            // The same activation, but its server never answers.
            let hanging = try AssentClient(
                serverURL: silent.url, configuration: try server.configuration.text,
                keystore: try FileKeystore(directory: directory))
            let operations = OperationsService(client: hanging)
            let calls: [(String, @Sendable () async throws -> Void)] = [
                ("configuration", { _ = try await hanging.loadConfiguration() }),
                ("status", { _ = try await hanging.status() }),
                ("list", { _ = try await operations.pending() }),
                ("history", { _ = try await operations.history(pin: "1234") }),
                (
                    "authorize",
                    {
                        try await operations.authorize(
                            LocalOperation(id: payment.id, data: payment.data), factor: .pin("1234"))
                    }
                ),
                ("reject", { try await operations.reject(id: payment.id) }),
                ("change PIN", { try await hanging.changePIN(from: "1234", to: "4321") }),
            ]
            for (name, call) in calls {
                let started = ContinuousClock.now
                let task = Task { try await call() }
                try await Task.sleep(for: .milliseconds(300))
                task.cancel()
                let result = await task.result
                let error = try #require(
                    { if case .failure(let error) = result { error as? AssentError } else { nil } }(),
                    "\(name) did not fail")
                #expect(error.code == .cancelled, "\(name): \(error)")
                // The transport would wait 30 s for an answer; cancelling ends it long before.
                #expect(ContinuousClock.now - started < .seconds(20), "\(name)")
            }
            // Nothing was approved or rejected, and the original client still works (the counter moved ahead
            // only locally, within the server's look-ahead).
            #expect(try await server.operation(http, payment.id).status == .pending)
            let reopened = try SDKClients.client(server, base: http.base, directory: directory)
            try await OperationsService(client: reopened).authorize(
                LocalOperation(id: payment.id, data: payment.data), factor: .pin("1234"))
            #expect(try await server.operation(http, payment.id).status == .approved)
        }
    }

    struct BankFields: Decodable, Sendable {
        var riskScore: Int?
        var channel: String?
    }

    @Test(
        "Custom operation types decode extra fields; local operations approve without a fetch", arguments: Backend.all)
    func customAndLocalOperations(backend: Backend) async throws {
        // A server of the bank's own that adds fields to each operation.
        let json = """
            {"status":"OK","currentTimestamp":"2026-11-22T10:00:00+0000","responseObject":[{"id":"op-1",
            "name":"authorize_payment","data":"A1*A100CZK","status":"PENDING","operationCreated":
            "2026-11-22T09:59:00+0000","operationExpires":"2026-11-22T10:04:00+0000","allowedSignatureType":
            {"type":"2FA","variants":["possession_knowledge"]},"formData":{"title":"Pay","message":"Pay?",
            "attributes":[]},"riskScore":17,"channel":"web"}]}
            """
        struct Envelope: Decodable { var responseObject: [CustomOperation<BankFields>] }
        let decoded = try MobileTokenJSON.decoder().decode(Envelope.self, from: Data(json.utf8)).responseObject
        #expect(decoded.first?.extra.riskScore == 17 && decoded.first?.extra.channel == "web")
        #expect(decoded.first?.operation.formData.title == "Pay" && decoded.first?.id == "op-1")

        try await SDKClients.withActivatedClient(backend) { server, http, client, _ in
            let operations = OperationsService(client: client)
            let payment = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            let none = try await http.send(
                "GET", "/api/v1/operations/\(payment.id)/proximity",
                headers: ["Authorization": "Bearer \(server.apiKey)"])
            #expect(none.status == 409 && none.text.contains("OPERATION_WITHOUT_PROXIMITY_CHECK"), "\(none.text)")
            let custom = try await operations.pending(as: CustomOperation<BankFields>.self).value
            #expect(custom.map(\.id) == [payment.id] && custom.first?.extra.riskScore == nil)
            try await operations.authorize(try #require(custom.first), factor: .pin("1234"))
            #expect(try await server.operation(http, payment.id).status == .approved)

            // Received through another channel with its proximity code: approved without listing it.
            let near = try await server.createOperation(
                http, try OperationFixtures.payment(userId: "alice", proximityCheck: true))
            let pac = try await server.operatorCall(
                http, "GET", "/api/v1/operations/\(near.id)/proximity", as: ProximityCodeResponse.self)
            let scanned = try #require(ProximityCode(parsing: pac.deeplink))
            try await operations.authorize(
                LocalOperation(
                    id: near.id, data: near.data,
                    proximityCheck: ProximityCheck(
                        otp: scanned.totp, type: .qrCode, timestampReceived: Date(), timestampSent: Date())),
                factor: .pin("1234"))
            #expect(try await server.operation(http, near.id).status == .approved)
        }
    }

    @Test("Authentication start and finish: context, remaining attempts, result text, cancel", arguments: Backend.all)
    func authentication(backend: Backend) async throws {
        try await SDKClients.withActivatedClient(backend) { server, http, client, _ in
            let operations = OperationsService(client: client, acceptLanguage: "cs")
            let payment = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            let context = try await operations.startAuthentication(operationId: payment.id)
            #expect(context.title == "Potvrďte platbu" && context.content.hasPrefix("Dobrý den"))
            #expect(context.contentType == "text/plain")
            #expect(context.remainingAttempts == 5 && context.totalAttempts == 5)
            #expect(context.methods == [.pin] && context.pinPolicy == PINPolicy())
            #expect(abs(try #require(context.expires).timeIntervalSince(payment.expiresAt)) < 2)

            let wrong = await #expect(throws: AssentError.self) {
                try await operations.finishAuthentication(context, factor: .pin("9999"))
            }
            #expect(wrong?.code == .wrongPIN && wrong?.remainingAttempts == 4)
            #expect(try await operations.startAuthentication(operationId: payment.id).remainingAttempts == 4)
            // The right PIN over other data than the operation's (what a tampered display would sign): its own code,
            // never a wrong PIN; the attempt counts against the operation only.
            let tampered = await #expect(throws: AssentError.self) {
                try await operations.authorize(LocalOperation(id: payment.id, data: "A1*A999CZK"), factor: .pin("1234"))
            }
            #expect(tampered?.code == .operationDataMismatch && tampered?.mobileTokenCode == .operationDataMismatch)
            #expect(tampered?.remainingAttempts == nil && tampered?.httpStatus == 400)
            // The PIN was right: the activation's count is whole again; the operation counted both attempts.
            #expect(try await operations.startAuthentication(operationId: payment.id).remainingAttempts == 5)
            #expect(try await server.operation(http, payment.id).failedAttempts == 2)
            let result = try await operations.finishAuthentication(context, factor: .pin("1234"))
            #expect(result.operationId == payment.id && result.message == "Platba potvrzena")
            let again = await #expect(throws: AssentError.self) {
                try await operations.startAuthentication(operationId: payment.id)
            }
            #expect(again?.code == .operationFinished)

            let unwanted = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            let unwantedContext = try await operations.startAuthentication(operationId: unwanted.id)
            try await operations.cancelAuthentication(unwantedContext, reason: RejectReason.unexpectedOperation)
            let canceled = try await server.operation(http, unwanted.id)
            #expect(canceled.status == .rejected && canceled.statusReason == "UNEXPECTED_OPERATION")

            // Expired between start and finish, and on a new start.
            var brief = try OperationFixtures.payment(userId: "alice")
            brief.expiresIn = 10
            let expiring = try await server.createOperation(http, brief)
            let expiringContext = try await operations.startAuthentication(operationId: expiring.id)
            server.clock.advance(by: 11)
            let late = await #expect(throws: AssentError.self) {
                try await operations.finishAuthentication(expiringContext, factor: .pin("1234"))
            }
            #expect(late?.code == .operationExpired)
            let lateStart = await #expect(throws: AssentError.self) {
                try await operations.startAuthentication(operationId: expiring.id)
            }
            #expect(lateStart?.code == .operationExpired)
        }
    }
}
