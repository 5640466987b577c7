import AssentCrypto
import AssentModel
import Foundation

/// The Mobile Token API as a device uses it.
extension TestDevice {
    /// A fresh `X-PowerAuth-Token` header for `token`.
    public func tokenHeader(_ token: TokenCreateResponse, timestamp: UInt64? = nil) -> String {
        TokenHeader.make(
            tokenId: token.tokenId, tokenSecret: Data(base64Encoded: token.tokenSecret) ?? Data(),
            timestamp: timestamp ?? now
        ).value
    }

    /// Posts `body` to a MAC-token endpoint (`/api/auth/token/app/operation/list`, `/detail`, `/detail/claim`).
    public func tokenPost(
        _ path: String, token: TokenCreateResponse, body: Data = Data("{}".utf8), acceptLanguage: String? = nil
    ) async throws -> HTTPClient.Response {
        var headers = [TokenHeader.name: tokenHeader(token)]
        if let acceptLanguage { headers["Accept-Language"] = acceptLanguage }
        return try await client.send("POST", path, headers: headers, body: body)
    }

    /// The pending operations, decoded.
    public func listOperations(token: TokenCreateResponse, acceptLanguage: String? = nil) async throws
        -> [MobileOperation]
    {
        let response = try await tokenPost(
            "/api/auth/token/app/operation/list", token: token, acceptLanguage: acceptLanguage)
        guard response.status == 200 else { throw TestFailure("list: \(response.status) \(response.text)") }
        return try MobileTokenJSON.decoder().decode(ResponseEnvelope<[MobileOperation]>.self, from: response.body)
            .responseObject
    }

    /// Posts `body` signed with `type` (and a wrong PIN if asked) to a signed endpoint.
    public mutating func signedPost(
        _ path: String, uriId: String, body: Data, type: SignatureType = .possessionKnowledge, wrongPIN: Bool = false
    ) async throws -> HTTPClient.Response {
        let header = try authorization(uriId: uriId, body: body, type: type, wrongKnowledgeKey: wrongPIN)
        return try await client.send("POST", path, headers: [AuthorizationHeader.name: header], body: body)
    }

    /// `/operation/authorize`.
    public mutating func authorizeOperation(
        id: String, data: String, type: SignatureType = .possessionKnowledge, proximityCheck: ProximityCheck? = nil,
        wrongPIN: Bool = false
    ) async throws -> HTTPClient.Response {
        let body = try MobileTokenJSON.encoder().encode(
            RequestEnvelope(OperationAuthorizeRequest(id: id, data: data, proximityCheck: proximityCheck)))
        return try await signedPost(
            "/api/auth/token/app/operation/authorize", uriId: "/operation/authorize", body: body, type: type,
            wrongPIN: wrongPIN)
    }

    /// `/operation/cancel`: rejects with `reason`.
    public mutating func rejectOperation(id: String, reason: String = RejectReason.incorrectData) async throws
        -> HTTPClient.Response
    {
        let body = try JSONEncoder().encode(RequestEnvelope(OperationRejectRequest(id: id, reason: reason)))
        return try await signedPost(
            "/api/auth/token/app/operation/cancel", uriId: "/operation/cancel", body: body, type: .possession)
    }

    /// The approval code a user types after scanning `qr`: an offline signature with PIN (or biometry) over the
    /// QR's operation, computed as the device does. Advances the local counter.
    public mutating func offlineApprovalCode(for qr: OfflineOperationQR, type: SignatureType = .possessionKnowledge)
        throws -> String
    {
        let data = PowerAuthSignature.dataToSign(
            method: "POST", uriId: OfflineOperationQR.uriId, nonce: qr.nonce, body: qr.signatureBody,
            applicationSecret: PowerAuthSignature.offlineSecret)
        let code = try PowerAuthSignature.compute(
            data: data, counter: counter!, keys: keys!.signatureKeys(for: type), format: .offline)
        counter = counter!.next()
        return code
    }
}
