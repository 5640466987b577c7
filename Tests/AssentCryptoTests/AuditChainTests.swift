import AssentCrypto
import Foundation
import Testing

@Suite("The audit hash chain and its signed checkpoints")
struct AuditChainTests {
    /// A chain of `count` rows with a checkpoint after every `every` rows, as export lines.
    static func export(count: Int, every: Int, key: ECPrivateKey) throws -> [AuditChain.Line] {
        var lines: [AuditChain.Line] = []
        var previous = AuditChain.genesis
        for seq in Int64(1)...Int64(count) {
            let row = AuditChain.Row(
                seq: seq, id: seq * 10, at: 1_800_000_000_000 + seq, type: "activation.created",
                activationId: seq.isMultiple(of: 2) ? "act-\(seq)" : nil, userId: "alice",
                actor: "operator:ops", detail: "Row \(seq) — ünïcode", prevHash: previous)
            lines.append(.row(row))
            previous = try #require(Hex.decode(row.hash))
            if seq % Int64(every) == 0 {
                lines.append(
                    .checkpoint(
                        try AuditChain.Checkpoint(seq: seq, hash: previous, at: 1_800_000_000_000 + seq, key: key)))
            }
        }
        return lines
    }

    static func text(_ lines: [AuditChain.Line]) -> String { lines.map(\.json).joined(separator: "\n") + "\n" }

    static func failure(_ lines: [AuditChain.Line], _ key: ECPrivateKey) -> AuditChain.Failure? {
        if case .failure(let failure) = AuditChain.verify(export: text(lines), key: key.publicKey) { return failure }
        return nil
    }

    @Test("An untouched export verifies; from a checkpoint on too; rows after the last checkpoint are counted")
    func verifies() throws {
        let key = ECPrivateKey()
        let lines = try Self.export(count: 25, every: 10, key: key)
        let report = try AuditChain.verify(export: Self.text(lines), key: key.publicKey).get()
        #expect(report.rows == 25 && report.checkpoints == 2 && report.firstSeq == 1 && report.lastSeq == 25)
        #expect(report.signedThrough == 20 && report.unsignedRows == 5)
        // Rows 11… with the checkpoint of row 10 as the anchor.
        let tail = Array(lines.drop { if case .row(let row) = $0 { return row.seq <= 10 } else { return true } })
        let anchor = lines.first { if case .checkpoint(let c) = $0 { return c.seq == 10 } else { return false } }!
        let anchored = try AuditChain.verify(export: Self.text([anchor] + tail), key: key.publicKey).get()
        #expect(anchored.firstSeq == 11 && anchored.signedThrough == 20)
        // Without its anchor a partial export proves nothing.
        #expect(Self.failure(tail, key)?.message.contains("without the checkpoint") == true)
        // Round trip of a line through JSON.
        for line in lines {
            #expect(try JSONDecoder().decode(AuditChain.Line.self, from: Data(line.json.utf8)) == line)
        }
    }

    @Test("Hex: two lower-case digits a byte, every byte value; decoding takes back what encoding gave")
    func hex() {
        let every = Data(0...255)
        let encoded = Hex.encode(every)
        #expect(encoded.count == 512 && encoded.hasPrefix("000102") && encoded.hasSuffix("fdfeff"))
        #expect(encoded == every.map { String(format: "%02x", $0) }.joined())
        #expect(Hex.decode(encoded) == every && Hex.encode(Data()) == "" && Hex.decode("abc") == nil)
    }

    @Test("The content hash is the documented layout; a row's application comes after the detail, only when it has one")
    func contentHashLayout() throws {
        // Known answers computed apart from this code (Python's hashlib over the layout SECURITY.md documents).
        let fields = (type: "activation.created", user: "alice", actor: "operator:ops", detail: "Row 1 — ünïcode")
        let legacy = AuditChain.contentHash(
            seq: 1, id: 10, at: 1_800_000_000_001, type: fields.type, activationId: nil, userId: fields.user,
            actor: fields.actor, detail: fields.detail)
        #expect(Hex.encode(legacy) == "180abc2c58129e81b9da1cef410d19203341962fc62ee0d57680ae8d700d81e9")
        let named = AuditChain.contentHash(
            seq: 1, id: 10, at: 1_800_000_000_001, type: fields.type, activationId: nil, userId: fields.user,
            actor: fields.actor, detail: fields.detail, applicationId: "app_9f2c")
        #expect(Hex.encode(named) == "6a4ed5a5722f3abc58d01316226cb492a10b7c810e6d041ac276eef94609beee")

        // In an export: a row's application changed, removed or added is a changed row.
        let key = ECPrivateKey()
        var lines: [AuditChain.Line] = []
        var previous = AuditChain.genesis
        for seq in Int64(1)...4 {
            let row = AuditChain.Row(
                seq: seq, id: seq, at: 1_800_000_000_000 + seq, type: "operation.approved", activationId: "act",
                userId: "alice", actor: "device", detail: "Row \(seq)",
                applicationId: seq.isMultiple(of: 2) ? "app_business" : nil, prevHash: previous)
            lines.append(.row(row))
            previous = try #require(Hex.decode(row.hash))
        }
        lines.append(.checkpoint(try AuditChain.Checkpoint(seq: 4, hash: previous, at: 1_800_000_000_005, key: key)))
        #expect(try AuditChain.verify(export: Self.text(lines), key: key.publicKey).get().rows == 4)
        for (index, application) in [(1, "app_retail"), (1, nil), (0, "app_business")] as [(Int, String?)] {
            var tampered = lines
            guard case .row(var row) = tampered[index] else {
                Issue.record("line \(index) is not a row")
                return
            }
            row.applicationId = application
            tampered[index] = .row(row)
            let failure = try #require(Self.failure(tampered, key))
            #expect(failure.seq == Int64(index + 1) && failure.message == "the row's content was changed")
        }
    }

    @Test("A changed byte, a removed, reordered or inserted row, and a forged checkpoint each fail at their row")
    func tampering() throws {
        let key = ECPrivateKey()
        let lines = try Self.export(count: 12, every: 5, key: key)
        func index(ofRow seq: Int64) -> Int {
            lines.firstIndex { if case .row(let row) = $0 { return row.seq == seq } else { return false } }!
        }
        func row(_ seq: Int64) -> AuditChain.Row {
            guard case .row(let row) = lines[index(ofRow: seq)] else { fatalError() }
            return row
        }

        var changed = lines
        var altered = row(4)
        altered.detail = "Row 4 — ünïcodE"
        changed[index(ofRow: 4)] = .row(altered)
        #expect(Self.failure(changed, key).map { ($0.seq, $0.message) }! == (4, "the row's content was changed"))

        // Changed and re-hashed: the next row no longer links to it.
        var rehashed = lines
        let remade = AuditChain.Row(
            seq: 4, id: 40, at: altered.at, type: altered.type, activationId: altered.activationId,
            userId: altered.userId, actor: altered.actor, detail: altered.detail, prevHash: Hex.decode(row(3).hash)!)
        rehashed[index(ofRow: 4)] = .row(remade)
        #expect(Self.failure(rehashed, key)?.seq == 5)

        var removed = lines
        removed.remove(at: index(ofRow: 7))
        let missing = Self.failure(removed, key)
        #expect(missing?.seq == 8 && missing?.message == "rows 7…7 are missing (removed)")

        var reordered = lines
        reordered.swapAt(index(ofRow: 8), index(ofRow: 9))
        #expect(Self.failure(reordered, key)?.seq == 9)

        var inserted = lines
        let intruder = AuditChain.Row(
            seq: 8, id: 999, at: row(8).at, type: "activation.removed", activationId: nil, userId: "mallory",
            actor: "system", detail: "nothing happened", prevHash: Hex.decode(row(7).hash)!)
        inserted.insert(.row(intruder), at: index(ofRow: 8))
        #expect(Self.failure(inserted, key)?.seq == 8)

        // A checkpoint signed by another key, or with its hash changed.
        var forged = lines
        let checkpointIndex = lines.firstIndex { if case .checkpoint = $0 { return true } else { return false } }!
        forged[checkpointIndex] = .checkpoint(
            try AuditChain.Checkpoint(seq: 5, hash: Hex.decode(row(5).hash)!, at: 1, key: ECPrivateKey()))
        let forgedFailure = Self.failure(forged, key)
        #expect(forgedFailure?.seq == 5 && forgedFailure?.message.contains("forged") == true)
        var edited = lines
        guard case .checkpoint(var checkpoint) = lines[checkpointIndex] else { return }
        checkpoint.hash = row(4).hash
        edited[checkpointIndex] = .checkpoint(checkpoint)
        #expect(Self.failure(edited, key)?.seq == 5)

        // Every row rewritten with a consistent chain: the signed checkpoint gives it away.
        var rewritten: [AuditChain.Line] = []
        var previous = AuditChain.genesis
        for line in lines {
            switch line {
            case .row(let original):
                let copy = AuditChain.Row(
                    seq: original.seq, id: original.id, at: original.at, type: original.type,
                    activationId: original.activationId, userId: original.userId, actor: original.actor,
                    detail: original.seq == 2 ? "rewritten" : original.detail, prevHash: previous)
                previous = Hex.decode(copy.hash)!
                rewritten.append(.row(copy))
            case .checkpoint: rewritten.append(line)
            }
        }
        let caught = Self.failure(rewritten, key)
        #expect(caught?.seq == 5 && caught?.message.contains("signed hash differs") == true)
        #expect(Self.failure([], key)?.message == "the export holds no rows")
    }

    @Test(
        "An export written by another implementation (Python, the fuzz corpus's seed) verifies: the encoding is the documented one"
    )
    func independentImplementation() throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus/webpush-audit")
        let rows = try String(contentsOf: corpus.appendingPathComponent("audit-rows"), encoding: .utf8)
        let report = try AuditChain.verify(export: rows, key: ECPrivateKey().publicKey).get()
        #expect(report.rows == 3 && report.firstSeq == 1 && report.lastSeq == 3 && report.signedThrough == nil)
        #expect(report.unsignedRows == 3)
        // Its checkpoint carries no valid signature.
        let withCheckpoint = try String(
            contentsOf: corpus.appendingPathComponent("audit-with-checkpoint"), encoding: .utf8)
        let outcome = AuditChain.verify(export: withCheckpoint, key: ECPrivateKey().publicKey)
        guard case .failure(let failure) = outcome else {
            Issue.record("a checkpoint signed by nobody verified: \(outcome)")
            return
        }
        #expect(failure.seq == 3 && failure.line == 4)
    }
}
