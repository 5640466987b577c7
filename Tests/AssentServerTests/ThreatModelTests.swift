import Foundation
import Testing

/// docs/SECURITY.md's threat-model table names, for each attacker and what they may try, the tests that try it; this
/// holds the table to the test suite, so a renamed or removed test cannot leave a row pointing at nothing.
@Suite("The threat model's table names tests that exist")
struct ThreatModelTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("Every Suite.test a row of the table names is a test of that suite")
    func everyNamedTestExists() throws {
        let table = try String(contentsOf: Self.root.appendingPathComponent("docs/SECURITY.md"), encoding: .utf8)
            .split(separator: "\n").filter { $0.hasPrefix("| ") }
        let reference = try Regex(#"`([A-Z][A-Za-z]+Tests)\.([a-zA-Z]+)`"#)
        var sources = ""
        let tests = Self.root.appendingPathComponent("Tests")
        for case let file as URL in FileManager.default.enumerator(at: tests, includingPropertiesForKeys: nil)
            ?? .init()
        where file.pathExtension == "swift" {
            sources += try String(contentsOf: file, encoding: .utf8)
        }
        var named = 0
        for row in table {
            for match in row.matches(of: reference) {
                let (suite, test) = (String(match.output[1].substring ?? ""), String(match.output[2].substring ?? ""))
                named += 1
                // The suite's body holds the test: from `struct Suite` to the next top-level declaration.
                guard let start = sources.range(of: "struct \(suite) ") ?? sources.range(of: "struct \(suite)\n")
                else {
                    Issue.record("\(suite) is not a test suite (named by: \(row.prefix(80)))")
                    continue
                }
                let body = sources[start.upperBound...]
                let end = body.range(of: "\n}\n")?.lowerBound ?? body.endIndex
                #expect(body[..<end].contains("func \(test)("), "\(suite).\(test) is not a test of \(suite)")
            }
        }
        #expect(named >= 30, "the table names \(named) tests")
    }
}
