import ArgumentParser
import AssentServer
import Foundation
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// `assent serve`'s tracing options: spans of requests, transactions and outbox deliveries exported to an
/// OpenTelemetry collector over OTLP/HTTP when an endpoint is given; nothing is traced otherwise.
struct TracingOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "An OpenTelemetry collector's OTLP/HTTP address (http://collector:4318): export traces there.",
            discussion: """
                Spans go to ADDRESS/v1/traces: each request (method, route pattern, status, request id; never its \
                path or query), each PostgreSQL transaction inside it, each outbox delivery. A request carrying a \
                W3C traceparent continues that trace, and log lines written in a span carry trace_id and span_id. \
                The standard OTEL_* variables (OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_HEADERS, …) apply as well. \
                Env: ASSENT_OTLP_ENDPOINT.
                """))
    var otlpEndpoint: String?
    @Option(help: "How spans are encoded: http/protobuf or http/json. Env: ASSENT_OTLP_PROTOCOL.")
    var otlpProtocol: String?
    @Option(
        help: """
            The share of traces started here that are kept, 0 to 1 (default 1); a request continuing a trace follows \
            its caller's decision. Env: ASSENT_TRACE_SAMPLE_RATIO.
            """)
    var traceSampleRatio: Double?

    /// What was configured: where spans go, how, and how many.
    struct Settings {
        var tracesURL: String
        /// `http/protobuf` or `http/json`.
        var encoding: String
        var ratio: Double
    }

    /// The settings, or nil when no endpoint is configured.
    /// - Throws: a ValidationError naming each setting that is wrong, a line each.
    func settings(environment: [String: String]) throws -> Settings? {
        guard let endpoint = otlpEndpoint ?? environment["ASSENT_OTLP_ENDPOINT"] else { return nil }
        var mistakes: [String] = []
        if let url = URLComponents(string: endpoint), url.scheme == "http" || url.scheme == "https",
            url.host?.isEmpty == false, url.query == nil, url.fragment == nil
        {
        } else {
            mistakes.append("--otlp-endpoint must be an http(s) URL without query or fragment.")
        }
        let encoding = otlpProtocol ?? environment["ASSENT_OTLP_PROTOCOL"] ?? "http/protobuf"
        if !["http/protobuf", "http/json"].contains(encoding) {
            mistakes.append("--otlp-protocol is http/protobuf or http/json.")
        }
        let ratioText = environment["ASSENT_TRACE_SAMPLE_RATIO"]
        let ratio = traceSampleRatio ?? (ratioText == nil ? 1 : ratioText.flatMap(Double.init))
        if ratio.map({ !(0...1).contains($0) }) ?? true {
            mistakes.append("--trace-sample-ratio is a number from 0 to 1.")
        }
        guard mistakes.isEmpty, let ratio else { throw ValidationError(mistakes.joined(separator: "\n")) }
        let base = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        return Settings(tracesURL: base + "/v1/traces", encoding: encoding, ratio: ratio)
    }
}

extension TracingOptions.Settings {
    /// Bootstraps the process's tracer with the OTLP exporter; the service that exports the spans, to run until the
    /// server stopped (it sends what is left then).
    func bootstrap() throws -> any Service {
        var configuration = OTel.Configuration.default
        configuration.serviceName = "assent"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.endpoint = tracesURL
        configuration.traces.otlpExporter.protocol = encoding == "http/json" ? .httpJSON : .httpProtobuf
        configuration.traces.sampler = .parentBasedTraceIDRatio(ratio: ratio) ?? .parentBasedAlwaysOn
        // The exporter's own complaints (a collector that does not answer) as the server's JSON lines, warnings up.
        configuration.diagnosticLogger = .custom(Logger(label: "assent.tracing"))
        configuration.diagnosticLogLevel = .warning
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(backend.factory)
        return backend.service
    }

    /// Adds `trace_id` and `span_id` to log lines written in a span.
    static var logMetadata: Logger.MetadataProvider { OTel.makeLoggingMetadataProvider() }
}
