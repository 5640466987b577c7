import AssentCrypto
import AssentModel
import Foundation
import Hummingbird

/// `POST /api/v1/radius/access`: FreeRADIUS's `rest` module asks about an Access-Request (integrations/freeradius/).
/// The body is the request's attributes as rlm_rest writes them (`{"User-Name":{"type":"string","value":["alice"]},
/// …}`); the answer is the attributes FreeRADIUS puts in its reply, as rlm_rest reads them: 200 with
/// `control:Auth-Type` `Accept` (Access-Accept) or `control:Response-Packet-Type` `Access-Challenge` with
/// `reply:State`, or 401 (Access-Reject) — each with a `reply:Reply-Message` the person reads. The key needs
/// `access:check`; the sign-in is the selected application's.
///
/// `GET /api/v1/radius/clients/{address}`: FreeRADIUS's dynamic-client server asks whether a packet's sender is a
/// registered gateway (``RADIUSClientService``); 200 with the `FreeRADIUS-Client-*` attributes (its secret, its name,
/// Message-Authenticator required) or 404 (FreeRADIUS drops the packet). With `?client=ADDRESS`, `radius/access`
/// decides in the application of the gateway at that address; with `?challenges=no` (FreeRADIUS's EAP-GTC path) it
/// answers accept or reject only.
struct RADIUSController {
    let applications: ApplicationService
    let access: AccessService
    let clients: RADIUSClientService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.accessCheck)
            .post("radius/access", use: check)
            .get("radius/clients/{address}", use: client)
    }

    @Sendable func check(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let attributes = try await HTTPSupport.decode(RADIUSAttributes.self, from: request)
        var question = try attributes.accessRequest()
        if request.uri.queryParameters.get("challenges") == "no" {
            // EAP-GTC: the request's State is the EAP conversation's, never an answer to Assent's challenge.
            question.challenges = false
            question.state = nil
        }
        let application: ApplicationRecord
        if let address = request.uri.queryParameters.get("client") {
            guard let gateway = try await clients.client(at: address),
                let owner = try await applications.application(id: gateway.applicationId),
                context.permits(owner.id)
            else {
                return try Self.response(.reject(message: "This gateway is not registered with Assent."))
            }
            application = owner
        } else {
            application = try await applications.selected(context)
        }
        return try Self.response(try await access.check(question, application: application))
    }

    @Sendable func client(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let address = try context.parameter("address")
        guard let gateway = try await clients.client(at: address) else {
            throw AssentServerError.notFound("No RADIUS client sends from \(address.prefix(64)).")
        }
        let attributes = [
            "control:FreeRADIUS-Client-IP-Address": address, "control:FreeRADIUS-Client-Secret": gateway.secret,
            "control:FreeRADIUS-Client-Shortname": gateway.name, "control:FreeRADIUS-Client-Require-MA": "yes",
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(attributes))))
    }

    /// The attributes rlm_rest reads from the answer, and its status: 200 (accept, challenge) or 401 (reject).
    static func reply(_ decision: AccessDecision) -> (status: Int, attributes: [String: String]) {
        switch decision {
        case .accept(let message):
            (200, ["reply:Reply-Message": message, "control:Auth-Type": "Accept"])
        case .challenge(let message, let state):
            (
                200,
                [
                    "reply:Reply-Message": message, "reply:State": state,
                    "control:Response-Packet-Type": "Access-Challenge",
                ]
            )
        case .reject(let message):
            (401, ["reply:Reply-Message": message])
        }
    }

    static func response(_ decision: AccessDecision) throws -> Response {
        let (status, attributes) = reply(decision)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Response(
            status: HTTPResponse.Status(code: status),
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(attributes))))
    }
}

/// An Access-Request's attributes as FreeRADIUS's rlm_rest sends them (`body = json`): each attribute's values,
/// strings or numbers; octets (`State`) as `0x` and hexadecimal digits.
struct RADIUSAttributes: Decodable, Sendable {
    struct Attribute: Decodable, Sendable {
        var type: String?
        var value: [Value]
    }

    enum Value: Decodable, Sendable {
        case text(String)
        case number(Double)

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                self = .text(text)
            } else {
                self = .number(try container.decode(Double.self))
            }
        }

        var text: String {
            switch self {
            case .text(let text): text
            case .number(let number): number == number.rounded() ? String(Int64(number)) : String(number)
            }
        }
    }

    var attributes: [String: Attribute]

    init(from decoder: any Decoder) throws {
        attributes = try decoder.singleValueContainer().decode([String: Attribute].self)
    }

    init(_ attributes: [String: Attribute]) { self.attributes = attributes }

    /// The first value of `name`, as text; octets decoded from their hexadecimal form.
    func first(_ name: String) -> String? {
        guard let attribute = attributes[name], let value = attribute.value.first?.text else { return nil }
        if attribute.type == "octets", value.hasPrefix("0x") {
            return Hex.decode(String(value.dropFirst(2))).flatMap { String(data: $0, encoding: .utf8) }
        }
        return value
    }

    /// The sign-in it asks about: `User-Name`, `User-Password`, `State`, the gateway (`NAS-Identifier`, else
    /// `NAS-IP-Address`) and the person's address (`Calling-Station-Id`).
    func accessRequest() throws -> AccessRequest {
        guard let user = first("User-Name") else {
            throw AssentServerError.invalidRequest("The Access-Request has no User-Name.")
        }
        return AccessRequest(
            userId: user, typed: first("User-Password") ?? "", state: first("State"), service: "VPN",
            gateway: first("NAS-Identifier") ?? first("NAS-IP-Address"),
            clientAddress: first("Calling-Station-Id"))
    }
}

/// `/api/v1/access/start` and `/finish`: a host's second factor (`assent pam`, docs/INTEGRATIONS.md). The key needs
/// `access:check`; the sign-in is the selected application's.
struct HostAccessController {
    let applications: ApplicationService
    let access: AccessService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.accessCheck)
            .post("access/start", use: start)
            .post("access/finish", use: finish)
    }

    @Sendable func start(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(HostAccessRequest.self, from: request)
        let decision = try await access.startSecondFactor(
            Self.question(body), application: try await applications.selected(context))
        return try HTTPSupport.operatorJSON(Self.response(decision))
    }

    @Sendable func finish(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(HostAccessRequest.self, from: request)
        let decision = try await access.finishSecondFactor(
            Self.question(body), application: try await applications.selected(context))
        return try HTTPSupport.operatorJSON(Self.response(decision))
    }

    static func question(_ body: HostAccessRequest) -> AccessRequest {
        AccessRequest(
            userId: body.userId, typed: body.typed ?? "", state: body.state, service: "SSH",
            gateway: body.host.flatMap { InputText.displayName($0) }, clientAddress: body.clientAddress)
    }

    static func response(_ decision: AccessDecision) -> HostAccessResponse {
        switch decision {
        case .accept(let message): HostAccessResponse(decision: "ACCEPT", message: message)
        case .reject(let message): HostAccessResponse(decision: "REJECT", message: message)
        case .challenge(let message, let state):
            HostAccessResponse(decision: "CHALLENGE", message: message, state: state)
        }
    }
}
