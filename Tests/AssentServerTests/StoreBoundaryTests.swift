import Foundation
import Testing

/// The narrow store protocols are the boundary: a service reaches the database only through the composition it
/// declares (`var store: any OperationStore & ActivationStore { environment.store }`), so its type says what it may
/// touch. Only the composition root (the application, its bootstrap, the environment) and the whole-store
/// transaction (`inOneCommit`, which hands the body a store in one commit) see the whole.
@Suite("Services reach the store through their narrow protocols")
struct StoreBoundaryTests {
    static let compositionRoot: Set<String> = [
        "AssentServerApplication.swift", "ServerBootstrap.swift", "ServerEnvironment.swift",
    ]

    @Test("No `environment.store.` call outside the composition root, but a whole-store transaction")
    func narrowStores() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/AssentServer")
        let walker = try #require(FileManager.default.enumerator(atPath: sources.path))
        var files = 0
        var declared = 0
        while let path = walker.nextObject() as? String {
            guard path.hasSuffix(".swift") else { continue }
            files += 1
            let name = URL(fileURLWithPath: path).lastPathComponent
            let text = try String(contentsOf: sources.appendingPathComponent(path), encoding: .utf8)
            declared += text.matches(of: /var store:\s*(\n\s*)?any \w+Store/).count
            guard !Self.compositionRoot.contains(name) else { continue }
            for match in text.matches(of: /environment\.store\.(\w+)/) where match.1 != "inOneCommit" {
                Issue.record("\(path): \(match.0) — go through the service's narrow `store`")
            }
        }
        #expect(files > 150 && declared > 30, "the scan reads the services (\(files) files, \(declared) stores)")
    }
}
