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
}
