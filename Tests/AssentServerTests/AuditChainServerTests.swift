import AssentCrypto
import AssentModel
import AssentTesting
import Foundation
import SQLKit
import Testing

@testable import AssentServer
@testable import AssentServerTesting

@Suite("The tamper-evident audit trail: sealing, checkpoints, export, offline verification")
struct AuditChainServerTests {
    /// A server whose chain is signed every five rows.
    static func server(_ backend: Backend) async throws -> TestServer {
        var server = try await TestServer.make(backend)
        server.environment.audit.checkpointRows = 5
        server.environment.audit.sealInterval = .milliseconds(50)
        return server
    }

    static func write(_ server: TestServer, count: Int, prefix: String = "event") async throws {
        for index in 0..<count {
            try await server.store.appendAudit(
                AuditEvent(
                    id: nil, at: server.environment.nowMillis, type: "test.\(prefix)",
                    activationId: index.isMultiple(of: 3) ? nil : "act-\(index)", userId: "alice",
                    actor: "operator:ops", detail: "\(prefix) \(index) — ünïcode",
                    applicationId: index.isMultiple(of: 2) ? server.application.id : nil))
        }
    }

    static func verify(_ server: TestServer) async throws -> Result<AuditChain.Report, AuditChain.Failure> {
        let chain = Services(server.environment).auditChain
        let export = try await chain.export(from: 0, until: .max)
        return AuditChain.verify(export: export, key: try await chain.key().publicKey)
    }

    static func sql(_ server: TestServer, _ text: String) async throws {
        try await server.store.database.raw(SQLQueryString(stringLiteral: text)).run()
    }

    @Test(
        "Rows are sealed in one chain and signed every five; each kind of tampering in the database is caught at its row",
        arguments: Backend.all)
    func tampering(backend: Backend) async throws {
        let server = try await Self.server(backend)
        defer { Task { await server.shutdown() } }
        // The activation's own audit rows (created, …) come first, then these.
        try await Self.write(server, count: 12)
        let chain = Services(server.environment).auditChain
        try await chain.sealPending()
        let state = try await chain.status()
        let sealed = try #require(state.sealedThrough)
        #expect(sealed >= 12 && state.unsealed == 0 && state.problem == nil)
        #expect(state.lastCheckpointSeq == sealed - sealed % 5)
        let report = try await Self.verify(server).get()
        #expect(report.rows == Int(sealed) && report.firstSeq == 1 && report.signedThrough == state.lastCheckpointSeq)

        // Changed: one character of one row.
        try await Self.sql(server, "UPDATE audit_events SET detail = detail || '!' WHERE seq = 3")
        guard case .failure(let changed) = try await Self.verify(server) else { throw TestFailure("change passed") }
        #expect(changed.seq == 3 && changed.message == "the row's content was changed")
        try await Self.sql(
            server, "UPDATE audit_events SET detail = substr(detail, 1, length(detail) - 1) WHERE seq = 3")
        #expect((try? await Self.verify(server).get()) != nil)

        // Changed: the application a row names, taken away.
        let named = try #require(
            try await server.store.sealedAuditRows(from: 1, through: sealed).first { $0.event.applicationId != nil })
        try await Self.sql(server, "UPDATE audit_events SET application_id = NULL WHERE seq = \(named.seq)")
        guard case .failure(let unnamed) = try await Self.verify(server) else { throw TestFailure("change passed") }
        #expect(unnamed.seq == named.seq && unnamed.message == "the row's content was changed")
        try await server.store.database.raw(
            "UPDATE audit_events SET application_id = \(bind: server.application.id) WHERE seq = \(bind: named.seq)"
        ).run()
        #expect((try? await Self.verify(server).get()) != nil)

        // Removed: row 4 deleted (kept aside and put back).
        try await Self.sql(server, "CREATE TABLE audit_aside AS SELECT * FROM audit_events WHERE seq = 4")
        try await Self.sql(server, "DELETE FROM audit_events WHERE seq = 4")
        guard case .failure(let removed) = try await Self.verify(server) else { throw TestFailure("delete passed") }
        #expect(removed.seq == 5 && removed.message == "rows 4…4 are missing (removed)")
        try await Self.sql(server, "INSERT INTO audit_events SELECT * FROM audit_aside")
        try await Self.sql(server, "DROP TABLE audit_aside")
        #expect((try? await Self.verify(server).get()) != nil)

        // Reordered: rows 6 and 7 swap places.
        try await Self.sql(server, "UPDATE audit_events SET seq = -6 WHERE seq = 6")
        try await Self.sql(server, "UPDATE audit_events SET seq = 6 WHERE seq = 7")
        try await Self.sql(server, "UPDATE audit_events SET seq = 7 WHERE seq = -6")
        guard case .failure(let reordered) = try await Self.verify(server) else { throw TestFailure("swap passed") }
        #expect(reordered.seq == 6)
        try await Self.sql(server, "UPDATE audit_events SET seq = -6 WHERE seq = 7")
        try await Self.sql(server, "UPDATE audit_events SET seq = 7 WHERE seq = 6")
        try await Self.sql(server, "UPDATE audit_events SET seq = 6 WHERE seq = -6")
        #expect((try? await Self.verify(server).get()) != nil)

        // Inserted: a forged row linked properly to row 7, the rest moved up one place.
        let seven = try #require(try await server.store.sealedAuditRows(from: 7, through: 7).first)
        let forged = AuditChain.Row(
            seq: 8, id: 999_999, at: seven.event.at, type: "activation.removed", activationId: nil,
            userId: "mallory", actor: "system", detail: "nothing happened", prevHash: seven.hash)
        try await Self.sql(server, "UPDATE audit_events SET seq = seq + 100000 WHERE seq >= 8")
        try await Self.sql(server, "UPDATE audit_events SET seq = seq - 99999 WHERE seq >= 100008")
        try await server.store.database.raw(
            """
            INSERT INTO audit_events (id, at, type, activation_id, user_id, actor, detail, seq, content_hash, \
            prev_hash, chain_hash) VALUES (999999, \(bind: forged.at), \(bind: forged.type), NULL, 'mallory', \
            'system', \(bind: forged.detail), 8, \(bind: Hex.decode(forged.contentHash)!), \
            \(bind: Hex.decode(forged.prevHash)!), \(bind: Hex.decode(forged.hash)!))
            """
        ).run()
        guard case .failure(let inserted) = try await Self.verify(server) else { throw TestFailure("insert passed") }
        #expect(inserted.seq == 9)
        try await Self.sql(server, "DELETE FROM audit_events WHERE id = 999999")
        try await Self.sql(server, "UPDATE audit_events SET seq = seq + 100000 WHERE seq >= 9")
        try await Self.sql(server, "UPDATE audit_events SET seq = seq - 100001 WHERE seq >= 100009")
        #expect((try? await Self.verify(server).get()) != nil)

        // A forged checkpoint: the newest one (which the console's state checks too), signed by another key over
        // its row's hash.
        let newest = try #require(try await server.store.latestAuditCheckpoint()).seq
        let row = try #require(try await server.store.sealedAuditRows(from: newest, through: newest).first)
        let other = try AuditChain.Checkpoint(seq: newest, hash: row.hash, at: 1, key: ECPrivateKey())
        try await Self.sql(
            server, "CREATE TABLE checkpoint_aside AS SELECT * FROM audit_checkpoints WHERE seq = \(newest)")
        try await server.store.database.raw(
            """
            UPDATE audit_checkpoints SET signature = \(bind: try Base64URL.decode(other.signature)) \
            WHERE seq = \(bind: newest)
            """
        ).run()
        guard case .failure(let forgedCheckpoint) = try await Self.verify(server) else {
            throw TestFailure("forged checkpoint passed")
        }
        #expect(forgedCheckpoint.seq == newest && forgedCheckpoint.message.contains("forged"))
        #expect(try await chain.status().problem?.contains("forged") == true)
        try await Self.sql(server, "DELETE FROM audit_checkpoints WHERE seq = \(newest)")
        try await Self.sql(server, "INSERT INTO audit_checkpoints SELECT * FROM checkpoint_aside")
        #expect((try? await Self.verify(server).get()) != nil)
    }

    @Test(
        "The API exports a verifiable range with the key to check it; pruning stops at a checkpoint and the rest still verifies",
        arguments: Backend.all)
    func exportAndRetention(backend: Backend) async throws {
        let server = try await Self.server(backend)
        let store = server.store
        defer { Task { try? await store.shutdown() } }
        try await Self.write(server, count: 8, prefix: "old")
        try await Services(server.environment).auditChain.sealPending()
        server.clock.advance(by: 3 * 86_400)
        try await Self.write(server, count: 9, prefix: "new")
        let started = server.clock.now
        let frozen = server
        try await frozen.live { client in
            // The live sealer links the new rows.
            let deadline = ContinuousClock.now + .seconds(60)
            var state = try await frozen.operatorCall(client, "GET", "/api/v1/audit/chain", as: AuditChainInfo.self)
            while state.unsealed > 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                state = try await frozen.operatorCall(client, "GET", "/api/v1/audit/chain", as: AuditChainInfo.self)
            }
            #expect(state.unsealed == 0 && state.problem == nil && (state.verified ?? 0) > 0, "\(state)")
            let key = try await frozen.operatorCall(client, "GET", "/api/v1/audit/key", as: AuditKeyInfo.self)
            let publicKey = try ECPublicKey(pemRepresentation: key.publicKeyPem)
            #expect(key.fingerprint == state.keyFingerprint)

            func export(_ query: String) async throws -> String {
                let response = try await client.send(
                    "GET", "/api/v1/audit/export\(query)", headers: ["Authorization": "Bearer \(frozen.apiKey)"])
                guard response.status == 200 else { throw TestFailure("export: \(response.status) \(response.text)") }
                #expect(response.header("Content-Type")?.hasPrefix("application/x-ndjson") == true)
                return response.text
            }
            let all = try AuditChain.verify(export: try await export(""), key: publicKey).get()
            // The export signs its newest rows first.
            #expect(all.unsignedRows == 0 && all.firstSeq == 1 && all.lastSeq == all.signedThrough, "\(all)")
            // Only the new rows: widened back to the checkpoint that anchors them.
            let since = started.addingTimeInterval(-1).formatted(.iso8601)
            let recent = try AuditChain.verify(export: try await export("?from=\(since)"), key: publicKey).get()
            #expect((recent.firstSeq ?? 0) > 1 && recent.lastSeq == all.lastSeq && recent.rows < all.rows, "\(recent)")
            let bad = try await client.send(
                "GET", "/api/v1/audit/export?from=yesterday", headers: ["Authorization": "Bearer \(frozen.apiKey)"])
            #expect(bad.status == 400)

            // Retention: rows older than two days go, only up to the last checkpoint among them. (PostgreSQL drops
            // whole ranges of the chain, then the rows up to the next checkpoint: here the empty range before the
            // first row and the rows up to the first checkpoint; AuditPartitionTests has the rest.)
            var pruning = frozen.environment
            pruning.audit.retention = .seconds(2 * 86_400)
            try await Services(pruning).auditChain.prune()
            let first = try #require(try await frozen.store.firstAuditSeq())
            let anchor = try #require(try await frozen.store.auditCheckpoint(atOrBelow: first - 1))
            #expect(first > 1 && anchor.seq == first - 1)
            let pruned = try AuditChain.verify(export: try await export(""), key: publicKey).get()
            #expect(pruned.firstSeq == first && pruned.signedThrough == pruned.lastSeq)
        }
    }

    @Test("Two server processes writing audit rows at once on PostgreSQL give one verifiable chain")
    func twoProcesses() async throws {
        let first = try await Self.server(.postgres)
        var second = try await first.sibling()
        second.environment.audit = first.environment.audit
        let sibling = second
        defer {
            Task {
                await first.shutdown()
                await sibling.shutdown()
            }
        }
        try await first.live { _ in
            try await sibling.live { _ in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (server, name) in [(first, "one"), (sibling, "two")] {
                        for lane in 0..<4 {
                            group.addTask { try await Self.write(server, count: 50, prefix: "\(name)-\(lane)") }
                        }
                    }
                    try await group.waitForAll()
                }
                let deadline = ContinuousClock.now + .seconds(30)
                while try await first.store.unsealedAuditCount() > 0, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(try await first.store.unsealedAuditCount() == 0)
            }
        }
        let report = try await Self.verify(first).get()
        let total = try await first.store.database.raw("SELECT COUNT(*) AS n FROM audit_events").first()?
            .decode(column: "n", as: Int64.self)
        #expect(report.rows == Int(total ?? -1) && report.rows >= 400 && report.firstSeq == 1)
        #expect(Int64(report.rows) == report.lastSeq)
    }

    @Test(
        "assent admin audit export and key, then assent audit verify offline: an intact export passes, a changed byte fails naming the row"
    )
    func cli() async throws {
        try await CLITests.withServer("audit-chain", arguments: ["--audit-checkpoint-rows", "3"]) { work, _, printed in
            let environment = try CLITests.connection(printed)
            for user in ["alice", "bob", "carol"] {
                let created = try await CLITests.run(
                    ["admin", "activation", "create", "--user", user], environment: environment)
                #expect(created.status == 0, "\(created.errors)")
            }
            var state = try await CLITests.admin(["audit", "chain"], environment: environment, as: AuditChainInfo.self)
            for _ in 0..<100 where state.unsealed > 0 || state.sealedThrough == nil {
                try await Task.sleep(for: .milliseconds(100))
                state = try await CLITests.admin(["audit", "chain"], environment: environment, as: AuditChainInfo.self)
            }
            #expect(state.unsealed == 0 && (state.sealedThrough ?? 0) >= 3 && state.problem == nil)
            let table = try await CLITests.run(["admin", "audit", "chain"], environment: environment)
            #expect(table.output.contains("sealedThrough") && table.output.contains(state.keyFingerprint))
            // The list is still the default of `assent admin audit`.
            let listed = try await CLITests.run(["admin", "audit", "--user", "bob"], environment: environment)
            #expect(listed.status == 0 && listed.output.contains("activation.created"), "\(listed.errors)")
            // Filtered by type and time, and paged with --before the last id shown.
            let created = try await CLITests.admin(
                ["audit", "--type", "activation.", "--from", "2020-01-01", "--limit", "2"], environment: environment,
                as: AuditList.self)
            #expect(created.events.map(\.userId) == ["carol", "bob"], "\(created.events)")
            let next = try await CLITests.admin(
                ["audit", "--type", "activation.", "--before", String(try #require(created.events.last?.id))],
                environment: environment, as: AuditList.self)
            #expect(next.events.map(\.userId) == ["alice"], "\(next.events)")
            let none = try await CLITests.admin(
                ["audit", "--type", "activation.", "--to", "2020-01-01"], environment: environment, as: AuditList.self)
            #expect(none.events.isEmpty)
            let wrong = try await CLITests.run(["admin", "audit", "--type", "Activation"], environment: environment)
            #expect(wrong.status == 2 && wrong.errors.contains("lower-case letters"), "\(wrong.errors)")

            let key = try await CLITests.run(["admin", "audit", "key"], environment: environment)
            #expect(key.status == 0 && key.output.hasPrefix("-----BEGIN PUBLIC KEY-----"))
            #expect(key.errors.contains(state.keyFingerprint))
            let keyFile = work.appendingPathComponent("audit-public.pem")
            try Data(key.output.utf8).write(to: keyFile)
            let export = try await CLITests.run(
                ["admin", "audit", "export", "--from", "2020-01-01", "--to", "2100-01-01"], environment: environment)
            #expect(export.status == 0, "\(export.errors)")
            let exportFile = work.appendingPathComponent("audit.jsonl")
            try Data(export.output.utf8).write(to: exportFile)

            let verified = try await CLITests.run(["audit", "verify", exportFile.path, "--key", keyFile.path])
            #expect(verified.status == 0, "\(verified.errors)")
            #expect(verified.output.hasPrefix("Verified: rows 1…") && verified.output.contains("signed through row"))
            let fromInput = try await CLITests.run(
                ["audit", "verify", "-", "--key", keyFile.path, "--json"], input: export.output)
            #expect(fromInput.status == 0 && fromInput.output.contains(#""valid":true"#), "\(fromInput.errors)")

            // One changed byte in row 2's detail.
            var lines = export.output.split(separator: "\n").map(String.init)
            let index = try #require(lines.firstIndex { $0.contains(#""seq":2,"#) && $0.contains(#""kind":"row""#) })
            lines[index] = lines[index].replacingOccurrences(of: #""detail":"A"#, with: #""detail":"a"#)
            #expect(lines[index] != export.output.split(separator: "\n").map(String.init)[index])
            let tampered = work.appendingPathComponent("tampered.jsonl")
            try Data(lines.joined(separator: "\n").utf8).write(to: tampered)
            let refused = try await CLITests.run(["audit", "verify", tampered.path, "--key", keyFile.path])
            #expect(refused.status == 1)
            #expect(
                refused.errors.contains("AUDIT_CHAIN_BROKEN")
                    && refused.errors.contains("row 2: the row's content was changed"), "\(refused.errors)")
            // Another key: the checkpoints do not verify.
            let otherKey = work.appendingPathComponent("other.pem")
            try Data(ECPrivateKey().publicKey.pemRepresentation.utf8).write(to: otherKey)
            let wrongKey = try await CLITests.run(["audit", "verify", exportFile.path, "--key", otherKey.path])
            #expect(wrongKey.status == 1 && wrongKey.errors.contains("forged or altered"), "\(wrongKey.errors)")
            let usage = try await CLITests.run(["audit", "verify", exportFile.path, "--key", exportFile.path])
            #expect(usage.status == 2 && usage.errors.contains("not a P-256 public key"))
        }
    }
}
