import AssentTesting
import Testing

extension Browser {
    /// How many pixels the page is wider than the window: 0 when it does not scroll sideways.
    func sidewaysOverflow() async throws -> Int {
        try await execute("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
            as? Int ?? -1
    }

    /// Expects the element's text to become `expected`: after a click, the next page may still be loading, and the
    /// current one may have the same element.
    func expectText(_ css: String, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let text = try await text(css, becomes: expected)
        #expect(text == expected, "\(css)", sourceLocation: sourceLocation)
    }

    /// How many of the groups (separated by spaces) of each element matching `css` are broken across lines: a key
    /// or a code typed by hand must keep each group whole.
    func brokenGroups(_ css: String) async throws -> Int {
        let broken = try await execute(
            """
            let broken = 0;
            document.querySelectorAll('\(css)').forEach(el => {
              const text = el.firstChild; let at = 0;
              for (const group of text.textContent.split(' ')) {
                const range = document.createRange();
                range.setStart(text, at); range.setEnd(text, at + group.length);
                if (group.length > 0 && range.getClientRects().length > 1) broken += 1;
                at += group.length + 1;
              }
            });
            return broken;
            """)
        return broken as? Int ?? -1
    }

    /// Opens the console at `base` and signs in with the operator API key `apiKey` (a server that allows API-key
    /// sign-in), waiting for the dashboard.
    func signInToConsole(_ base: String, apiKey: String) async throws {
        try await open("\(base)/console")
        try await type("#apiKey", apiKey)
        try await click("#submit")
        try await expectText("h1", "Dashboard")
    }

    /// Signs out of the console and waits for the sign-in page: the form's navigation must be over before the next
    /// `open`, or it lands after it and replaces the page opened.
    func signOutOfConsole() async throws {
        try await clickLoadingPage("#sign-out")
        try await expectText("h1", "Sign in to the console")
    }

    /// Signs out of the hosted sign-in pages and waits for the sign-in form. The signed-in page is titled "Sign in" as
    /// well, so its title says nothing: an `open` before the form's navigation is over cancels the sign-out, and the
    /// browser stays signed in.
    func signOutOfHostedPages() async throws {
        try await clickLoadingPage("#logout")
        _ = try await element("#userId")
        try await expectText("h1", "Sign in")
    }

    /// Expects the element's text to come to contain `part`, waiting as `expectText(_:_:)` does.
    func expectText(_ css: String, containing part: String, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let text = try await text(css, until: { $0.contains(part) })
        #expect(text.contains(part), "\(css): \(text)", sourceLocation: sourceLocation)
    }

    /// Expects the element's text to come to start with `prefix`, waiting as `expectText(_:_:)` does.
    func expectText(_ css: String, prefix: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let text = try await text(css, until: { $0.hasPrefix(prefix) })
        #expect(text.hasPrefix(prefix), "\(css): \(text)", sourceLocation: sourceLocation)
    }

    /// Shows the page on a phone's screen (kept as the screenshot `name`), expects the page's card to keep a margin
    /// from the screen's edges, and returns to the desktop window.
    func expectPhoneLayout(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await resize(Browser.phone)
        try await screenshot(name)
        let left = try await execute("return document.querySelector('main').getBoundingClientRect().left;")
        let margin = (left as? Double) ?? (left as? Int).map(Double.init) ?? 0
        #expect(margin >= 8, "the card starts \(margin) px from the edge", sourceLocation: sourceLocation)
        try await resize(Browser.desktop)
    }
}
