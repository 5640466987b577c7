import Foundation
import Testing

/// docs/ARCHITECTURE.md against the code: every path and type it names in backticks exists, and every store
/// protocol and API controller the server declares is named in it — so the document cannot quietly fall behind.
@Suite("docs/ARCHITECTURE.md names what exists")
struct ArchitectureDocTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Names the document uses that the package does not declare: Swift's, Foundation's, the dependencies', and
    /// words of SQL and HTTP.
    static let foreign: Set<String> = [
        "AsyncStream", "Codable", "PostgresClient", "RouteCollection", "SQLDatabase", "ServiceGroup", "Allow",
    ]
    /// Paths the server makes at run time, not files of the repository.
    static let runtimePaths: Set<String> = ["assent-data/kek"]

    /// Every file and folder of the repository's sources, tests, benchmarks, docs and scripts, relative to the root.
    static func repositoryPaths() -> Set<String> {
        var paths = Set<String>()
        for top in ["Sources", "Tests", "Benchmarks", "docs", "scripts", ".ci", "Fuzz"] {
            let base = root.appendingPathComponent(top)
            guard let walker = FileManager.default.enumerator(atPath: base.path) else { continue }
            paths.insert(top)
            while let item = walker.nextObject() as? String {
                if item.hasPrefix(".build") || item.contains("/.build") { continue }
                paths.insert("\(top)/\(item)")
            }
        }
        return paths
    }

    /// The Swift source of the package (its targets, tests and benchmarks).
    static func swiftSources() throws -> String {
        var text = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        for path in repositoryPaths() where path.hasSuffix(".swift") {
            text += try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
        }
        return text
    }

    static func declared(in source: String) -> Set<String> {
        var names = Set<String>()
        for match in source.matches(of: /\b(?:struct|enum|class|actor|protocol|typealias|extension)\s+([A-Z]\w*)/) {
            names.insert(String(match.1))
        }
        // Targets (modules) by their names in Package.swift.
        for match in source.matches(of: /name:\s*"([A-Z]\w*)"/) { names.insert(String(match.1)) }
        return names
    }

    @Test("Every path and type the document names exists; every store protocol and controller is named")
    func namesExist() throws {
        let document = try String(
            contentsOf: Self.root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        let tokens = Set(document.matches(of: /`([^`\n]+)`/).map { String($0.1) })
        let paths = Self.repositoryPaths()
        let source = try Self.swiftSources()
        let declared = Self.declared(in: source)

        var checkedPaths = 0
        for token in tokens where token.wholeMatch(of: /[\w.+-]+(\/[\w.+-]*)+/) != nil {
            guard !Self.runtimePaths.contains(token) else { continue }
            checkedPaths += 1
            let path = token.hasSuffix("/") ? String(token.dropLast()) : token
            if path.hasPrefix("../") {
                #expect(
                    FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(path).path),
                    "\(token) is not beside the repository")
                continue
            }
            #expect(paths.contains { $0 == path || $0.hasSuffix("/" + path) }, "no file or folder \(token)")
        }
        #expect(checkedPaths > 15, "the scan finds the document's paths")

        var checkedTypes = 0
        for token in tokens {
            // A type, or a member of one (`AssentError.mobileTokenCode`): the type must exist.
            guard let match = token.wholeMatch(of: /([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)(\.\w+)?/) else { continue }
            let name = String(match.1)
            guard !Self.foreign.contains(name) else { continue }
            checkedTypes += 1
            #expect(declared.contains(name), "\(token): no type \(name) in the package")
        }
        #expect(checkedTypes > 100, "the scan finds the document's types")

        // The lists the document keeps are whole.
        let server = Self.root.appendingPathComponent("Sources/AssentServer")
        var serverSource = ""
        for path in paths where path.hasPrefix("Sources/AssentServer/") && path.hasSuffix(".swift") {
            serverSource += try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
        }
        #expect(FileManager.default.fileExists(atPath: server.path))
        let stores = Set(serverSource.matches(of: /protocol\s+(\w+Store|ReplayGuard)\b/).map { String($0.1) })
        let controllers = Set(serverSource.matches(of: /struct\s+(\w+Controller)\b/).map { String($0.1) })
        #expect(stores.count > 20 && controllers.count > 15)
        for name in stores.union(controllers).sorted() where !tokens.contains(name) {
            Issue.record("docs/ARCHITECTURE.md does not name \(name)")
        }
    }

    /// A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens.
    static func anchor(_ heading: String) -> String {
        String(
            heading.lowercased().unicodeScalars.compactMap { scalar -> Character? in
                if scalar == " " { return "-" }
                if scalar == "-" || scalar == "_" || CharacterSet.alphanumerics.contains(scalar) {
                    return Character(scalar)
                }
                return nil
            })
    }

    @Test("Every link between the README and the guides reaches a file, and a heading where it names one")
    func linksResolve() throws {
        var documents = ["README.md", "Benchmarks/README.md"]
        for name in try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("docs").path)
        where name.hasSuffix(".md") {
            documents.append("docs/\(name)")
        }
        var checked = 0
        for document in documents {
            let url = Self.root.appendingPathComponent(document)
            let text = try String(contentsOf: url, encoding: .utf8)
            for match in text.matches(of: /\]\(([^)\s]+)\)/) {
                let link = String(match.1)
                guard !link.hasPrefix("http"), !link.hasPrefix("mailto:") else { continue }
                let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let target =
                    parts[0].isEmpty ? url : url.deletingLastPathComponent().appendingPathComponent(String(parts[0]))
                checked += 1
                guard FileManager.default.fileExists(atPath: target.path) else {
                    Issue.record("\(document): \(link) reaches no file")
                    continue
                }
                guard parts.count == 2, target.pathExtension == "md" else { continue }
                let headings = try String(contentsOf: target, encoding: .utf8).split(separator: "\n")
                    .filter { $0.hasPrefix("#") }
                    .map { Self.anchor($0.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)) }
                #expect(headings.contains(String(parts[1])), "\(document): \(link) names no heading of \(parts[0])")
            }
        }
        #expect(checked > 30, "the scan finds the links")
    }
}
