import AssentModel
import AsyncHTTPClient
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
    let environment: ServerEnvironment
    /// The part of the store this sees.
    var store: any OpenIDStore { environment.store }
    let service: CIBAService
    let client: HTTPClient
    var timeout: Duration = .seconds(10)

    init(environment: ServerEnvironment) {
        self.environment = environment
        service = CIBAService(environment: environment)
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout.connect = .seconds(10)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

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
        var post = HTTPClientRequest(url: registered.notificationEndpoint!)
        post.method = .POST
        post.headers.add(name: "Content-Type", value: "application/json")
        post.headers.add(name: "Authorization", value: "Bearer \(request.notificationToken!)")
        post.headers.add(name: "User-Agent", value: "Assent-CIBA")
        post.body = .bytes(ByteBuffer(bytes: body))
        let status: UInt
        do {
            let response = try await client.execute(post, timeout: .seconds(timeout.components.seconds))
            _ = try? await response.body.collect(upTo: 64 * 1024)
            status = response.status.code
        } catch {
            return .retry("\(type(of: error))")
        }
        switch status {
        case 200..<300:
            if request.deliveryMode == CIBADeliveryMode.push.rawValue {
                _ = try? await store.redeemCIBARequest(id: request.id, at: environment.nowMillis)
            }
            return .delivered
        case 300..<400: return .failed("The notification endpoint answered a redirect (\(status)); not followed.")
        case 408, 429, 500...: return .retry("HTTP \(status)")
        default: return .failed("HTTP \(status)")
        }
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

    func shutdown() async {
        try? await client.shutdown()
    }
}
