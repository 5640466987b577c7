import AssentCrypto
import AssentModel
import Foundation

/// An operation the SDK can approve: one fetched from the server (``MobileOperation``, ``CustomOperation``) or one
/// that arrived through another channel (``LocalOperation``).
public protocol AuthorizableOperation: Sendable {
    /// The operation id.
    var id: String { get }
    /// The operation data the signature covers.
    var data: String { get }
}

extension MobileOperation: AuthorizableOperation {}

/// An operation received through another channel (a push message, a QR code, a deeplink) that the app approves
/// without fetching it first.
public struct LocalOperation: AuthorizableOperation, Equatable {
    /// The operation id.
    public var id: String
    /// The operation data, exactly as the server holds it.
    public var data: String
    /// The proximity check that came with it, if the operation needs one.
    public var proximityCheck: ProximityCheck?

    /// Creates the value.
    public init(id: String, data: String, proximityCheck: ProximityCheck? = nil) {
        self.id = id
        self.data = data
        self.proximityCheck = proximityCheck
    }
}

/// An operation of a server that sends fields of its own: the standard ones decode into ``operation``, the
/// extra ones into ``extra`` (any `Decodable` type whose keys are those fields), both from the same JSON object.
public struct CustomOperation<Extra: Decodable & Sendable>: Decodable, AuthorizableOperation {
    /// The standard fields.
    public var operation: MobileOperation
    /// The server's own fields.
    public var extra: Extra

    public var id: String { operation.id }
    public var data: String { operation.data }

    /// Decodes the standard and the extra fields from the same object.
    public init(from decoder: any Decoder) throws {
        operation = try MobileOperation(from: decoder)
        extra = try Extra(from: decoder)
    }
}

/// One step of the operations list: loading on or off, a failed fetch, or the full list after a fetch.
public enum OperationsEvent: Sendable {
    /// A fetch started (`true`) or ended (`false`).
    case loading(Bool)
    /// A fetch failed.
    case failed(AssentError)
    /// A fetch succeeded (sent after every fetch, changed or not), or an approval or rejection removed an
    /// operation from the list.
    case changed(OperationsChange)
}

/// The pending operations after a fetch, with what was added and removed since the previous list.
public struct OperationsChange: Sendable, Equatable {
    /// Every pending operation, oldest first.
    public var operations: [MobileOperation]
    /// Operations that were not in the previous list.
    public var added: [MobileOperation]
    /// Operations of the previous list that are gone.
    public var removed: [MobileOperation]
}

/// Receives the operations list's events; an alternative to ``OperationsService/events()``. The service keeps a
/// weak reference and calls it from its own executor: hop to the main actor to update a UI.
public protocol OperationsObserver: AnyObject, Sendable {
    func operationsLoading(_ loading: Bool)
    func operationsFailed(_ error: AssentError)
    func operationsChanged(_ change: OperationsChange)
}

/// The Mobile Token API over an activated ``AssentClient``: list, detail, claim, history, approve, reject, offline
/// approval of a scanned QR operation, and polling of the pending list with events. MAC tokens are created and
/// renewed transparently. Every call ends with ``AssentError/Code/cancelled`` when its task is cancelled.
public actor OperationsService {
    /// The activated client whose signatures and tokens the calls use.
    public nonisolated let client: AssentClient
    /// Sent as `Accept-Language`, so titles and labels come localised.
    public var acceptLanguage: String?

    /// The polling interval unless another is asked for: 7 seconds.
    public static let defaultPollingInterval: Duration = .seconds(7)
    /// The shortest polling interval: 5 seconds; shorter ones are raised to it.
    public static let minimumPollingInterval: Duration = .seconds(5)

    /// The result of the last list fetch (by polling or ``refreshOperations()``), `nil` before the first.
    public private(set) var lastFetchResult: Result<[MobileOperation], AssentError>?
    /// The interval of the running polling, `nil` when not polling.
    public private(set) var pollingInterval: Duration?
    /// Whether polling is paused (e.g. while the app is in the background).
    public private(set) var isPollingPaused = false

    private var known: [MobileOperation] = []
    private var serverClockOffset: TimeInterval?
    private var pollingTask: Task<Void, Never>?
    /// The live-updates loop (``startLiveUpdates(fallbackPollingInterval:)``).
    var liveTask: Task<Void, Never>?
    /// Whether the live event stream is connected now.
    public internal(set) var isLive = false
    /// The id of the last live event seen, sent back as `Last-Event-ID` when reconnecting.
    var lastLiveEventId: String?
    private var fetchInFlight: Task<Result<[MobileOperation], AssentError>, Never>?
    private var streams: [UUID: AsyncStream<OperationsEvent>.Continuation] = [:]
    private var observers: [WeakObserver] = []

    /// A service over `client`.
    public init(client: AssentClient, acceptLanguage: String? = nil) {
        self.client = client
        self.acceptLanguage = acceptLanguage
    }

    static let base = "/api/auth/token/app/operation"

    /// Sets the language for the following calls (`nil`: the server's default).
    public func setAcceptLanguage(_ language: String?) { acceptLanguage = language }

    /// The server's clock now, estimated from the `currentTimestamp` of the last answer that carried one (use it
    /// to show how long an operation stays valid, whatever the device's clock says).
    public var currentServerDate: Date? { serverClockOffset.map { Date().addingTimeInterval($0) } }

    /// A fetch's value with the server's clock at the time of the answer.
    public struct Fetched<Value: Sendable>: Sendable {
        /// What was fetched.
        public var value: Value
        /// The server's `currentTimestamp`, when it sent one.
        public var serverDate: Date?
    }

    // MARK: Fetching

    /// The pending operations of the activation's user, oldest first (no events; see ``refreshOperations()``).
    public func pending() async throws -> Fetched<[MobileOperation]> {
        try await pending(as: MobileOperation.self)
    }

    /// The pending operations decoded as `type`, e.g. a ``CustomOperation`` with the server's extra fields.
    public func pending<Operation: Decodable & Sendable>(as type: Operation.Type) async throws -> Fetched<[Operation]> {
        try await tokenCall("/list", body: Data("{}".utf8))
    }

    /// One operation (the user's, or one nobody claimed yet).
    public func detail(id: String) async throws -> Fetched<MobileOperation> {
        try await detail(id: id, as: MobileOperation.self)
    }

    /// One operation decoded as `type`.
    public func detail<Operation: Decodable & Sendable>(id: String, as type: Operation.Type) async throws
        -> Fetched<Operation>
    {
        try await tokenCall("/detail", body: try JSONEncoder().encode(RequestEnvelope(OperationIdRequest(id: id))))
    }

    /// Makes a non-personalised operation the user's (exactly one device wins it).
    public func claim(id: String) async throws -> Fetched<MobileOperation> {
        try await claim(id: id, as: MobileOperation.self)
    }

    /// Claims an operation and decodes it as `type`.
    public func claim<Operation: Decodable & Sendable>(id: String, as type: Operation.Type) async throws
        -> Fetched<Operation>
    {
        try await tokenCall(
            "/detail/claim", body: try JSONEncoder().encode(RequestEnvelope(OperationIdRequest(id: id))))
    }

    /// Every operation of the user, newest first (needs the PIN or biometry).
    public func history(factor: AuthenticationFactor) async throws -> Fetched<[MobileOperation]> {
        if case .possession = factor {
            throw AssentError(.invalidInput, "The history needs the PIN or biometry.")
        }
        let answer = try await client.signedCall(
            Self.base + "/history", uriId: "/operation/history", body: Data("{}".utf8), factor: factor,
            headers: languageHeaders)
        return record(try Self.decode(answer))
    }

    /// Every operation of the user, newest first.
    public func history(pin: String) async throws -> Fetched<[MobileOperation]> {
        try await history(factor: .pin(pin))
    }

    // MARK: Approving

    /// Approves `operation` with `factor` (the PIN or biometry for 2FA operations); attach `proximityCheck` when
    /// the operation needs one (a ``LocalOperation``'s own check is used otherwise). `timestampSent` is set now.
    /// `mobileContext` (at most 4 KiB) is signed with the approval and reaches the relying party. For an operation
    /// with ``MobileOperation/numberMatching``, `number` is the one the person chose among its choices (or typed):
    /// it is inside the signed request; a wrong one rejects the operation (``AssentError/Code/numberMismatch``).
    /// The operation leaves the pending list (a ``OperationsEvent/changed(_:)`` with it in `removed`).
    /// - Throws: ``AssentError/Code/pinExpired`` when the server's maximum PIN age has passed: change the PIN first.
    public func authorize(
        _ operation: some AuthorizableOperation, factor: AuthenticationFactor, proximityCheck: ProximityCheck? = nil,
        mobileContext: Data? = nil, number: Int? = nil
    ) async throws {
        var check = proximityCheck ?? (operation as? LocalOperation)?.proximityCheck
        check?.timestampSent = Date()
        let body = try MobileTokenJSON.encoder().encode(
            RequestEnvelope(
                OperationAuthorizeRequest(
                    id: operation.id, data: operation.data, proximityCheck: check,
                    mobileContext: mobileContext?.base64EncodedString(), number: number)))
        _ = try await client.signedCall(
            Self.base + "/authorize", uriId: "/operation/authorize", body: body, factor: factor)
        forget(operationId: operation.id)
    }

    /// Rejects the operation with a reason (`UNKNOWN`, `INCORRECT_DATA`, `UNEXPECTED_OPERATION` or your own); the
    /// device alone signs it.
    public func reject(id: String, reason: String = RejectReason.unknown) async throws {
        let body = try JSONEncoder().encode(RequestEnvelope(OperationRejectRequest(id: id, reason: reason)))
        _ = try await client.signedCall(
            Self.base + "/cancel", uriId: "/operation/cancel", body: body, factor: .possession)
        forget(operationId: id)
    }

    // MARK: Offline

    /// Parses a scanned offline QR operation and verifies that this server signed it (master or personal key).
    public func parseOfflineOperation(_ text: String) async throws -> OfflineOperationQR {
        let qr: OfflineOperationQR
        do {
            qr = try OfflineOperationQR(parsing: text)
        } catch {
            throw AssentError.wrap(error, .invalidInput, "This is not an offline operation QR code.")
        }
        do {
            try qr.verify(
                masterPublicKey: client.configuration.masterServerPublicKey,
                personalPublicKey: try await client.serverPublicKey())
        } catch {
            throw AssentError.wrap(error, .signatureVerificationFailed, "The QR code was not signed by this server.")
        }
        return qr
    }

    /// The code the user types to approve a verified offline operation: an offline signature over the QR's
    /// operation with the PIN, or with biometry when the QR allows it (flag `B`). `uriId` defaults to
    /// `/operation/authorize/offline`.
    public func offlineApprovalCode(
        for qr: OfflineOperationQR, factor: AuthenticationFactor, uriId: String = OfflineOperationQR.uriId
    ) async throws -> String {
        switch factor {
        case .possession:
            throw AssentError(.invalidInput, "An offline approval needs the PIN or biometry.")
        case .biometry where !qr.flags.contains(.biometryAllowed):
            throw AssentError(.factorUnavailable, "This QR code does not allow approval with biometry.")
        default:
            return try await client.offlineSignature(
                uriId: uriId, nonce: qr.nonce, body: qr.signatureBody, factor: factor)
        }
    }

    /// The offline approval code with the PIN.
    public func offlineApprovalCode(
        for qr: OfflineOperationQR, pin: String, uriId: String = OfflineOperationQR.uriId
    ) async throws -> String {
        try await offlineApprovalCode(for: qr, factor: .pin(pin), uriId: uriId)
    }

    // MARK: Polling and events

    /// Whether a list fetch is in flight.
    public var isLoadingOperations: Bool { fetchInFlight != nil }

    /// Whether polling runs (paused or not).
    public var isPollingOperations: Bool { pollingTask != nil }

    /// Fetches the pending list every `interval` (at least ``minimumPollingInterval``), at once unless
    /// `delayStart`. Every fetch emits events to ``events()`` and the observers. Restarting replaces the running
    /// polling.
    public func startPollingOperations(interval: Duration = defaultPollingInterval, delayStart: Bool = false) {
        pollingTask?.cancel()
        let interval = max(interval, Self.minimumPollingInterval)
        pollingInterval = interval
        // The loop holds the service only while it fetches, so a forgotten service can go away.
        pollingTask = Task { [weak self] in
            if delayStart { try? await Task.sleep(for: interval) }
            while !Task.isCancelled {
                guard await self?.pollOnce() != nil else { return }
                try? await Task.sleep(for: interval)
            }
        }
    }

    private func pollOnce() async {
        if !isPollingPaused { await refreshOperations() }
    }

    /// Stops polling (a fetch in flight still reports).
    public func stopPollingOperations() {
        pollingTask?.cancel()
        pollingTask = nil
        pollingInterval = nil
    }

    /// Pauses polling without stopping it, e.g. when the app goes to the background.
    public func pausePolling() { isPollingPaused = true }

    /// Resumes paused polling with a fetch now.
    public func resumePolling() {
        guard isPollingPaused else { return }
        isPollingPaused = false
        if isPollingOperations { Task { _ = await self.refreshOperations() } }
    }

    /// Fetches the pending list now and emits loading, then the change or the failure, then loading off. A call
    /// while a fetch is in flight joins that fetch.
    @discardableResult
    public func refreshOperations() async -> Result<[MobileOperation], AssentError> {
        if let fetchInFlight { return await fetchInFlight.value }
        let fetch = Task { await self.fetchAndEmit() }
        fetchInFlight = fetch
        let result = await fetch.value
        fetchInFlight = nil
        return result
    }

    func fetchAndEmit() async -> Result<[MobileOperation], AssentError> {
        emit(.loading(true))
        let result: Result<[MobileOperation], AssentError>
        do {
            result = .success(try await pending().value)
        } catch {
            result = .failure(AssentError.wrap(error, .network, "The operations cannot be fetched."))
        }
        lastFetchResult = result
        switch result {
        case .success(let operations):
            let before = Set(known.map(\.id))
            let now = Set(operations.map(\.id))
            let change = OperationsChange(
                operations: operations, added: operations.filter { !before.contains($0.id) },
                removed: known.filter { !now.contains($0.id) })
            known = operations
            emit(.changed(change))
        case .failure(let error):
            emit(.failed(error))
        }
        emit(.loading(false))
        return result
    }

    /// Removes an approved or rejected operation from the known list and tells the listeners.
    private func forget(operationId: String) {
        guard let gone = known.first(where: { $0.id == operationId }) else { return }
        known.removeAll { $0.id == operationId }
        if case .success(var operations) = lastFetchResult {
            operations.removeAll { $0.id == operationId }
            lastFetchResult = .success(operations)
        }
        emit(.changed(OperationsChange(operations: known, added: [], removed: [gone])))
    }

    /// The events of every following fetch, until the consumer stops iterating.
    public func events() -> AsyncStream<OperationsEvent> {
        let (stream, continuation) = AsyncStream<OperationsEvent>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let id = UUID()
        streams[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeStream(id) }
        }
        return stream
    }

    private func removeStream(_ id: UUID) { streams[id] = nil }

    /// Adds an observer (held weakly).
    public func addObserver(_ observer: any OperationsObserver) {
        observers.removeAll { $0.value == nil || $0.value === observer }
        observers.append(WeakObserver(value: observer))
    }

    /// Removes an observer.
    public func removeObserver(_ observer: any OperationsObserver) {
        observers.removeAll { $0.value == nil || $0.value === observer }
    }

    private func emit(_ event: OperationsEvent) {
        for continuation in streams.values { continuation.yield(event) }
        for observer in observers.compactMap(\.value) {
            switch event {
            case .loading(let loading): observer.operationsLoading(loading)
            case .failed(let error): observer.operationsFailed(error)
            case .changed(let change): observer.operationsChanged(change)
            }
        }
    }

    // MARK: Calls

    private var languageHeaders: [String: String] { acceptLanguage.map { ["Accept-Language": $0] } ?? [:] }

    private func tokenCall<Value: Decodable & Sendable>(_ path: String, body: Data) async throws -> Fetched<Value> {
        let answer = try await client.tokenCall(Self.base + path, body: body, headers: languageHeaders)
        return record(try Self.decode(answer))
    }

    /// Notes the server's clock of an answer.
    private func record<Value>(_ fetched: Fetched<Value>) -> Fetched<Value> {
        if let serverDate = fetched.serverDate { serverClockOffset = serverDate.timeIntervalSinceNow }
        return fetched
    }

    static func decode<Value: Decodable & Sendable>(_ data: Data) throws -> Fetched<Value> {
        do {
            let envelope = try MobileTokenJSON.decoder().decode(Incoming<Value>.self, from: data)
            return Fetched(
                value: envelope.responseObject,
                serverDate: envelope.currentTimestamp.flatMap(MobileTokenJSON.parseTimestamp))
        } catch {
            throw AssentError.wrap(error, .invalidResponse, "The server's operations answer cannot be read.")
        }
    }
}

/// A response envelope read only (its payload need not be encodable, e.g. a ``CustomOperation``).
private struct Incoming<Payload: Decodable>: Decodable {
    var currentTimestamp: String?
    var responseObject: Payload
}

private struct WeakObserver {
    weak var value: (any OperationsObserver)?
}

extension AssentClient {
    /// The personal server public key, once activated.
    func serverPublicKey() throws -> ECPublicKey? {
        try state.map { try ECPublicKey(x963: $0.serverPublicKey) }
    }

    /// An offline (decimal) 2FA signature with the PIN or biometry; the advanced counter is saved first.
    func offlineSignature(uriId: String, nonce: Data, body: Data, factor: AuthenticationFactor) async throws -> String {
        let data = PowerAuthSignature.dataToSign(
            method: "POST", uriId: uriId, nonce: nonce, body: body,
            applicationSecret: PowerAuthSignature.offlineSecret)
        return try await sign(data, factor: factor, format: .offline).signature
    }
}
