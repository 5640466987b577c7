import Crypto
import Foundation

/// The hash-based signature counter `ctrData`: 16 bytes, advanced by `c32to16(SHA256(ctrData))`.
public struct HashCounter: Sendable, Hashable {
    /// The 16 counter bytes.
    public let data: Data

    /// Wraps 16 counter bytes.
    public init<D: DataProtocol>(data: D) throws {
        try Bytes.requireLength(data, 16, "Counter data")
        self.data = Data(data)
    }

    /// Decodes the Base64 text of 16 counter bytes.
    public init(base64 text: String) throws {
        self.data = try Bytes.base64(text, field: "Counter data", length: 16)
    }

    /// A new random counter, as the server assigns at activation.
    public static func random() -> HashCounter {
        // 16 random bytes always have the right length.
        try! HashCounter(data: Bytes.random(count: 16))
    }

    /// The next counter value.
    public func next() -> HashCounter {
        try! HashCounter(data: Bytes.fold32to16(Data(SHA256.hash(data: data))))
    }

    /// The counter advanced `steps` times.
    public func advanced(by steps: Int) -> HashCounter {
        var counter = self
        for _ in 0..<max(0, steps) {
            counter = counter.next()
        }
        return counter
    }
}
