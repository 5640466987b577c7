import Foundation

/// One server-sent event (the `text/event-stream` format of the HTML standard): what the device event stream sends
/// and what clients read from it.
public struct ServerSentEvent: Sendable, Equatable {
    /// The `id:` field: the position a client resumes from with `Last-Event-ID`.
    public var id: String?
    /// The `event:` field (`message` when absent).
    public var event: String?
    /// The `data:` lines joined with newlines.
    public var data: String

    public init(id: String? = nil, event: String? = nil, data: String) {
        self.id = id
        self.event = event
        self.data = data
    }

    /// The event as it goes on the wire, ending with the blank line.
    public var encoded: String {
        var text = ""
        if let id { text += "id: \(id)\n" }
        if let event { text += "event: \(event)\n" }
        for line in data.split(separator: "\n", omittingEmptySubsequences: false) { text += "data: \(line)\n" }
        return text + "\n"
    }
}

/// Reads server-sent events from a byte stream delivered in arbitrary pieces. Comments (heartbeats) and `retry:`
/// lines are skipped; an event is complete at its blank line.
public struct ServerSentEventParser: Sendable {
    private var buffer: [UInt8] = []
    private var id: String?
    private var event: String?
    private var data: [String] = []
    private var hasData = false
    /// The last `id:` seen, as a reconnecting client sends it back in `Last-Event-ID`.
    public private(set) var lastEventId: String?
    /// The longest line accepted; a longer one is a broken stream.
    public static let maximumLineLength = 1 << 20

    public init() {}

    /// Adds bytes and returns the events they completed.
    /// - Throws: ``ServerSentEventError`` when a line grows past ``maximumLineLength``.
    public mutating func feed<Bytes: Sequence>(_ bytes: Bytes) throws -> [ServerSentEvent]
    where Bytes.Element == UInt8 {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                var line = buffer
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                buffer.removeAll(keepingCapacity: true)
                if let event = take(String(decoding: line, as: UTF8.self)) { events.append(event) }
            } else {
                buffer.append(byte)
                guard buffer.count <= Self.maximumLineLength else { throw ServerSentEventError() }
            }
        }
        return events
    }

    private mutating func take(_ line: String) -> ServerSentEvent? {
        if line.isEmpty {
            defer {
                id = nil
                event = nil
                data = []
                hasData = false
            }
            guard hasData else { return nil }
            if let id { lastEventId = id }
            return ServerSentEvent(id: id, event: event, data: data.joined(separator: "\n"))
        }
        if line.hasPrefix(":") { return nil }
        let field: Substring
        var value: Substring
        if let colon = line.firstIndex(of: ":") {
            field = line[..<colon]
            value = line[line.index(after: colon)...]
            if value.first == " " { value = value.dropFirst() }
        } else {
            field = Substring(line)
            value = ""
        }
        switch field {
        case "id": id = String(value)
        case "event": event = String(value)
        case "data":
            data.append(String(value))
            hasData = true
        default: break
        }
        return nil
    }
}

/// A server-sent event stream broke its format.
public struct ServerSentEventError: Error, CustomStringConvertible {
    public var description: String { "The event stream sent a line longer than 1 MiB." }
}

/// What the device event stream (`GET /api/auth/token/app/operation/events`) says about an operation.
public struct OperationEvent: Codable, Sendable, Equatable {
    /// `operation.created` or `operation.finished` (the SSE `event:` field).
    public static let created = "operation.created"
    public static let finished = "operation.finished"
    /// Sent first, with the stream position as its id, before any operation event.
    public static let ready = "ready"

    public var operationId: String
    public var name: String
    public var status: OperationStatus
    public var statusReason: String?
    /// The operation as the list endpoint shows it (new operations only).
    public var operation: MobileOperation?

    public init(
        operationId: String, name: String, status: OperationStatus, statusReason: String? = nil,
        operation: MobileOperation? = nil
    ) {
        self.operationId = operationId
        self.name = name
        self.status = status
        self.statusReason = statusReason
        self.operation = operation
    }
}
