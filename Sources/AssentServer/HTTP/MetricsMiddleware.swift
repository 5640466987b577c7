import Foundation
import Hummingbird
import Prometheus

/// Counts requests and records their duration by route and status, for `/metrics`.
struct MetricsMiddleware: RouterMiddleware {
    typealias Context = AssentRequestContext
    let registry: PrometheusCollectorRegistry

    static var requests: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "assent", subsystem: "http", metricName: "requests", unitName: "total",
            helpText: "HTTP requests by method, route and status.")
    }
    static var duration: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "assent", subsystem: "http", metricName: "request_duration", unitName: "seconds",
            helpText: "HTTP request duration by route.")
    }
    static let buckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1),
    ]

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let route = context.endpointPath ?? "unmatched"
        let labels = [("method", request.method.rawValue), ("route", route), ("status", String(response.status.code))]
        registry.makeCounter(descriptor: Self.requests, labels: labels).increment()
        registry.makeDurationHistogram(descriptor: Self.duration, labels: [("route", route)], buckets: Self.buckets)
            .record(ContinuousClock.now - start)
        return response
    }
}
