import Foundation

/// Properties checked on every input by the libFuzzer targets in `Fuzz/` and by the corpus replay test, which
/// runs every saved input (including past crashers) through the same checks. Each check returns normally, or throws
/// a ``Violation`` saying which property broke; a crash is a finding too.
public enum FuzzChecks {
    /// A broken property.
    public struct Violation: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// Whatever `input` decodes to as `T` encodes to JSON that decodes again, to an equal value when `same` is given.
    static func roundTripsJSON<T: Codable>(
        _ type: T.Type, _ input: Data, decoder: JSONDecoder = JSONDecoder(), encoder: JSONEncoder = JSONEncoder(),
        same: ((T, T) -> Bool)? = nil
    ) throws {
        guard let value = try? decoder.decode(T.self, from: input) else { return }
        let encoded: Data
        do {
            encoded = try encoder.encode(value)
        } catch {
            throw Violation("A \(T.self) that decoded does not encode: \(error)")
        }
        let again: T
        do {
            again = try decoder.decode(T.self, from: encoded)
        } catch {
            throw Violation("A \(T.self) that decoded was encoded to JSON that does not decode: \(error)")
        }
        if let same, !same(value, again) { throw Violation("A \(T.self) changed on its way through JSON.") }
    }

    /// Whatever `text` parses to is written back to text that parses to an equal value.
    static func roundTrip<Value: Equatable>(
        _ text: String, _ name: String, parse: (String) throws -> Value, write: (Value) -> String
    ) throws {
        guard let value = try? parse(text) else { return }
        let again: Value
        do {
            again = try parse(write(value))
        } catch {
            throw Violation("A \(name) that parsed was written back to text that does not: \(error)")
        }
        guard again == value else { throw Violation("A \(name) changed on its way back to text.") }
    }
}
