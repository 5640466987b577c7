import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

/// Replays the fuzzers' checked-in corpus (seeds and every input that once broke something) through the checks the
/// libFuzzer targets run (`Fuzz/run.sh`), so a fixed finding stays fixed.
@Suite("Fuzz corpus replay")
struct FuzzCorpusTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz")

    static let targets: [(String, @Sendable (Data) throws -> Void)] = [
        ("operation-data", FuzzChecks.operationData), ("mobile-json", FuzzChecks.mobileJSON), ("qr", FuzzChecks.qr),
        ("oauth-form", FuzzChecks.oauthForm), ("headers", FuzzChecks.headers),
        ("request-json", FuzzChecks.requestJSON), ("device-texts", FuzzChecks.deviceTexts), ("jws", FuzzChecks.jws),
        ("webauthn", FuzzChecks.webAuthn), ("webpush-audit", FuzzChecks.webPushAndAudit),
    ]

    @Test("Every corpus input of every target passes its check", arguments: targets.map(\.0))
    func replay(_ target: String) throws {
        let check = try #require(Self.targets.first { $0.0 == target }?.1)
        let directory = Self.root.appendingPathComponent("corpus/\(target)")
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
        #expect(!files.isEmpty, "no corpus in \(directory.path)")
        for file in files {
            #expect(throws: Never.self, "\(file.lastPathComponent)") { try check(try Data(contentsOf: file)) }
        }
    }
}
