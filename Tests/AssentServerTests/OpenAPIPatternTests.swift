import AssentModel
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// The OpenAPI document states some of the server's input rules as patterns; these tests hold the two together, so
/// a client generated from the document (or a tester such as schemathesis) sends what the server accepts.
@Suite("OpenAPI patterns agree with the server")
struct OpenAPIPatternTests {
    static func property(_ schema: String, _ name: String) throws -> [String: Any] {
        let document = try JSONSerialization.jsonObject(with: OpenAPIDocument.json) as? [String: Any]
        let schemas = (document?["components"] as? [String: Any])?["schemas"] as? [String: Any]
        let properties = (schemas?[schema] as? [String: Any])?["properties"] as? [String: Any]
        guard let property = properties?[name] as? [String: Any] else {
            throw TestFailure("\(schema).\(name) is not in the document")
        }
        return property
    }

    /// An ECMA-262 pattern as a Swift regex, which spells `\uHHHH` as `\u{HHHH}`.
    static func regex(_ pattern: String) throws -> Regex<AnyRegexOutput> {
        let swift = pattern.replacing(try Regex(#"\\u([0-9a-fA-F]{4})"#)) { #"\u{"# + $0.output[1].substring! + "}" }
        return try Regex(swift).matchingSemantics(.unicodeScalar)
    }

    @Test("The notification endpoint: the document's length is the server's; the syntax before the egress policy")
    func notificationEndpoint() throws {
        let property = try Self.property("CreateClientRequest", "notificationEndpoint")
        #expect(property["maxLength"] as? Int == ClientService.endpointMaximumLength)
        for accepted in [
            "https://bank.example/ciba/callback?tenant=a&x=%20", "https://10.0.0.1:65535/a", "https://b-1.example",
            "http://127.0.0.1:8080/cb", "http://localhost/cb", "http://[::1]:9/", "https://x/a/b;c=d/@:!$'()*+,",
        ] {
            #expect((try? ClientService.validatedEndpoint(accepted)) == accepted, "\(accepted)")
        }
        for refused in [
            "", "http://example.com/cb", "https://a/#fragment", "https://a:65536", "https://a:0", "https://a/%zz",
            "ftp://a", "https://bänk.example", "HTTPS://a", "https://a\n", "https:///path", "https://a b",
            "http://localhost.example/cb", "https://" + String(repeating: "a", count: 2_041),
        ] {
            #expect(throws: AssentServerError.self, "\(refused)") { try ClientService.validatedEndpoint(refused) }
        }
    }

    @Test("Destinations others choose: the document states what a server without --egress-allow takes")
    func destinations() async throws {
        let pattern = ClientService.documentedDestinationPattern
        #expect(try Self.property("CreateClientRequest", "notificationEndpoint")["pattern"] as? String == pattern)
        #expect(try Self.property("CreateClientRequest", "backchannelLogoutUri")["pattern"] as? String == pattern)
        #expect(try Self.property("SetApplicationWebhookRequest", "url")["pattern"] as? String == pattern)
        let regex = try Self.regex(pattern)
        // The server's default: no network allowed (names resolve nowhere here: they are checked again at delivery).
        let egress = Egress(resolve: TestServer.offlineResolve)
        func serverTakes(_ url: String) async -> Bool {
            guard (try? ClientService.validatedEndpoint(url)) != nil else { return false }
            return (try? await egress.check(url)) != nil
        }
        for refused in [
            "http://127.0.0.1:8080/cb", "http://localhost/cb", "https://localhost/x", "https://a.LocalHost:8/x",
            "https://LOCALHOST", "https://10.0.0.1/x", "https://0x7f000001/x", "https://2130706433/", "https://0/",
            "https://127.1/", "https://[::1]/", "http://bank.example/cb",
        ] {
            #expect(refused.wholeMatch(of: regex) == nil, "\(refused)")
            #expect(await !serverTakes(refused) || !refused.hasPrefix("http:"), "\(refused)")
        }
        // Whatever the pattern matches, the default server takes.
        let pieces = [
            "a", "Z", "0", "9", "-", ".", "x1", "0x7f", "localhost", "LocalHost", "127", "1", ":", ":443", ":0",
            ":65536", "/", "/cb", "?", "?a=b", "%20", "%zz", "#", "@", "example", "com", "local", "host",
        ]
        var generator = SeededGenerator(seed: 0xDE57)
        var matched = 0
        for _ in 0..<20_000 {
            var url = ["https://", "http://", "https://x."].randomElement(using: &generator)!
            for _ in 0..<Int.random(in: 1...6, using: &generator) { url += pieces.randomElement(using: &generator)! }
            guard url.wholeMatch(of: regex) != nil else { continue }
            matched += 1
            #expect(await serverTakes(url), "the document allows \(url), the server refuses it")
        }
        #expect(matched > 1_000)
    }

    @Test("Audit times: RFC 3339 date-time and full-date exactly, as the document's formats mean them")
    func rfc3339() {
        for (text, seconds) in [
            ("1985-04-12T23:20:50.52Z", 482_196_050.52), ("1996-12-19T16:39:57-08:00", 851_042_397),
            ("1990-12-31T23:59:60Z", 662_688_000), ("1990-12-31T15:59:60-08:00", 662_688_000),
            ("1937-01-01T12:00:27.87+00:20", -1_041_337_172.13), ("2026-11-26", 1_795_651_200),
            ("2024-02-29t00:00:00z", 1_709_164_800), ("0000-01-01", -62_167_219_200),
        ] as [(String, Double)] {
            let parsed = RFC3339.parse(text)?.timeIntervalSince1970
            #expect(parsed.map { abs($0 - seconds) < 0.001 } == true, "\(text): \(String(describing: parsed))")
        }
        for text in [
            "2026-02-29", "2026-13-01", "2026-00-10", "2026-04-31", "2026-11-26T24:00:00Z", "2026-11-26 10:00:00Z",
            "2026-11-26T10:00:00", "2026-11-26T10:00Z", "2026-11-26T10:00:00.Z", "2026-11-26T10:00:00+0100",
            "2026-11-26T10:00:61Z", "2026-11-26T10:00:00+24:00", "26-11-26", "2026-11-26Z", "2026-11-26T10:00:00Zx",
            "", "yesterday", "２０２６-11-26",
        ] {
            #expect(RFC3339.parse(text) == nil, "\(text)")
        }
    }

    @Test("Operation data: the parser accepts only what the pattern matches, and every match but a wrong IBAN or date")
    func operationData() throws {
        let property = try Self.property("CreateOperationRequest", "data")
        let pattern = try #require(property["pattern"] as? String)
        #expect(property["maxLength"] as? Int == OperationData.maximumLength)
        #expect(property["format"] as? String == "operation-data")
        let regex = try Self.regex(pattern)
        // Pieces that make up valid fields, near misses and the characters the grammar singles out.
        let pieces = [
            "A", "I", "D", "T", "N", "Q", "R", "x", "B", "*", "*", "*", "\\", "\\n", "\\*", "\\\\", "1", "0", "99",
            "100", ".", ".5", "CZK", "EUR", "CZ2730300000001165254011", "CZ2730300000001165254012", "DE89", ",",
            "KOMBCZPP", "KOMBCZPPXXX", "\u{301}", "é", "\n", "\u{7F}", " ", "20180425", "20180231", "00000101", "A1",
            "Z9", "*A100CZK", "*ICZ2730300000001165254011", "*D20260131", "*Thello",
        ]
        var generator = SeededGenerator(seed: 0x5EED_0DA7)
        var matched = 0
        var parsed = 0
        for _ in 0..<30_000 {
            // Mostly a header and fields built from the pieces; sometimes pieces alone.
            var text = ["A1", "A0", "Z99", "A100", "a1", "A", "B7"].randomElement(using: &generator)!
            if Int.random(in: 0..<10, using: &generator) == 0 { text = "" }
            for _ in 0..<Int.random(in: 0...7, using: &generator) {
                text += "*"
                for _ in 0..<Int.random(in: 0...3, using: &generator) {
                    text += pieces.randomElement(using: &generator)!
                }
            }
            let matches = text.wholeMatch(of: regex) != nil
            do {
                _ = try OperationData(parsing: text)
                parsed += 1
                #expect(matches, "the parser accepts \(text.debugDescription), the pattern does not")
            } catch let error as OperationDataError {
                if matches {
                    matched += 1
                    #expect(
                        error.message.contains("IBAN") || error.message.contains("real date"),
                        "the pattern matches \(text.debugDescription), the parser refuses it: \(error.message)")
                }
            }
        }
        // The generator reaches both sides often enough for the comparison to mean something.
        #expect(parsed > 1_000)
        #expect(matched > 20)
    }
}

extension OpenAPIPatternTests {
    @Test("User ids: every request that takes one states the server's one rule, and the pattern is that rule")
    func userIds() throws {
        for schema in [
            "CreateActivationRequest", "CreateOperationRequest", "CreateTFAAccountRequest", "StartTFALoginRequest",
        ] {
            let property = try Self.property(schema, "userId")
            #expect(property["pattern"] as? String == UserID.pattern, "\(schema)")
            #expect(property["maxLength"] as? Int == UserID.maximumLength, "\(schema)")
            #expect(property["minLength"] as? Int == 1, "\(schema)")
        }
        let regex = try Self.regex(UserID.pattern)
        func documented(_ id: String) -> Bool {
            id.wholeMatch(of: regex) != nil && (1...UserID.maximumLength).contains(id.unicodeScalars.count)
        }
        for accepted in [
            "alice", "a", "Jan Novák", "user@example.com", "a b", "e\u{301}", "😀", String(repeating: "x", count: 255),
        ] {
            #expect(UserID.isValid(accepted) && documented(accepted), "\(accepted.debugDescription)")
        }
        for refused in [
            "", " alice", "alice ", "\u{A0}a", "a\u{3000}", "\u{FEFF}a", "a\tb", "a\nb", "a\u{0}", "a\u{85}b",
            "\u{2003}",
            String(repeating: "x", count: 256),
        ] {
            #expect(!UserID.isValid(refused) && !documented(refused), "\(refused.debugDescription)")
        }
        let pieces = [
            "a", "Z", "0", " ", "\t", "\n", "\u{0}", "\u{7F}", "\u{85}", "\u{9F}", "\u{A0}", "\u{A1}", "é", "\u{301}",
            "\u{1680}", "\u{2000}", "\u{200A}", "\u{200B}", "\u{2028}", "\u{202F}", "\u{205F}", "\u{3000}", "\u{FEFF}",
            "😀", "@", String(repeating: "y", count: 120),
        ]
        var generator = SeededGenerator(seed: 0x05E2_1D)
        var valid = 0
        for _ in 0..<20_000 {
            var id = ""
            for _ in 0..<Int.random(in: 0...5, using: &generator) { id += pieces.randomElement(using: &generator)! }
            let accepted = UserID.isValid(id)
            valid += accepted ? 1 : 0
            #expect(accepted == documented(id), "\(id.debugDescription): server \(accepted), document \(!accepted)")
        }
        #expect(valid > 2_000 && valid < 18_000)
    }
}

extension OpenAPIPatternTests {
    @Test(
        "Display names: API key, client and application names are 1 to 100 characters as sent, not only spaces, in both places"
    )
    func displayNames() throws {
        for schema in ["CreateAPIKeyRequest", "CreateClientRequest", "UpdateApplicationRequest"] {
            let property = try Self.property(schema, "name")
            #expect(property["pattern"] as? String == InputText.displayNamePattern, "\(schema)")
            #expect(property["maxLength"] as? Int == InputText.displayNameMaximumLength, "\(schema)")
        }
        // JSON Schema patterns are unanchored: the name holds a character that is not a space.
        let regex = try Self.regex(InputText.displayNamePattern)
        func documented(_ name: String) -> Bool {
            name.contains(regex) && (1...InputText.displayNameMaximumLength).contains(name.unicodeScalars.count)
        }
        #expect(InputText.displayName("  ops key\u{3000}") == "ops key")
        #expect(InputText.displayName("\u{85}\u{FEFF}\u{2003}") == nil && !documented("\u{85}\u{FEFF}\u{2003}"))
        #expect(InputText.displayName("     " + String(repeating: "*", count: 99)) == nil)
        let pieces = [
            "a", " ", "\t", "\u{85}", "\u{A0}", "\u{FEFF}", "\u{200B}", "\u{2007}", "é",
            String(repeating: "n", count: 40),
        ]
        var generator = SeededGenerator(seed: 0xD15B_1A7)
        for _ in 0..<10_000 {
            var name = ""
            for _ in 0..<Int.random(in: 0...5, using: &generator) { name += pieces.randomElement(using: &generator)! }
            #expect((InputText.displayName(name) != nil) == documented(name), "\(name.debugDescription)")
        }
    }
}
