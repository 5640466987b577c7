import AssentCrypto
import Foundation
import HTTPTypes
import Hummingbird
import Mustache
import NIOCore
import ServiceLifecycle
import Synchronization

/// The server-rendered pages a person sees: Mustache templates shipped as resources (`Resources/web`), HTML-escaped
/// by default, answered with headers that keep them out of caches and frames and allow only this server's own
/// style sheet and script (no inline code), plus the static assets they use.
struct WebPages: Sendable {
    let library: MustacheLibrary

    /// The templates and assets, read once per process.
    static let shared = WebPages()

    /// The assets served under `/web/assets/`, with their content types.
    static let assets: [String: String] = [
        "assent.css": "text/css; charset=utf-8",
        "wait.js": "text/javascript; charset=utf-8",
        "console.js": "text/javascript; charset=utf-8",
        "passkey.js": "text/javascript; charset=utf-8",
        "browser-push.js": "text/javascript; charset=utf-8",
        "approver-worker.js": "text/javascript; charset=utf-8",
        "icon.svg": "image/svg+xml",
    ]

    private init() {
        var library = MustacheLibrary()
        for template in PageTemplate.allCases {
            let name = template.rawValue
            let text = String(decoding: Self.resource("\(name).mustache"), as: UTF8.self)
            do {
                try library.register(text, named: name)
            } catch {
                preconditionFailure("The bundled template \(name) does not parse: \(error)")
            }
        }
        self.library = library
    }

    /// A bundled file of `Resources/web`.
    static func resource(_ name: String) -> Data {
        guard let directory = Bundle.module.url(forResource: "web", withExtension: nil),
            let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path)
        else { preconditionFailure("The bundled web resource \(name) is missing: the build is broken.") }
        return data
    }

    /// The headers of every page: never cached, never framed, no inline script or style, no referrer. Forms post
    /// to this server only.
    static let securityHeaders = securityHeaders(formTargets: [])

    /// The same headers, with forms (and the redirects that follow them) also allowed to reach the origins in
    /// `formTargets`: a page whose form ends at a relying party's return URL must name that origin, or the browser
    /// blocks the redirect.
    static func securityHeaders(formTargets: [String]) -> HTTPFields {
        [
            .cacheControl: "no-store",
            .contentSecurityPolicy:
                "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; connect-src 'self'; "
                + "form-action \((["'self'"] + formTargets).joined(separator: " ")); frame-ancestors 'none'; "
                + "base-uri 'none'",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("X-Frame-Options")!: "DENY",
            HTTPField.Name("Referrer-Policy")!: "no-referrer",
        ]
    }

    /// The origin of an absolute http(s) URL as a CSP source (`https://bank.example:8443`); `nil` for anything that
    /// is not plainly one.
    static func origin(of url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty,
            host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-[]:".contains($0)) })
        else { return nil }
        // An IPv6 literal keeps (or gets back) its brackets.
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let literal = bare.contains(":") ? "[\(bare.lowercased())]" : bare.lowercased()
        return "\(scheme)://\(literal)" + (components.port.map { ":\($0)" } ?? "")
    }

    /// `content`'s template filled with it over `frame` as a complete page; its forms may also reach
    /// `formTargets`.
    func page<Frame: Sendable, Content: PageContext>(
        _ content: Content, frame: Frame, status: HTTPResponse.Status = .ok, formTargets: [String] = []
    ) -> Response {
        let template = Content.template.rawValue
        let frame = (frame as? any TranslatedFrame).map { Self.translated($0) as? Frame ?? frame } ?? frame
        guard let html = library.render(FramedPage(frame: frame, content: content), withTemplate: template) else {
            preconditionFailure("The template \(template) is not bundled.")
        }
        var headers = formTargets.isEmpty ? Self.securityHeaders : Self.securityHeaders(formTargets: formTargets)
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// A translated frame's sentences in its language.
    private static func translated<T: TranslatedFrame>(_ frame: T) -> Any { frame.translated() }

    /// A page that says what went wrong and where to go on.
    func error(_ status: HTTPResponse.Status, _ message: String, next: String? = "/login") -> Response {
        page(
            ErrorPage(detail: message, next: next),
            frame: LayoutFrame(title: "Something went wrong", application: "Assent", language: Languages.choose()),
            status: status)
    }

    /// An event stream that sends `done` once the operation is no longer pending (or after 15 minutes), for a page
    /// that waits for a phone's answer. Woken by the one event stream for the operation's user, re-checked every
    /// 15 s (which also keeps proxies from closing the connection).
    static func waitForAnswer(
        _ operations: OperationService, events: EventHub, operationId: String, userId: String?
    ) -> Response {
        let subscription = userId.map { events.subscribe(userId: $0) }
        return eventStream(subscription: subscription, state: ()) { writer, _, pause in
            if try await operations.get(id: operationId).status != .pending {
                try await writer.write(ByteBuffer(string: "event: done\ndata: answered\n\n"))
                return false
            }
            await pause(upTo: subscription == nil ? .seconds(3) : .seconds(15))
            try await writer.write(ByteBuffer(string: ": waiting\n\n"))
            return true
        }
    }

    /// A page's event stream: `step` writes what is new (keeping what it needs in `state`) and waits with its
    /// ``StreamPause`` (woken early by the subscription), and runs again while it returns `true`, for at most 15
    /// minutes (the browser reconnects after 3 s). A server shutting down ends the stream at once, cleanly, so that
    /// it can stop; the subscription ends with the stream.
    static func eventStream<State: Sendable>(
        subscription: EventHub.Subscription?, state initial: State,
        _ step: @escaping @Sendable (inout any ResponseBodyWriter, inout State, StreamPause) async throws -> Bool
    ) -> Response {
        let deadline = ContinuousClock.now + .seconds(900)
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/event-stream", .cacheControl: "no-store",
                HTTPField.Name("X-Accel-Buffering")!: "no",
            ],
            body: ResponseBody { writer in
                defer { subscription?.cancel() }
                let pause = StreamPause(wakeup: subscription?.wakeup ?? Wakeup())
                try await writer.write(ByteBuffer(string: "retry: 3000\n\n"))
                var state = initial
                try await withTaskCancellationOrGracefulShutdownHandler {
                    while ContinuousClock.now < deadline, !Task.isCancelled, !pause.isStopping,
                        try await step(&writer, &state, pause)
                    {}
                } onCancelOrGracefulShutdown: {
                    pause.stop()
                }
                try await writer.finish(nil)
            })
    }

    /// A 303 to `location` (after a form: the browser loads the next page with GET).
    static func redirect(_ location: String, cookies: [String] = []) -> Response {
        var headers = securityHeaders
        headers[.location] = location
        for cookie in cookies { headers.append(HTTPField(name: .setCookie, value: cookie)) }
        return Response(status: .seeOther, headers: headers)
    }

    func addRoutes(to router: Router<AssentRequestContext>) {
        router.get("web/assets/{name}", use: assetFile)
        // Browsers ask for it whatever the page links: the icon, rather than a 404 logged for every visit.
        router.get("favicon.ico", use: favicon)
    }

    /// `GET /web/assets/{name}`: a bundled script, style sheet or image.
    @Sendable func assetFile(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let name = try context.parameters.require("name")
        guard Self.assets[name] != nil else { throw AssentServerError.notFound("No such asset.") }
        return Self.asset(name)
    }

    @Sendable func favicon(_ request: Request, context: AssentRequestContext) async throws -> Response {
        Self.asset("icon.svg")
    }

    /// A bundled asset of ``assets`` as an answer that caches for an hour.
    static func asset(_ name: String) -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: assets[name] ?? "application/octet-stream", .cacheControl: "public, max-age=3600",
                HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            ],
            body: .init(byteBuffer: ByteBuffer(bytes: resource(name))))
    }
}

/// How an event stream (a page's or a device's) waits between looks: until its subscription wakes it, the time is
/// up, or the server shuts down (then ``isStopping`` is set and every later wait returns at once).
struct StreamPause: Sendable {
    let wakeup: Wakeup
    private let stopping = StopFlag()

    /// Waits until woken, for at most `timeout`.
    func callAsFunction(upTo timeout: Duration) async {
        guard !stopping.isSet else { return }
        await wakeup.wait(upTo: timeout)
    }

    var isStopping: Bool { stopping.isSet }

    /// Ends the stream: sets ``isStopping`` and wakes the wait.
    func stop() {
        stopping.set()
        wakeup.signal()
    }
}

/// Set once, read from a stream's loop.
private final class StopFlag: Sendable {
    private let value = Atomic(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}
