import Foundation
import Testing

/// Services get exactly what they use: the composition root (``Services``) builds each one once with its narrow
/// store (`let store: any OperationStore & ActivationStore`), the clock, the auditor, the settings it reads and the
/// services it calls, so its initializer lists its dependencies and its type says what it may touch. Only the
/// composition root (the application, its bootstrap, the environment, ``Services``) sees the whole configuration.
@Suite("Services get explicit dependencies and reach the store through their narrow protocols")
struct StoreBoundaryTests {
    static let compositionRoot: Set<String> = [
        "AssentServerApplication.swift", "ServerBootstrap.swift", "ServerEnvironment.swift", "Services.swift",
    ]

    /// A service, factor, limiter… built with labelled arguments.
    nonisolated(unsafe) static let construction = /\b[A-Z]\w*(?:Service|Factor|Limiter|Revocation|Authenticator)\(\w+:/

    static func sources() throws -> [(path: String, name: String, text: String)] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/AssentServer")
        let walker = try #require(FileManager.default.enumerator(atPath: root.path))
        var files: [(String, String, String)] = []
        while let path = walker.nextObject() as? String {
            guard path.hasSuffix(".swift") else { continue }
            let text = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
            files.append((path, URL(fileURLWithPath: path).lastPathComponent, text))
        }
        return files
    }

    @Test("No service holds the environment, reaches its whole store, or builds another service")
    func explicitDependencies() throws {
        let files = try Self.sources()
        var declared = 0
        for (path, name, text) in files {
            declared += text.matches(of: /let store:\s*(\n\s*)?any \w+Store/).count
            guard !Self.compositionRoot.contains(name) else { continue }
            for match in text.matches(of: /environment\.store\.(\w+)/) {
                Issue.record("\(path): \(match.0) — go through the service's narrow `store`")
            }
            for match in text.matches(of: /(let|var) \w+: ServerEnvironment/) {
                Issue.record("\(path): \(match.0) — take what is used, from the composition root")
            }
            // A service is built once, in `Services`; nothing builds one per request.
            for match in text.matches(of: Self.construction) {
                Issue.record("\(path): \(match.0) — services are built in the composition root (Services.swift)")
            }
        }
        #expect(
            files.count > 150 && declared > 40, "the scan reads the services (\(files.count) files, \(declared) stores)"
        )
    }

    @Test("The scan finds what it forbids")
    func scanBites() {
        #expect("let environment: ServerEnvironment".contains(/(let|var) \w+: ServerEnvironment/))
        #expect(
            "OperationService(environment: e)".contains(Self.construction))
        #expect(
            "RateLimiter(store: s, clock: c)".contains(Self.construction))
        #expect(
            !"LoginFlow.SecondFactor(provider: p)".contains(Self.construction))
    }
}
