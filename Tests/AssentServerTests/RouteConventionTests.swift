import Foundation
import Testing

/// The server's routes are written one way: path parameters as `{name}` (never `:name`), and every API controller,
/// page and asset group adds its routes with `addRoutes(to:)`.
@Suite("Routes are written one way")
struct RouteConventionTests {
    @Test("Path parameters are {name}; routes are added with addRoutes(to:)")
    func oneWay() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/AssentServer")
        let walker = try #require(FileManager.default.enumerator(atPath: sources.path))
        var files = 0
        var adders = 0
        while let path = walker.nextObject() as? String {
            guard path.hasSuffix(".swift") else { continue }
            files += 1
            let text = try String(contentsOf: sources.appendingPathComponent(path), encoding: .utf8)
            for match in text.matches(of: /"[^"\n]*\/:[A-Za-z]+[^"\n]*"/) {
                Issue.record("\(path): \(match.0) writes a path parameter as :name, not {name}")
            }
            for match in text.matches(of: /func register\w*\(on router/) {
                Issue.record("\(path): \(match.0) — routes are added with addRoutes(to:)")
            }
            adders += text.matches(of: /func add\w*Routes\(to:?\s/).count
        }
        #expect(files > 150 && adders > 30, "the scan reads the server's sources")
    }

    @Test("No page file reaches a store: the pages call services, as the API's controllers do")
    func pagesCallServices() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/AssentServer")
        var pages = 0
        for folder in ["Web", "Console", "BrowserApproval"] {
            let directory = sources.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
            where name.hasSuffix(".swift") && name.contains("Pages") {
                pages += 1
                let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
                for match in text.matches(of: /\w+\.store\.\w+|environment\.store\b/) {
                    Issue.record("\(folder)/\(name): \(match.0) — a page calls a service, never a store")
                }
            }
        }
        #expect(pages > 12, "the scan finds the page files")
    }

    @Test("Every page is a named handler; the console's scopes are route groups")
    func pagesAreHandlers() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/AssentServer")
        var files = 0
        var handlers = 0
        for folder in ["Console", "Web", "BrowserApproval"] {
            let directory = sources.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
            where name.hasSuffix(".swift") {
                files += 1
                let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
                // A route whose body is a closure, rather than `use:` a named handler.
                for match in text.matches(of: /\.(get|post|put|patch|delete|head)\([^()\n]*\)\s*\{/) {
                    Issue.record("\(folder)/\(name): \(match.0) — a page route uses a named handler")
                }
                for match in text.matches(of: /\bscope:\s*(\.\w+|nil)/) {
                    Issue.record("\(folder)/\(name): \(match.0) — a scope is a requiring(_:) group, not an argument")
                }
                handlers += text.matches(of: /@Sendable func \w+\(_ request: Request, context: \w+Context\)/).count
            }
        }
        #expect(files > 25 && handlers > 80, "the scan finds the page files and their handlers (\(files), \(handlers))")
    }
}
