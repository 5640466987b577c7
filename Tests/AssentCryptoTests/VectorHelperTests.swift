import Foundation
import Testing

@Suite("The vector helper itself")
struct VectorHelperTests {
    static func temporaryDirectory(with files: [String: String]) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("assent-vectors-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (name, contents) in files {
            try Data(contents.utf8).write(to: directory.appendingPathComponent(name))
        }
        return directory
    }

    @Test("A missing vector file fails the run")
    func missingFile() throws {
        let directory = try Self.temporaryDirectory(with: [:])
        defer { try? FileManager.default.removeItem(at: directory) }
        withKnownIssue {
            Vectors.run("self-test-missing.json", expected: 1, as: InputOutput.self, from: directory) { _ in }
        }
    }

    @Test("An empty vector file fails the run")
    func emptyFile() throws {
        let directory = try Self.temporaryDirectory(with: ["self-test-empty.json": #"{"data": []}"#])
        defer { try? FileManager.default.removeItem(at: directory) }
        withKnownIssue {
            Vectors.run("self-test-empty.json", expected: 0, as: InputOutput.self, from: directory) { _ in }
        }
    }

    @Test("A failing entry or a count other than the expected one fails the run")
    func failingEntryAndCount() throws {
        let entry = #"{"input": {"a": "1"}, "output": {"b": "2"}}"#
        let directory = try Self.temporaryDirectory(with: ["self-test-two.json": "{\"data\": [\(entry), \(entry)]}"])
        defer { try? FileManager.default.removeItem(at: directory) }
        withKnownIssue {
            Vectors.run("self-test-two.json", expected: 2, as: InputOutput.self, from: directory) { vector in
                try require(try vector.output("b"), "3", "b")
            }
        }
        withKnownIssue {
            Vectors.run("self-test-two.json", expected: 3, as: InputOutput.self, from: directory) { _ in }
        }
        Vectors.run("self-test-two.json", expected: 2, as: InputOutput.self, from: directory) { vector in
            try require(try vector.output("b"), "2", "b")
        }
    }
}
