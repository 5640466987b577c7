import AssentTesting
import Testing

extension Browser {
    /// Expects the element's text to become `expected`: after a click, the next page may still be loading, and the
    /// current one may have the same element.
    func expectText(_ css: String, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let text = try await text(css, becomes: expected)
        #expect(text == expected, "\(css)", sourceLocation: sourceLocation)
    }
}
