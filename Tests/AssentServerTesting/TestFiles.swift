import Foundation

/// Where this test process keeps its SQLite files: a folder of its own, removed when the process exits (each test
/// run used to leave a hundred files in the temporary directory).
enum TestFiles {
    static let folder: URL = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "assent-tests-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: TestFiles.folder) }
        return folder
    }()

    /// A new path for a SQLite file (its log and index go beside it).
    static func sqlitePath() -> String {
        folder.appendingPathComponent("\(UUID().uuidString).sqlite").path
    }
}
