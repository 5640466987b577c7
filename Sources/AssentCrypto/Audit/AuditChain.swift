import Crypto
import Foundation

/// The tamper-evident audit trail: every audit row is linked to the one before it by a SHA-256 hash chain, in the
/// total order the server seals them in (`seq` 1, 2, …), and the chain is signed at checkpoints with the server's
/// audit key (ES256). Pure code: the server seals with it, `assent audit verify` and the tests check with it.
///
/// - `contentHash` = SHA-256 of the row's fields, each as a 4-byte big-endian length and its UTF-8 bytes (an
///   absent field as length `0xFFFFFFFF`), numbers as 8-byte big-endian: seq, id, at, type, activationId, userId,
///   actor, detail, and then applicationId only when the row has one (rows written before the server kept an
///   application per row have none, and hash as they did).
/// - `hash` = SHA-256(`prevHash` ‖ `contentHash`); the first row's `prevHash` is 32 zero bytes.
/// - A checkpoint signs `"assent-audit-checkpoint" ‖ 0x00 ‖ seq ‖ hash ‖ at` (numbers 8-byte big-endian).
public enum AuditChain {
    /// The `prevHash` of row 1.
    public static var genesis: Data { Data(count: 32) }

    /// One sealed audit row as exported.
    public struct Row: Codable, Sendable, Equatable {
        public var seq: Int64
        public var id: Int64
        public var at: Int64
        public var type: String
        public var activationId: String?
        public var userId: String?
        public var actor: String
        public var detail: String
        /// The application the row is about; absent for the organisation's own actions (operators, keys, the
        /// server's settings) and for rows written before rows carried it.
        public var applicationId: String?
        public var contentHash: String
        public var prevHash: String
        public var hash: String

        public init(
            seq: Int64, id: Int64, at: Int64, type: String, activationId: String?, userId: String?, actor: String,
            detail: String, applicationId: String? = nil, prevHash: Data
        ) {
            let content = AuditChain.contentHash(
                seq: seq, id: id, at: at, type: type, activationId: activationId, userId: userId, actor: actor,
                detail: detail, applicationId: applicationId)
            self.init(
                seq: seq, id: id, at: at, type: type, activationId: activationId, userId: userId, actor: actor,
                detail: detail, applicationId: applicationId, contentHash: content, prevHash: prevHash,
                hash: AuditChain.link(prevHash, content))
        }

        /// A row as stored, with the hashes the server computed when it sealed it (an export never recomputes them).
        public init(
            seq: Int64, id: Int64, at: Int64, type: String, activationId: String?, userId: String?, actor: String,
            detail: String, applicationId: String? = nil, contentHash: Data, prevHash: Data, hash: Data
        ) {
            self.seq = seq
            self.id = id
            self.at = at
            self.type = type
            self.activationId = activationId
            self.userId = userId
            self.actor = actor
            self.detail = detail
            self.applicationId = applicationId
            self.contentHash = Hex.encode(contentHash)
            self.prevHash = Hex.encode(prevHash)
            self.hash = Hex.encode(hash)
        }

        /// The content hash the fields give now.
        public var computedContentHash: Data {
            AuditChain.contentHash(
                seq: seq, id: id, at: at, type: type, activationId: activationId, userId: userId, actor: actor,
                detail: detail, applicationId: applicationId)
        }
    }

    /// A signed statement that the chain's row `seq` has hash `hash`.
    public struct Checkpoint: Codable, Sendable, Equatable {
        public var seq: Int64
        public var hash: String
        /// When it was signed (milliseconds since 1970).
        public var at: Int64
        /// ES256, raw R ‖ S, Base64URL.
        public var signature: String

        public init(seq: Int64, hash: Data, at: Int64, key: ECPrivateKey) throws {
            self.seq = seq
            self.hash = Hex.encode(hash)
            self.at = at
            let signed = try AssentCryptoError.wrapping("ES256 signing") {
                try key.signingKey.signature(for: AuditChain.checkpointMessage(seq: seq, hash: hash, at: at))
            }
            signature = Base64URL.encode(signed.rawRepresentation)
        }

        public init(seq: Int64, hash: String, at: Int64, signature: String) {
            self.seq = seq
            self.hash = hash
            self.at = at
            self.signature = signature
        }

        /// Whether `key` signed exactly this seq, hash and time.
        public func isSigned(by key: ECPublicKey) -> Bool {
            guard let hashBytes = Hex.decode(hash), hashBytes.count == 32,
                let raw = try? Base64URL.decode(signature),
                let signature = try? P256.Signing.ECDSASignature(rawRepresentation: raw)
            else { return false }
            return key.signingKey.isValidSignature(
                signature, for: AuditChain.checkpointMessage(seq: seq, hash: hashBytes, at: at))
        }
    }

    /// One line of an export (`audit.jsonl`): a row or a checkpoint, told apart by `kind`.
    public enum Line: Codable, Sendable, Equatable {
        case row(Row)
        case checkpoint(Checkpoint)

        private enum Kind: String, Codable { case row, checkpoint }
        private enum CodingKeys: String, CodingKey { case kind }

        public init(from decoder: any Decoder) throws {
            switch try decoder.container(keyedBy: CodingKeys.self).decode(Kind.self, forKey: .kind) {
            case .row: self = .row(try Row(from: decoder))
            case .checkpoint: self = .checkpoint(try Checkpoint(from: decoder))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case .row(let row):
                try container.encode(Kind.row, forKey: .kind)
                try row.encode(to: encoder)
            case .checkpoint(let checkpoint):
                try container.encode(Kind.checkpoint, forKey: .kind)
                try checkpoint.encode(to: encoder)
            }
        }

        /// The line as JSON with sorted keys (one line, no trailing newline).
        public var json: String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
        }
    }

    public static func contentHash(
        seq: Int64, id: Int64, at: Int64, type: String, activationId: String?, userId: String?, actor: String,
        detail: String, applicationId: String? = nil
    ) -> Data {
        var bytes = Data()
        for number in [seq, id, at] { withUnsafeBytes(of: number.bigEndian) { bytes.append(contentsOf: $0) } }
        var fields: [String?] = [type, activationId, userId, actor, detail]
        // The application comes last and only when present: a row without one hashes as rows always did.
        if let applicationId { fields.append(applicationId) }
        for text in fields {
            guard let text else {
                bytes.append(contentsOf: [0xFF, 0xFF, 0xFF, 0xFF])
                continue
            }
            let utf8 = Data(text.utf8)
            withUnsafeBytes(of: UInt32(utf8.count).bigEndian) { bytes.append(contentsOf: $0) }
            bytes.append(utf8)
        }
        return Data(SHA256.hash(data: bytes))
    }

    /// SHA-256(prev ‖ content).
    public static func link(_ previous: Data, _ content: Data) -> Data {
        Data(SHA256.hash(data: previous + content))
    }

    static func checkpointMessage(seq: Int64, hash: Data, at: Int64) -> Data {
        var message = Data("assent-audit-checkpoint".utf8)
        message.append(0)
        withUnsafeBytes(of: seq.bigEndian) { message.append(contentsOf: $0) }
        message.append(hash)
        withUnsafeBytes(of: at.bigEndian) { message.append(contentsOf: $0) }
        return message
    }

    /// What a verification established.
    public struct Report: Sendable, Equatable {
        public var rows: Int
        public var checkpoints: Int
        public var firstSeq: Int64?
        public var lastSeq: Int64?
        /// The highest row a valid checkpoint signs.
        public var signedThrough: Int64?
        /// Rows after the last checkpoint: chained, not yet signed (an attacker with the database could rewrite them
        /// together with their hashes; the next checkpoint fixes them).
        public var unsignedRows: Int {
            guard let lastSeq, let firstSeq else { return 0 }
            return Int(lastSeq - max(signedThrough ?? (firstSeq - 1), firstSeq - 1))
        }
    }

    /// Where and why a verification failed.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The line of the export (1-based).
        public var line: Int
        /// The row the chain breaks at, when known.
        public var seq: Int64?
        public var message: String

        public var description: String {
            // Line 0: the failure is the export's as a whole (no rows, a missing tail), not one line's.
            let place = [line > 0 ? "line \(line)" : nil, seq.map { "row \($0)" }].compactMap { $0 }
            return (place.isEmpty ? "" : place.joined(separator: ", ") + ": ") + message
        }
    }

    /// Verifies an export: every row's content hash and link, rows consecutive from an anchor (row 1, or a signed
    /// checkpoint just before the first row), every checkpoint signed by `key` and matching the row it names.
    /// - Returns: what was verified, or the first place the chain breaks.
    public static func verify(export text: String, key: ECPublicKey) -> Result<Report, Failure> {
        verify(export: text, key: key, anchor: nil)
    }

    /// Verifies an export as ``verify(export:key:)`` does, and that it reaches `anchor` — the latest checkpoint
    /// witnessed outside the database — with the hash it signed: an export whose tail was cut, or whose rows up to
    /// it were rewritten and re-signed with another key, fails.
    public static func verify(export text: String, key: ECPublicKey, anchor: Checkpoint?) -> Result<Report, Failure> {
        let verified = verifyChain(export: text, key: key)
        guard let anchor, case .success(let report) = verified else { return verified }
        guard anchor.isSigned(by: key) else {
            return .failure(
                Failure(
                    line: 0, seq: anchor.seq,
                    message: "the anchored checkpoint is not signed by this key (another key signs the export)"))
        }
        guard let last = report.lastSeq, last >= anchor.seq else {
            return .failure(
                Failure(
                    line: 0, seq: anchor.seq,
                    message: "the export ends at row \(report.lastSeq ?? 0), before the anchored checkpoint at row "
                        + "\(anchor.seq): its tail was removed"))
        }
        guard let first = report.firstSeq, first <= anchor.seq else { return verified }
        let hash = rowHashes(text)[anchor.seq]
        guard hash == anchor.hash else {
            return .failure(
                Failure(
                    line: 0, seq: anchor.seq,
                    message: "row \(anchor.seq) differs from the anchored checkpoint: rows up to it were rewritten"))
        }
        var anchored = report
        anchored.signedThrough = max(report.signedThrough ?? 0, anchor.seq)
        return .success(anchored)
    }

    /// Each row's hash in an export, by `seq`.
    private static func rowHashes(_ text: String) -> [Int64: String] {
        var hashes: [Int64: String] = [:]
        for line in text.split(separator: "\n") {
            if case .row(let row)? = try? JSONDecoder().decode(Line.self, from: Data(line.utf8)) {
                hashes[row.seq] = row.hash
            }
        }
        return hashes
    }

    private static func verifyChain(export text: String, key: ECPublicKey) -> Result<Report, Failure> {
        var rows: [(line: Int, row: Row)] = []
        var checkpoints: [(line: Int, checkpoint: Checkpoint)] = []
        let decoder = JSONDecoder()
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = rawLine.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            guard let line = try? decoder.decode(Line.self, from: Data(trimmed.utf8)) else {
                return .failure(
                    Failure(line: index + 1, seq: nil, message: "not a row or checkpoint of an audit export"))
            }
            switch line {
            case .row(let row): rows.append((index + 1, row))
            case .checkpoint(let checkpoint):
                guard checkpoint.isSigned(by: key) else {
                    return .failure(
                        Failure(
                            line: index + 1, seq: checkpoint.seq,
                            message: "the checkpoint's signature does not verify with this key (forged or altered)"))
                }
                checkpoints.append((index + 1, checkpoint))
            }
        }
        guard let first = rows.first else {
            return .failure(Failure(line: 0, seq: nil, message: "the export holds no rows"))
        }
        var report = Report(rows: 0, checkpoints: checkpoints.count)
        // Row 1 links to the genesis; a later first row to the signed checkpoint just before it.
        var expectedPrevious = Hex.encode(genesis)
        if first.row.seq > 1 {
            guard let anchor = checkpoints.first(where: { $0.checkpoint.seq == first.row.seq - 1 }) else {
                return .failure(
                    Failure(
                        line: first.line, seq: first.row.seq,
                        message: "the export starts at row \(first.row.seq) without the checkpoint that anchors it"))
            }
            expectedPrevious = anchor.checkpoint.hash
            report.signedThrough = anchor.checkpoint.seq
        }
        var hashes: [Int64: String] = [:]
        var expectedSeq = first.row.seq
        for (number, row) in rows {
            guard row.seq == expectedSeq else {
                let message =
                    row.seq > expectedSeq
                    ? "rows \(expectedSeq)…\(row.seq - 1) are missing (removed)"
                    : "row \(row.seq) is out of order or repeated (after row \(expectedSeq - 1))"
                return .failure(Failure(line: number, seq: row.seq, message: message))
            }
            guard Hex.encode(row.computedContentHash) == row.contentHash else {
                return .failure(Failure(line: number, seq: row.seq, message: "the row's content was changed"))
            }
            guard row.prevHash == expectedPrevious, let prevBytes = Hex.decode(row.prevHash),
                let contentBytes = Hex.decode(row.contentHash), Hex.encode(link(prevBytes, contentBytes)) == row.hash
            else {
                return .failure(
                    Failure(
                        line: number, seq: row.seq,
                        message: "the row does not link to the one before it (inserted, replaced or reordered)"))
            }
            hashes[row.seq] = row.hash
            expectedPrevious = row.hash
            expectedSeq += 1
        }
        report.rows = rows.count
        report.firstSeq = first.row.seq
        report.lastSeq = expectedSeq - 1
        for (number, checkpoint) in checkpoints {
            guard let hash = hashes[checkpoint.seq] else { continue }
            guard hash == checkpoint.hash else {
                return .failure(
                    Failure(
                        line: number, seq: checkpoint.seq,
                        message: "the signed hash differs from the chain's: rows up to here were changed"))
            }
            report.signedThrough = max(report.signedThrough ?? 0, checkpoint.seq)
        }
        return .success(report)
    }
}

/// Lower-case hexadecimal.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Lower-case hex, two digits a byte (a sealed value's key id is read this way on every open: no formatting).
    public static func encode(_ data: some Collection<UInt8>) -> String {
        String(unsafeUninitializedCapacity: data.count * 2) { buffer in
            var index = 0
            for byte in data {
                buffer[index] = digits[Int(byte >> 4)]
                buffer[index + 1] = digits[Int(byte & 0x0F)]
                index += 2
            }
            return index
        }
    }

    public static func decode(_ text: String) -> Data? {
        guard text.count.isMultiple(of: 2) else { return nil }
        var bytes = Data(capacity: text.count / 2)
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }
}
