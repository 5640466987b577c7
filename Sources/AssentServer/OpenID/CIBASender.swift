import AssentModel
import Foundation
import NIOCore

extension OutboxChannel {
    /// CIBA ping and push callbacks to a client's notification endpoint.
    public static let ciba = OutboxChannel(rawValue: "ciba")
}

/// Delivers CIBA callbacks from the outbox (CIBA Core §10.2, §10.3): a ping (`{"auth_req_id"}`) or the tokens — or
/// the error — of a push client, with the client's notification token as the bearer. Redirects are never followed.
/// A push grant is redeemed only once a delivery is acknowledged; each attempt mints fresh tokens.
struct CIBASender: OutboxSender {
    /// The part of the store this sees.
    let store: any OpenIDStore
    let clock: WallClock
    let service: CIBAService
    let post: CallbackPost

    var channel: OutboxChannel { .ciba }

    func deliver(_ item: OutboxItem) async -> DeliveryOutcome {
        let request: CIBARequestRecord
        let registered: OpenIDClientRecord
        let body: Data
        do {
            guard let found = try await store.cibaRequest(id: item.subject) else {
                return .failed("The CIBA request no longer exists.")
            }
            guard let client = try await store.client(id: found.clientId),
                let endpoint = client.notificationEndpoint, !endpoint.isEmpty
            else { return .failed("The client or its notification endpoint no longer exists.") }
            guard found.notificationToken != nil else { return .failed("The request has no notification token.") }
            request = found
            registered = client
            if found.deliveryMode == CIBADeliveryMode.ping.rawValue {
                body = try JSONEncoder().encode(CIBAPing(authReqId: found.authReqId))
            } else {
                guard found.redeemedAt == nil else { return .failed("The tokens were delivered already.") }
                body = try await pushBody(found, client: client)
            }
        } catch {
            return .retry("The callback could not be prepared: \(type(of: error))")
        }
        let status: UInt
        switch await post.send(
            body, to: registered.notificationEndpoint!, contentType: "application/json", userAgent: "Assent-CIBA",
            authorization: "Bearer \(request.notificationToken!)")
        {
        case .success(let answered): status = answered
        case .failure(let failure): return CallbackPost.outcome(failure)
        }
        let outcome = CallbackPost.outcome(status, of: "The notification endpoint")
        if outcome == .delivered, request.deliveryMode == CIBADeliveryMode.push.rawValue {
            _ = try? await store.redeemCIBARequest(id: request.id, at: clock.millis)
        }
        return outcome
    }

    /// The tokens of an approved request, or the error of a finished unapproved one.
    private func pushBody(_ request: CIBARequestRecord, client: OpenIDClientRecord) async throws -> Data {
        let operation = try await service.operations.get(id: request.operationId)
        if operation.status == .approved {
            var tokens = try await service.issueTokens(request: request, client: client, operation: operation)
            tokens.authReqId = request.authReqId
            return try JSONEncoder().encode(tokens)
        }
        let denial = CIBAService.denial(operation)
        return try JSONEncoder().encode(
            OAuthErrorResponse(error: denial.code, errorDescription: denial.description, authReqId: request.authReqId))
    }

}
