import Foundation
import Hummingbird

/// `GET /health`: the process answers (liveness). `GET /health/ready`: whether this server should get traffic —
/// the database answers, its schema is the one this build knows (or a newer one declared to serve it), and no graceful stop has begun — 200, or 503
/// naming the part that is not ready. Load balancers and orchestrators route by it; a proxy stops sending new
/// requests to a draining server while its requests in flight finish.
struct HealthController {
    /// Reads the schema's state (and so whether the database answers).
    let schema: any SchemaStore
    /// Whether a stop has begun with a drain (before the graceful shutdown proper).
    let drain: DrainState

    func addRoutes(to router: Router<AssentRequestContext>) {
        router.get("health", use: live)
        router.get("health/ready", use: ready)
    }

    @Sendable func live(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try HTTPSupport.json(["status": "UP"])
    }

    @Sendable func ready(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let state = try? await schema.schemaState()
        let readiness = Readiness(schema: state, draining: drain.isStopping)
        return try HTTPSupport.json(readiness, status: readiness.isReady ? .ok : .serviceUnavailable)
    }
}

/// The answer of `/health/ready`: `status` `UP` or `DOWN`, `database` `UP` or `DOWN`, `schema` `CURRENT`,
/// `BEHIND`, `AHEAD_COMPATIBLE` (a newer version migrated it, declaring this one still serves it: ready) or `AHEAD`
/// (when the database answered), and `draining`.
struct Readiness: Encodable, Equatable {
    var status: String
    var database: String
    var schema: String?
    var draining: Bool

    /// `schema` is `nil` when the database did not answer.
    init(schema: SchemaState?, draining: Bool) {
        database = schema == nil ? "DOWN" : "UP"
        self.schema = schema?.name
        self.draining = draining
        status = schema?.isServable == true && !draining ? "UP" : "DOWN"
    }

    var isReady: Bool { status == "UP" }
}
