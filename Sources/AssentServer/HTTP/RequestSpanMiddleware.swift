import HTTPTypes
import Hummingbird
import Tracing

/// Serves each request in a server span (swift-distributed-tracing; exported over OTLP when `serve --otlp-endpoint`
/// is set), continuing the trace a W3C `traceparent` header names. The span records the method, the route's pattern,
/// the answer's status and the request id — never the path or the query, which carry one-time links, codes and
/// state. It ends when the handler answered; a live stream's body is not in it. Spans made while serving (a
/// transaction's) are its children.
struct RequestSpanMiddleware: RouterMiddleware {
    typealias Context = AssentRequestContext

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var parent = ServiceContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &parent, using: FieldsExtractor())
        let method = request.method.rawValue
        let span = startSpan("HTTP \(method)", context: parent, ofKind: .server)
        defer { span.end() }
        span.attributes["http.request.method"] = method
        if let id = RequestID.current { span.attributes["assent.request.id"] = id }
        do {
            let response = try await ServiceContext.withValue(span.context) { try await next(request, context) }
            name(span, method, context)
            span.attributes["http.response.status_code"] = Int(response.status.code)
            if response.status.code >= 500 { span.setStatus(SpanStatus(code: .error)) }
            return response
        } catch {
            name(span, method, context)
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            span.attributes["http.response.status_code"] = status
            if status >= 500 {
                span.setStatus(SpanStatus(code: .error))
                span.recordError(error)
            }
            throw error
        }
    }

    /// `GET /api/v1/operations/{id}`: the route's pattern once routing found it.
    private func name(_ span: any Span, _ method: String, _ context: Context) {
        guard let route = context.endpointPath else { return }
        span.operationName = "\(method) \(route)"
        span.attributes["http.route"] = route
    }

    /// Reads a propagated context (`traceparent`, `tracestate`) from request headers.
    struct FieldsExtractor: Extractor {
        func extract(key: String, from carrier: HTTPFields) -> String? {
            HTTPField.Name(key).flatMap { carrier[$0] }
        }
    }
}
