import AssentModel
import Foundation
import Testing

@Suite("Server-sent events")
struct ServerSentEventTests {
    @Test("Events split at any byte come out whole; comments and retry lines are skipped; ids are remembered")
    func parseAcrossChunks() throws {
        let text =
            "retry: 3000\n\n: heartbeat\n\nid: 7\nevent: ready\ndata: {}\n\n"
            + "id: 8\r\nevent: operation.created\r\ndata: {\"a\":1,\r\ndata: \"b\":2}\r\n\r\n" + "data:no space\n\n"
        let bytes = Array(text.utf8)
        for size in [1, 2, 3, 7, 64, bytes.count] {
            var parser = ServerSentEventParser()
            var events: [ServerSentEvent] = []
            for start in stride(from: 0, to: bytes.count, by: size) {
                events += try parser.feed(bytes[start..<min(bytes.count, start + size)])
            }
            #expect(
                events == [
                    ServerSentEvent(id: "7", event: "ready", data: "{}"),
                    ServerSentEvent(id: "8", event: "operation.created", data: "{\"a\":1,\n\"b\":2}"),
                    ServerSentEvent(data: "no space"),
                ], "chunks of \(size)")
            #expect(parser.lastEventId == "8")
        }
    }

    @Test("Encoding and parsing agree, multi-line data included")
    func roundTrip() throws {
        let event = ServerSentEvent(id: "42", event: "operation.finished", data: "line one\nline two")
        var parser = ServerSentEventParser()
        #expect(try parser.feed(Array(event.encoded.utf8)) == [event])
    }

    @Test("A line longer than the limit breaks the stream instead of growing memory")
    func oversizedLine() {
        var parser = ServerSentEventParser()
        #expect(throws: ServerSentEventError.self) {
            _ = try parser.feed(
                [UInt8](repeating: UInt8(ascii: "a"), count: ServerSentEventParser.maximumLineLength + 1))
        }
    }
}
