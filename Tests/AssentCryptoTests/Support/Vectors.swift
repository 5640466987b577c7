import Foundation
import Testing

/// Loads the published test vectors from `../shared/vectors` (or `$ASSENT_VECTORS_DIR`) and runs every entry.
enum Vectors {
    struct Missing: Error, CustomStringConvertible {
        var description: String
    }

    static var directory: URL {
        if let path = ProcessInfo.processInfo.environment["ASSENT_VECTORS_DIR"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        // Tests/AssentCryptoTests/Support/Vectors.swift → package root → ../shared/vectors
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("shared/vectors")
    }

    /// Decodes the array under `key` in the JSON file at `path` (relative to the vectors directory).
    static func load<Entry: Decodable>(
        _ path: String, key: String, as type: Entry.Type, from directory: URL = Vectors.directory
    ) throws -> [Entry] {
        let url = directory.appendingPathComponent(path)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw Missing(description: "vector file \(url.path) is missing")
        }
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let array = object[key] as? [Any]
        else {
            throw Missing(description: "vector file \(path) has no array \(key)")
        }
        return try JSONDecoder().decode([Entry].self, from: JSONSerialization.data(withJSONObject: array))
    }

    /// Runs `check` on every entry of a vector file, records each failure with the entry's index, prints
    /// `FILE: N/N vectors passed`, and fails unless all `expected` entries are present and pass.
    static func run<Entry: Decodable>(
        _ path: String,
        key: String = "data",
        expected: Int,
        as type: Entry.Type,
        from directory: URL = Vectors.directory,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ check: (Entry) throws -> Void
    ) {
        let entries: [Entry]
        do {
            entries = try load(path, key: key, as: type, from: directory)
        } catch {
            Issue.record("\(path): cannot load vectors: \(error)", sourceLocation: sourceLocation)
            return
        }
        var passed = 0
        for (index, entry) in entries.enumerated() {
            do {
                try check(entry)
                passed += 1
            } catch {
                Issue.record("\(path) vector #\(index): \(error)", sourceLocation: sourceLocation)
            }
        }
        print("\(path): \(passed)/\(entries.count) vectors passed")
        #expect(!entries.isEmpty, "\(path) holds no vectors", sourceLocation: sourceLocation)
        #expect(
            entries.count == expected, "\(path) holds \(entries.count) vectors, expected \(expected)",
            sourceLocation: sourceLocation)
        #expect(passed == entries.count, sourceLocation: sourceLocation)
    }
}

/// An entry of the PowerAuth vector files: string inputs and string outputs.
struct InputOutput: Decodable {
    let input: [String: String]
    let output: [String: String]

    func input(_ key: String) throws -> String { try Self.value(input, key) }
    func output(_ key: String) throws -> String { try Self.value(output, key) }
    func inputData(_ key: String) throws -> Data { try Self.base64(input(key), key) }
    func outputData(_ key: String) throws -> Data { try Self.base64(output(key), key) }

    static func value(_ map: [String: String], _ key: String) throws -> String {
        guard let value = map[key] else { throw Vectors.Missing(description: "field \(key) is missing") }
        return value
    }

    static func base64(_ text: String, _ key: String) throws -> Data {
        guard let data = Data(base64Encoded: text) else {
            throw Vectors.Missing(description: "field \(key) is not Base64")
        }
        return data
    }
}

/// A mismatch between a computed and a published value.
struct Mismatch: Error, CustomStringConvertible {
    var description: String
}

/// Throws unless `actual == expected`, so a vector's failure names the field.
func require<T: Equatable>(_ actual: T, _ expected: T, _ what: String) throws {
    guard actual == expected else {
        throw Mismatch(description: "\(what): got \(actual), expected \(expected)")
    }
}

extension Data {
    init(hex: String) {
        var bytes = [UInt8]()
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        self.init(bytes)
    }
}
