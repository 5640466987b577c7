import AssentModel
import Foundation

/// What the phone's sign-in request says about the sign-in it asks about: the site or application, the browser and
/// system (read from the browser's `User-Agent`), the address it came from and the time — e.g. "Sign in to Example
/// Bank — Chrome on macOS — 203.0.113.7 — 14:02 UTC". Shown as the request's attributes and signed with it (a note
/// in the operation data), so the person can tell a sign-in they did not start.
struct LoginContext: Sendable, Equatable {
    var site: String
    var browser: String?
    var address: String?
    var at: Date

    init(site: String, userAgent: String?, address: String?, at: Date) {
        self.site = site
        browser = userAgent.flatMap(Self.describe)
        self.address = address.flatMap { $0.count <= 64 && !$0.isEmpty ? $0 : nil }
        self.at = at
    }

    /// `HH:mm UTC` (the server does not know the person's time zone).
    var time: String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.hour, .minute], from: at)
        return String(format: "%02d:%02d UTC", parts.hour ?? 0, parts.minute ?? 0)
    }

    /// One line: the browser and system, the address, the time.
    var line: String { [browser, address, time].compactMap { $0 }.joined(separator: " — ") }

    /// The request's attributes, labelled.
    var attributes: [OperationAttribute] {
        var rows: [(String, String, String)] = [("login.site", "Site", site)]
        if let browser { rows.append(("login.browser", "Browser", browser)) }
        if let address { rows.append(("login.address", "Address", address)) }
        rows.append(("login.time", "Time", time))
        return rows.map { id, label, value in
            var attribute = OperationAttribute(type: "KEY_VALUE", id: id).with(label: label)
            attribute.value = value
            return attribute
        }
    }

    /// "Chrome on macOS" from a `User-Agent`: the browser (Edge, Opera, Firefox, Chrome, Safari) and the system
    /// (Windows, macOS, iOS, iPadOS, Android, ChromeOS, Linux) as far as they can be told; `nil` when neither can.
    static func describe(_ userAgent: String) -> String? {
        let agent = userAgent.prefix(512)
        func has(_ token: String) -> Bool { agent.contains(token) }
        let browser: String? =
            if has("Edg/") || has("EdgA/") || has("EdgiOS/") { "Edge" } else if has("OPR/") || has("Opera") {
                "Opera"
            } else if has("Firefox/") || has("FxiOS/") {
                "Firefox"
            } else if has("Chrome/") || has("CriOS/") || has("Chromium/") {
                "Chrome"
            } else if has("Safari/") && has("Version/") { "Safari" } else { nil }
        let system: String? =
            if has("iPad") { "iPadOS" } else if has("iPhone") || has("iPod") { "iOS" } else if has("Android") {
                "Android"
            } else if has("CrOS") { "ChromeOS" } else if has("Windows") {
                "Windows"
            } else if has("Mac OS X") || has("Macintosh") { "macOS" } else if has("Linux") { "Linux" } else { nil }
        switch (browser, system) {
        case (let browser?, let system?): return "\(browser) on \(system)"
        case (let browser?, nil): return browser
        case (nil, let system?): return "A browser on \(system)"
        case (nil, nil): return nil
        }
    }
}
