import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A real browser we did not write: headless Chromium driven over W3C WebDriver by Debian's `chromedriver`
/// (packages `chromium` and `chromium-driver`; `.ci/run` installs them). Each step can be kept as a screenshot.
public final class Browser: Sendable {
    public struct Missing: Error, CustomStringConvertible {
        public var description: String {
            "chromium or chromedriver is not installed: apt-get install chromium chromium-driver (.ci/run does)."
        }
    }

    /// Where screenshots go.
    public let artefacts: URL
    private let driver: URL
    private let session: String
    private let process: Process
    private let log: URL

    /// One browser at a time per test process: Chromium is heavy, and on a small machine several at once starve
    /// the tests that run beside them.
    private static let slot = OneAtATime()
    private let holdsSlot = Mutex(true)
    /// Whether ``quit()`` ran: a second call must not reach the port, which by then may be another chromedriver's.
    private let ended = Mutex(false)

    /// The W3C key of an element reference.
    private static let elementKey = "element-6066-11e4-a52e-4f735466cecf"

    /// Starts chromedriver on a free loopback port and opens a headless Chromium window; screenshots go to
    /// `artefacts` (created if missing).
    public init(artefacts: URL) async throws {
        guard let chromedriver = Spawn.program("chromedriver"), let chromium = Spawn.program("chromium") else {
            throw Missing()
        }
        await Self.slot.acquire()
        var started = false
        defer { if !started { Self.slot.release() } }
        self.artefacts = artefacts
        try FileManager.default.createDirectory(at: artefacts, withIntermediateDirectories: true)
        // A chromedriver that has not announced its port within 15 s (seen once on a loaded machine: it printed its
        // banner and nothing more) is killed and started again, up to three times.
        var launched: (process: Process, log: URL, port: Int)?
        var logs: [String] = []
        for _ in 0..<3 where launched == nil {
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("chromedriver-\(UUID().uuidString)")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: chromedriver)
            process.arguments = ["--port=0"]
            process.standardOutput = try FileHandle(forWritingTo: log)
            process.standardError = FileHandle.nullDevice
            try process.run()
            for _ in 0..<300 where launched == nil {
                try await Task.sleep(for: .milliseconds(50))
                let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                if let range = text.range(of: "started successfully on port "),
                    let port = Int(text[range.upperBound...].prefix { $0.isNumber })
                {
                    launched = (process, log, port)
                }
            }
            if launched == nil {
                kill(process.processIdentifier, SIGKILL)
                logs.append((try? String(contentsOf: log, encoding: .utf8)) ?? "")
                try? FileManager.default.removeItem(at: log)
            }
        }
        guard let (process, log, port) = launched else {
            throw TestFailure("chromedriver did not start in three tries: \(logs.joined(separator: " | "))")
        }
        self.log = log
        self.process = process
        driver = URL(string: "http://127.0.0.1:\(port)")!
        let capabilities: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "goog:chromeOptions": [
                        "binary": chromium,
                        "args": [
                            "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=900,1400",
                            "--disable-gpu", "--no-first-run", "--disable-extensions",
                        ],
                    ]
                ]
            ]
        ]
        do {
            let created = try await Self.call(driver, "POST", "/session", capabilities)
            guard let id = (created as? [String: Any])?["sessionId"] as? String else {
                throw TestFailure("chromedriver answered no session: \(String(describing: created))")
            }
            session = id
        } catch {
            kill(process.processIdentifier, SIGKILL)
            throw error
        }
        started = true
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: log)
    }

    /// Closes the window and Chromium, and ends chromedriver. Only the first call does anything: once this browser
    /// is gone, its port can belong to the next test's chromedriver, which a second `/shutdown` would end.
    public func quit() async {
        guard
            ended.withLock({ ended in
                defer { ended = true }
                return !ended
            })
        else { return }
        _ = try? await command("DELETE", "")
        _ = try? await Self.call(driver, "GET", "/shutdown", [:])
        stop()
    }

    /// Ends chromedriver for certain (it ignores SIGTERM) and lets the next browser start.
    private func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        releaseSlot()
    }

    private func releaseSlot() {
        if holdsSlot.withLock({ held in
            defer { held = false }; return held
        }) {
            Self.slot.release()
        }
    }

    /// Loads `url` and waits for the page.
    public func open(_ url: String) async throws { _ = try await command("POST", "/url", ["url": url]) }

    /// The current page's address.
    public func url() async throws -> String { try await command("GET", "/url") as? String ?? "" }

    /// The first element matching the CSS selector, waiting up to `seconds` for it to appear.
    @discardableResult
    public func element(_ css: String, seconds: Double = 30) async throws -> String {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            do {
                let found = try await command("POST", "/element", ["using": "css selector", "value": css])
                if let id = (found as? [String: Any])?[Self.elementKey] as? String { return id }
            } catch let error as WebDriverError where error.error == "no such element" {
                if Date() > deadline {
                    throw TestFailure("No element matches \(css) on \(try await url()): \(try await pageText())")
                }
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Whether an element matches the CSS selector now.
    public func exists(_ css: String) async throws -> Bool {
        do {
            _ = try await command("POST", "/element", ["using": "css selector", "value": css])
            return true
        } catch let error as WebDriverError where error.error == "no such element" {
            return false
        }
    }

    /// Types `text` into the element (after clearing it).
    public func type(_ css: String, _ text: String) async throws {
        try await withElement(css) { id in
            _ = try await command("POST", "/element/\(id)/clear")
            _ = try await command("POST", "/element/\(id)/value", ["text": text])
        }
    }

    /// Clicks the element (a button's click submits its form and waits for the next page).
    public func click(_ css: String) async throws {
        try await withElement(css) { _ = try await command("POST", "/element/\($0)/click") }
    }

    /// Clicks a control that loads another page (a form's button, a link) and waits until the browser shows a new
    /// document, loaded. Use it where the next page may say what the current one says (the same title, the same
    /// notice): an expectation would pass on the old page, and an `open` or a click right after would cancel the
    /// navigation under way.
    public func clickLoadingPage(_ css: String, seconds: Double = 60) async throws {
        _ = try await execute("window.assentPageBeforeClick = true;")
        try await click(css)
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            // While the next page loads, the script may find no document to run in: that is not the answer yet.
            let state = try? await execute(
                "return window.assentPageBeforeClick === true ? 'before' : document.readyState;")
            if state as? String == "complete" { return }
            if Date() > deadline {
                throw TestFailure("Clicking \(css) loaded no new page: still \(try await url())")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// The element's rendered text.
    public func text(_ css: String) async throws -> String {
        try await withElement(css) { try await command("GET", "/element/\($0)/text") as? String ?? "" }
    }

    /// The element's text once it is `expected`, waiting up to `seconds` (after a click, the next page may not
    /// have replaced the current one yet, and a page with the same elements would be read instead); the last text
    /// read when it never became `expected`.
    public func text(_ css: String, becomes expected: String, seconds: Double = 60) async throws -> String {
        try await text(css, until: { $0 == expected }, seconds: seconds)
    }

    /// The element's text once `accepts` holds for it, waiting up to `seconds` (as `text(_:becomes:seconds:)`); the
    /// last text read when it never held.
    public func text(_ css: String, until accepts: (String) -> Bool, seconds: Double = 60) async throws -> String {
        let deadline = Date().addingTimeInterval(seconds)
        var current = ""
        while true {
            do {
                current = try await text(css)
            } catch let error as WebDriverError where error.isStale {
                current = ""
            }
            if accepts(current) || Date() > deadline { return current }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// An attribute of the element.
    public func attribute(_ css: String, _ name: String) async throws -> String? {
        try await withElement(css) { try await command("GET", "/element/\($0)/attribute/\(name)") as? String }
    }

    /// Runs `body` with the element matching `css`, looking it up again while a page that replaced the one it was
    /// found on is loading (a stale reference).
    private func withElement<T>(_ css: String, _ body: (String) async throws -> T) async throws -> T {
        for attempt in 1... {
            do {
                return try await body(try await element(css))
            } catch let error as WebDriverError where error.isStale && attempt < 50 {
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        preconditionFailure("unreachable")
    }

    /// Runs `script` (a function body) in the page and returns its result.
    @discardableResult
    public func execute(_ script: String) async throws -> Any? {
        try await command("POST", "/execute/sync", ["script": script, "args": [Any]()])
    }

    /// Runs `script` (a function body whose last argument is a callback) in the page and returns what it passed to
    /// the callback.
    @discardableResult
    public func executeAsync(_ script: String) async throws -> Any? {
        try await command("POST", "/execute/async", ["script": script, "args": [Any]()])
    }

    /// Runs a command of Chromium's DevTools protocol (through chromedriver) and returns its result.
    @discardableResult
    public func devTools(_ method: String, _ parameters: [String: Any] = [:]) async throws -> Any? {
        try await command("POST", "/goog/cdp/execute", ["cmd": method, "params": parameters])
    }

    /// The whole page's rendered text.
    public func pageText() async throws -> String { try await text("body") }

    /// The cookies the browser holds for the current page, by name.
    public func cookies() async throws -> [String: [String: Any]] {
        let list = try await command("GET", "/cookie") as? [[String: Any]] ?? []
        var byName: [String: [String: Any]] = [:]
        for cookie in list { if let name = cookie["name"] as? String { byName[name] = cookie } }
        return byName
    }

    /// Resizes the window (in CSS pixels): ``phone`` for a phone's screen, ``desktop`` for the default.
    public func resize(_ size: (width: Int, height: Int)) async throws {
        _ = try await command("POST", "/window/rect", ["width": size.width, "height": size.height])
    }

    /// Makes the pages run in the time zone `identifier` (e.g. `Europe/Prague`), as a person's browser there does
    /// (Chromium's DevTools protocol through chromedriver).
    public func timeZone(_ identifier: String) async throws {
        try await devTools("Emulation.setTimezoneOverride", ["timezoneId": identifier])
    }

    /// Adds Chromium's virtual authenticator (WebDriver's WebAuthn extension): a platform authenticator (CTAP2,
    /// `internal`) that keeps discoverable credentials and verifies its user without asking. Returns its id.
    public func addVirtualAuthenticator() async throws -> String {
        let answer = try await command(
            "POST", "/webauthn/authenticator",
            [
                "protocol": "ctap2", "transport": "internal", "hasResidentKey": true, "hasUserVerification": true,
                "isUserConsenting": true, "isUserVerified": true,
            ])
        guard let id = answer as? String else {
            throw TestFailure("chromedriver made no authenticator: \(answer ?? "")")
        }
        return id
    }

    /// Whether the virtual authenticator answers at once, as a person touching it would (`true`, the default), or
    /// leaves requests waiting, as a person who ignores the browser's passkey suggestion does (Chromium's DevTools
    /// protocol: `WebAuthn.setAutomaticPresenceSimulation`).
    public func virtualPresence(_ authenticator: String, _ present: Bool) async throws {
        try await devTools(
            "WebAuthn.setAutomaticPresenceSimulation", ["authenticatorId": authenticator, "enabled": present])
    }

    /// The credentials the virtual authenticator holds (`credentialId`, `rpId`, `privateKey`, `signCount`, …).
    public func virtualCredentials(_ authenticator: String) async throws -> [[String: Any]] {
        try await command("GET", "/webauthn/authenticator/\(authenticator)/credentials") as? [[String: Any]] ?? []
    }

    /// Replaces a credential of the virtual authenticator with `credential` (e.g. one whose `signCount` went back).
    public func replaceVirtualCredential(_ authenticator: String, _ credential: [String: Any]) async throws {
        guard let id = credential["credentialId"] as? String else { throw TestFailure("a credential has an id") }
        _ = try await command("DELETE", "/webauthn/authenticator/\(authenticator)/credentials/\(id)")
        _ = try await command("POST", "/webauthn/authenticator/\(authenticator)/credential", credential)
    }

    /// A phone's screen, 390 × 844 (an iPhone 12 to 15).
    public static let phone = (width: 390, height: 844)
    /// The window the browser starts with.
    public static let desktop = (width: 900, height: 1400)
    /// A laptop's window, 1280 × 900: the console's pages must fit it.
    public static let wideDesktop = (width: 1280, height: 900)

    /// A PNG of the window, also kept as `<artefacts>/<name>.png`.
    @discardableResult
    public func screenshot(_ name: String) async throws -> Data {
        guard let text = try await command("GET", "/screenshot") as? String, let png = Data(base64Encoded: text)
        else { throw TestFailure("chromedriver returned no screenshot") }
        try png.write(to: artefacts.appendingPathComponent("\(name).png"))
        return png
    }

    /// A PNG of one element (scrolled into view), also kept as `<artefacts>/<name>.png`.
    @discardableResult
    public func screenshot(of css: String, _ name: String) async throws -> Data {
        let text = try await withElement(css) { try await command("GET", "/element/\($0)/screenshot") as? String }
        guard let text, let png = Data(base64Encoded: text) else {
            throw TestFailure("chromedriver returned no screenshot of \(css)")
        }
        try png.write(to: artefacts.appendingPathComponent("\(name).png"))
        return png
    }

    /// A WebDriver error answer.
    public struct WebDriverError: Error, CustomStringConvertible {
        public var error: String
        public var message: String
        public var description: String { "WebDriver \(error): \(message.prefix(300))" }
        /// Whether the element found belongs to a page that another one replaced meanwhile (Chromium says so in
        /// two ways).
        public var isStale: Bool {
            error == "stale element reference" || message.contains("does not belong to the document")
        }
    }

    private func command(_ method: String, _ path: String, _ body: [String: Any] = [:]) async throws -> Any? {
        try await Self.call(driver, method, "/session/\(session)\(path)", body)
    }

    /// One WebDriver call (with AsyncHTTPClient: chromedriver writes headers without a space after the colon,
    /// which URLSession on Linux refuses). Starting Chromium and loading pages take long on a loaded machine.
    private static func call(_ driver: URL, _ method: String, _ path: String, _ body: [String: Any]) async throws
        -> Any?
    {
        var request = HTTPClientRequest(url: driver.absoluteString + path)
        request.method = .RAW(value: method)
        // A connection per command: a kept-alive one that chromedriver closes while a test waits elsewhere would
        // fail the next command (HTTPClientError.remoteConnectionClosed), and a command may not be safe to repeat.
        request.headers.add(name: "Connection", value: "close")
        if method == "POST" {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await AsyncHTTPClient.HTTPClient.shared.execute(request, timeout: .seconds(180))
        let data = Data(try await response.body.collect(upTo: 64 << 20).readableBytesView)
        let answer = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        let value = answer?["value"]
        if response.status.code != 200 {
            let fields = value as? [String: Any]
            throw WebDriverError(
                error: fields?["error"] as? String ?? "unknown error",
                message: fields?["message"] as? String ?? String(decoding: data, as: UTF8.self))
        }
        return value is NSNull ? nil : value
    }
}

/// A process-wide lock that async callers wait for in turn.
final class OneAtATime: Sendable {
    private let state = Mutex<(busy: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                if !state.busy {
                    state.busy = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
