import Foundation
import Logging

/// A swift-log handler that writes one JSON object per line to standard error:
/// `{"ts":…,"level":…,"label":…,"msg":…, metadata…}`.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    /// Metadata of the moment, such as the id of the request being served (``RequestID/metadataProvider``).
    public var metadataProvider: Logger.MetadataProvider?
    let label: String

    public init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var object: [String: String] = [
            "ts": Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true)),
            "level": event.level.rawValue, "label": label, "msg": "\(event.message)",
        ]
        let present = metadataProvider?.get() ?? [:]
        for (key, value) in metadata.merging(present, uniquingKeysWith: { $1 }).merging(
            event.metadata ?? [:], uniquingKeysWith: { $1 })
        {
            object[key] = "\(value)"
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var line = try? encoder.encode(object) else { return }
        line.append(0x0A)
        FileHandle.standardError.write(line)
    }
}
