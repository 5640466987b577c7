import Foundation
import Logging

/// A swift-log handler that writes one JSON object per line to standard error:
/// `{"ts":…,"level":…,"label":…,"msg":…, metadata…}`.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    let label: String

    public init(label: String) { self.label = label }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var object: [String: String] = [
            "ts": Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true)),
            "level": event.level.rawValue, "label": label, "msg": "\(event.message)",
        ]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            object[key] = "\(value)"
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var line = try? encoder.encode(object) else { return }
        line.append(0x0A)
        FileHandle.standardError.write(line)
    }
}
