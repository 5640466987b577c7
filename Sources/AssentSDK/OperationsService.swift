import AssentCrypto
import AssentModel
import Foundation

/// The Mobile Token API over an activated ``AssentClient``: list, detail, claim, history, approve, reject, and
/// offline approval of a scanned QR operation. MAC tokens are created and renewed transparently.
public struct OperationsService: Sendable {
    public let client: AssentClient
    /// Sent as `Accept-Language`, so titles and labels come localised.
    public var acceptLanguage: String?

    /// A service over `client`.
    public init(client: AssentClient, acceptLanguage: String? = nil) {
        self.client = client
        self.acceptLanguage = acceptLanguage
    }

    static let base = "/api/auth/token/app/operation"

    /// A fetch's operations with the server's clock at the time of the answer.
    public struct Fetched<Value: Sendable>: Sendable {
        public var value: Value
        /// The server's `currentTimestamp`, when it sent one.
        public var serverDate: Date?
    }

    /// The pending operations of the activation's user, oldest first.
    public func pending() async throws -> Fetched<[MobileOperation]> {
        try await tokenCall("/list", body: Data("{}".utf8))
    }

    /// One operation (the user's, or one nobody claimed yet).
    public func detail(id: String) async throws -> Fetched<MobileOperation> {
        try await tokenCall("/detail", body: try JSONEncoder().encode(RequestEnvelope(OperationIdRequest(id: id))))
    }

    /// Makes a non-personalised operation the user's (exactly one device wins it).
    public func claim(id: String) async throws -> Fetched<MobileOperation> {
        try await tokenCall(
            "/detail/claim", body: try JSONEncoder().encode(RequestEnvelope(OperationIdRequest(id: id))))
    }

    /// Every operation of the user, newest first (needs the PIN).
    public func history(pin: String) async throws -> Fetched<[MobileOperation]> {
        let answer = try await client.signedCall(
            Self.base + "/history", uriId: "/operation/history", body: Data("{}".utf8), factor: .pin(pin))
        return try Self.decode(answer)
    }

    /// Approves `operation` with `factor` (a PIN for 2FA operations); attach `proximityCheck` when the operation
    /// needs one (its `timestampSent` is set now).
    public func authorize(
        _ operation: MobileOperation, factor: AuthenticationFactor, proximityCheck: ProximityCheck? = nil
    ) async throws {
        var check = proximityCheck
        check?.timestampSent = Date()
        let body = try MobileTokenJSON.encoder().encode(
            RequestEnvelope(OperationAuthorizeRequest(id: operation.id, data: operation.data, proximityCheck: check)))
        _ = try await client.signedCall(
            Self.base + "/authorize", uriId: "/operation/authorize", body: body, factor: factor)
    }

    /// Rejects the operation with a reason (`UNKNOWN`, `INCORRECT_DATA`, `UNEXPECTED_OPERATION` or your own).
    public func reject(id: String, reason: String = RejectReason.unknown) async throws {
        let body = try JSONEncoder().encode(RequestEnvelope(OperationRejectRequest(id: id, reason: reason)))
        _ = try await client.signedCall(
            Self.base + "/cancel", uriId: "/operation/cancel", body: body, factor: .possession)
    }

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

    /// The code the user types to approve a verified offline operation: an offline signature with the PIN over
    /// the QR's operation (`uriId` defaults to `/operation/authorize/offline`).
    public func offlineApprovalCode(
        for qr: OfflineOperationQR, pin: String, uriId: String = OfflineOperationQR.uriId
    ) async throws -> String {
        try await client.offlineSignature(uriId: uriId, nonce: qr.nonce, body: qr.signatureBody, pin: pin)
    }

    private func tokenCall<Value: Codable & Sendable>(_ path: String, body: Data) async throws -> Fetched<Value> {
        let answer = try await client.tokenCall(
            Self.base + path, body: body, headers: acceptLanguage.map { ["Accept-Language": $0] } ?? [:])
        return try Self.decode(answer)
    }

    static func decode<Value: Codable & Sendable>(_ data: Data) throws -> Fetched<Value> {
        do {
            let envelope = try MobileTokenJSON.decoder().decode(ResponseEnvelope<Value>.self, from: data)
            return Fetched(
                value: envelope.responseObject,
                serverDate: envelope.currentTimestamp.flatMap(MobileTokenJSON.parseTimestamp))
        } catch {
            throw AssentError.wrap(error, .invalidResponse, "The server's operations answer cannot be read.")
        }
    }
}

extension AssentClient {
    /// The personal server public key, once activated.
    func serverPublicKey() throws -> ECPublicKey? {
        try state.map { try ECPublicKey(x963: $0.serverPublicKey) }
    }

    /// An offline (decimal) 2FA signature with the PIN; the advanced counter is saved first.
    func offlineSignature(uriId: String, nonce: Data, body: Data, pin: String) throws -> String {
        guard var current = state else { throw AssentError(.notActivated, "This device is not activated.") }
        let knowledge = try KnowledgeKeyProtection.unprotect(
            current.protectedKnowledgeKey, password: Data(pin.utf8), salt: current.knowledgeSalt)
        let counter = try HashCounter(data: current.counter)
        let data = PowerAuthSignature.dataToSign(
            method: "POST", uriId: uriId, nonce: nonce, body: body,
            applicationSecret: PowerAuthSignature.offlineSecret)
        let code = try PowerAuthSignature.compute(
            data: data, counter: counter, keys: [current.possessionKey, knowledge], format: .offline)
        current.counter = counter.next().data
        try save(current)
        return code
    }
}
