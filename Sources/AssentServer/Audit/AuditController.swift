import AssentCrypto
import AssentModel
import Foundation
import Hummingbird

/// `GET /api/v1/audit`: the audit trail, newest first, of an activation or a user (every row, or with
/// `?application=` or a key limited to applications, that application's only); `GET /api/v1/audit/export`: a
/// verifiable range of the hash chain as JSON lines; `GET /api/v1/audit/key`: the checkpoint key;
/// `GET /api/v1/audit/chain`: the chain's state. The chain covers every application: its export and state need a
/// key for every application.
struct AuditController {
    let audit: AuditService
    let chain: AuditChainService
    let applications: ApplicationService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.auditRead)
            .get("audit", use: list)
            .get("audit/export", use: export)
            .get("audit/key", use: key)
            .get("audit/chain", use: state)
    }

    /// `?activationId`, `userId`, `type` (a type or its start, `console.`), `from`/`to` (as the export's), `before`
    /// (an event id: the next page after the list's last event) and `limit`.
    @Sendable func list(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let type = query.get("type").flatMap { $0.isEmpty ? nil : $0 }
        if let type, type.utf8.count > 64 || !type.unicodeScalars.allSatisfy(Self.typeCharacters.contains) {
            throw AssentServerError.invalidRequest(
                "type is an event type or its start (up to 64 lower-case letters, dots and underscores).")
        }
        var before: Int64?
        if let text = query.get("before"), !text.isEmpty {
            guard let id = Int64(text), id > 0 else {
                throw AssentServerError.invalidRequest("before is an event id: a whole number above 0.")
            }
            before = id
        }
        let (from, until) = (try Self.time(query.get("from"), "from"), try Self.time(query.get("to"), "to"))
        // A range with nothing in it (from at or after to) lists nothing, as any other range without events.
        var empty = false
        if let from, let until { empty = from >= until }
        let events =
            empty
            ? []
            : try await audit.events(
                AuditFilter(
                    activationId: query.get("activationId"), userId: query.get("userId"), typePrefix: type,
                    beforeId: before, from: from, until: until,
                    applications: try await context.auditApplications(applications)),
                limit: try HTTPSupport.limit(query.get("limit")))
        return try HTTPSupport.operatorJSON(
            AuditList(
                events: events.map {
                    AuditEventInfo(
                        id: $0.id ?? 0, at: Date(millis: $0.at), type: $0.type, activationId: $0.activationId,
                        userId: $0.userId, actor: $0.actor, detail: $0.detail, applicationId: $0.applicationId)
                }))
    }

    /// `?from=…&to=…` (RFC 3339 times or dates; default: everything): the rows written in that range, widened to
    /// whole signed segments; a checkpoint is signed first so the newest rows are covered.
    @Sendable func export(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try context.requireEveryApplication(Self.wholeChain)
        let query = request.uri.queryParameters
        let from = try Self.time(query.get("from"), "from") ?? 0
        let until = try Self.time(query.get("to"), "to") ?? Int64.max
        guard from < until else {
            throw AssentServerError.notFound(
                "No sealed audit rows were written in that time range (from is not before to).")
        }
        try await chain.checkpointNow()
        let text = try await chain.export(from: from, until: until)
        return Response(
            status: .ok, headers: [.contentType: "application/x-ndjson"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    @Sendable func key(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let key = try await chain.key().publicKey
        return try HTTPSupport.operatorJSON(
            AuditKeyInfo(publicKeyPem: key.pemRepresentation, fingerprint: AuditChainService.fingerprint(key)))
    }

    @Sendable func state(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try context.requireEveryApplication(Self.wholeChain)
        return try HTTPSupport.operatorJSON(try await chain.status())
    }

    static let wholeChain =
        "the audit chain links every application's rows and the organisation's own, so its export and state "
        + "need a key for every application (GET /api/v1/audit lists this application's rows)"

    /// What an event type is made of.
    static let typeCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz._")

    /// The query parameter `name`'s `text` as a time (``parseTime(_:)``), `nil` when absent or empty.
    static func time(_ text: String?, _ name: String) throws -> Millis? {
        guard let text, !text.isEmpty else { return nil }
        guard let date = parseTime(text) else {
            throw AssentServerError.invalidRequest("\(name) is an RFC 3339 date-time or a date, e.g. 2026-11-01.")
        }
        return date.millis
    }

    /// An RFC 3339 date-time (`2026-11-26T10:00:00Z`) or a date (`2026-11-26`, midnight UTC).
    static func parseTime(_ text: String) -> Date? { RFC3339.parse(text) }
}
