import ArgumentParser
import AssentCrypto
import AssentModel
import AssentServer
import Crypto
import Foundation

/// `assent admin audit export --from … --to … > audit.jsonl`.
struct AuditExport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Write a verifiable range of the audit chain as JSON lines.",
        discussion: """
            The rows written from --from to --to (RFC 3339 times or dates; default: everything), widened to whole \
            signed segments: the checkpoint before the first row anchors it, the first checkpoint after the last \
            row signs it (the server signs one at the head first). Check it anywhere, without the server: \
            assent audit verify audit.jsonl --key audit-public.pem
            Example: assent admin audit export --from 2026-11-01 --to 2026-12-01 > audit.jsonl
            """)
    @OptionGroup var connection: ConnectionOptions
    @Option(help: "The first time (RFC 3339, or a date: midnight UTC).") var from: String?
    @Option(help: "The end time, not included.") var to: String?

    func run() async throws {
        try await CLIFailure.reporting {
            var query: [URLQueryItem] = []
            if let from { query.append(URLQueryItem(name: "from", value: from)) }
            if let to { query.append(URLQueryItem(name: "to", value: to)) }
            let body = try await connection.client().get(
                "api/v1/audit/export", query: query, as: OperatorClient.RawBody.self)
            FileHandle.standardOutput.write(body.data)
        }
    }
}

/// `assent admin audit key > audit-public.pem`.
struct AuditKey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key", abstract: "Print the public key audit checkpoints are signed with (PEM).",
        discussion: "Example: assent admin audit key > audit-public.pem")
    @OptionGroup var connection: ConnectionOptions

    func run() async throws {
        try await CLIFailure.reporting {
            let key = try await connection.client().get("api/v1/audit/key", as: AuditKeyInfo.self)
            if connection.json {
                try connection.output(key) { [] }
            } else {
                FileHandle.standardOutput.write(Data(key.publicKeyPem.utf8))
                if !key.publicKeyPem.hasSuffix("\n") { FileHandle.standardOutput.write(Data("\n".utf8)) }
                FileHandle.standardError.write(Data("fingerprint \(key.fingerprint)\n".utf8))
            }
        }
    }
}

/// `assent admin audit chain`.
struct AuditChainState: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chain", abstract: "Show the audit chain's state: sealed, signed, verified.",
        discussion: "Example: assent admin audit chain")
    @OptionGroup var connection: ConnectionOptions

    func run() async throws {
        try await CLIFailure.reporting {
            let info = try await connection.client().get("api/v1/audit/chain", as: AuditChainInfo.self)
            try connection.output(info) {
                TextTable.fields([
                    ("sealedThrough", info.sealedThrough.map(String.init) ?? "nothing yet"),
                    ("unsealed", String(info.unsealed)),
                    ("lastCheckpoint", info.lastCheckpointSeq.map(String.init)),
                    ("lastCheckpointAt", info.lastCheckpointAt?.formatted(.iso8601)),
                    ("firstStored", info.firstSeq.map(String.init)),
                    ("verified", info.verified.map { "\($0) newest rows" }), ("problem", info.problem),
                    ("keyFingerprint", info.keyFingerprint),
                ])
            }
        }
    }
}

/// `assent audit …`: the audit chain checked offline.
struct AuditToolCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit", abstract: "Check an audit export offline, without a server.",
        subcommands: [Verify.self])

    /// `assent audit verify audit.jsonl --key audit-public.pem`.
    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify an audit export: every row's hash and link, and every checkpoint's signature.",
            discussion: """
                Exits 0 when the chain holds, 1 naming the line and row where it breaks: a changed byte, a \
                removed, reordered or inserted row, a forged or altered checkpoint.
                Example: assent audit verify audit.jsonl --key audit-public.pem
                """)
        @Argument(help: "The export (assent admin audit export), or - for standard input.") var file: String
        @Option(help: "The audit public key (PEM, from assent admin audit key).") var key: String
        @Option(
            help: """
                The key's fingerprint as you wrote it down (16 hex digits, shown by assent admin audit chain): a key \
                that is not it fails, so a re-keyed trail is found.
                """)
        var fingerprint: String?
        @Option(
            help: """
                The audit witness file (serve --audit-witness): the export must reach its latest checkpoint with the \
                hash it signed, so a removed or rewritten tail fails.
                """)
        var anchor: String?
        @Flag(help: "Print JSON instead of a sentence.") var json = false

        struct Outcome: Encodable {
            var valid: Bool
            var rows: Int?
            var firstSeq: Int64?
            var lastSeq: Int64?
            var checkpoints: Int?
            var signedThrough: Int64?
            var unsignedRows: Int?
            var line: Int?
            var seq: Int64?
            var problem: String?
        }

        func run() async throws {
            let text: String
            if file == "-" {
                text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            } else {
                guard let data = FileManager.default.contents(atPath: file) else {
                    throw ValidationError("Cannot read \(file).")
                }
                text = String(decoding: data, as: UTF8.self)
            }
            guard let pem = FileManager.default.contents(atPath: key) else {
                throw ValidationError("Cannot read the key file \(key).")
            }
            let publicKey: ECPublicKey
            do {
                publicKey = try ECPublicKey(pemRepresentation: String(decoding: pem, as: UTF8.self))
            } catch {
                throw ValidationError("\(key) is not a P-256 public key in PEM.")
            }
            if let fingerprint {
                let actual = String(Hex.encode(Data(SHA256.hash(data: publicKey.x963))).prefix(16))
                guard actual == fingerprint.lowercased() else {
                    CLIFailure.fail(
                        code: "AUDIT_KEY_NOT_PINNED",
                        message: "The key's fingerprint is \(actual), not the pinned \(fingerprint): the trail was "
                            + "re-keyed, or this is another server's key.", exitCode: 1)
                }
            }
            var anchored: AuditChain.Checkpoint?
            if let anchor {
                guard let data = FileManager.default.contents(atPath: anchor) else {
                    throw ValidationError("Cannot read the witness file \(anchor).")
                }
                guard let latest = AuditWitness.latest(in: String(decoding: data, as: UTF8.self), signedBy: publicKey)
                else {
                    CLIFailure.fail(
                        code: "AUDIT_CHAIN_BROKEN",
                        message: "The witness \(anchor) holds no checkpoint signed by this key.", exitCode: 1)
                }
                anchored = latest
            }
            switch AuditChain.verify(export: text, key: publicKey, anchor: anchored) {
            case .success(let report):
                if json {
                    try printJSON(
                        Outcome(
                            valid: true, rows: report.rows, firstSeq: report.firstSeq, lastSeq: report.lastSeq,
                            checkpoints: report.checkpoints, signedThrough: report.signedThrough,
                            unsignedRows: report.unsignedRows))
                } else {
                    var sentence =
                        "Verified: rows \(report.firstSeq ?? 0)…\(report.lastSeq ?? 0) (\(report.rows)), "
                        + "\(report.checkpoints) checkpoint\(report.checkpoints == 1 ? "" : "s")"
                    sentence += report.signedThrough.map { ", signed through row \($0)" } ?? ", none signed"
                    if let anchored { sentence += ", reaching the witnessed checkpoint at row \(anchored.seq)" }
                    if report.unsignedRows > 0 {
                        sentence += "; the last \(report.unsignedRows) rows are chained but not signed yet"
                    }
                    print(sentence + ".")
                }
            case .failure(let failure):
                if json {
                    try printJSON(
                        Outcome(valid: false, line: failure.line, seq: failure.seq, problem: failure.message))
                    Foundation.exit(1)
                }
                CLIFailure.fail(code: "AUDIT_CHAIN_BROKEN", message: failure.description, exitCode: 1)
            }
        }

        func printJSON(_ outcome: Outcome) throws {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            FileHandle.standardOutput.write(try encoder.encode(outcome) + Data("\n".utf8))
        }
    }
}
