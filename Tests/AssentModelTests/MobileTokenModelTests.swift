import AssentCrypto
import AssentModel
import Foundation
import Testing

@Suite("Mobile Token wire types")
struct MobileTokenModelTests {
    @Test("Wire values from a known set keep an unknown value as sent, and write it back unchanged")
    func openEnums() throws {
        let allowed = try JSONDecoder().decode(
            AllowedSignatureType.self, from: Data(#"{"type":"3FA","variants":["possession_knowledge"]}"#.utf8))
        #expect(allowed.type == .unknown("3FA") && allowed.type.known == nil)
        #expect(String(decoding: try JSONEncoder().encode(allowed.type), as: UTF8.self) == #""3FA""#)
        let two = try JSONDecoder().decode(AllowedSignatureType.self, from: Data(#"{"type":"2FA","variants":[]}"#.utf8))
        #expect(two.type == .two && two.type == .known(.two) && two.type.rawValue == "2FA")
        #expect(
            AllowedSignatureType.oneFactor.allowsBiometry
                && !AllowedSignatureType(type: .ecdsa, variants: []).allowsBiometry)

        let check = try JSONDecoder().decode(
            OpenEnum<ProximityCheck.Source>.self, from: Data(#""NFC""#.utf8))
        #expect(check == .unknown("NFC"))
        #expect(OpenEnum<ProximityCheck.Source>(rawValue: "QR_CODE") == .qrCode)
        let key = try JSONDecoder().decode(
            OfflineQRRequest.self, from: Data(#"{"keyType":"shared","activationId":null}"#.utf8))
        #expect(key.keyType.rawValue == "shared" && key.keyType.known == nil)
    }

    @Test("Form data decodes leniently: unknown types become UNKNOWN, broken attributes are dropped")
    func lenientAttributes() throws {
        let json = #"""
            {"title": "T", "message": "M", "attributes": [
              {"type": "KEY_VALUE", "id": "a", "label": "A", "value": "v"},
              {"type": "HOLOGRAM", "id": "b", "label": "B", "depth": 3},
              {"type": "AMOUNT", "id": "c", "label": "C"},
              {"type": "NOTE", "id": "d", "label": "D", "note": 12},
              42,
              {"type": "HEADING", "id": "e", "label": "E"}
            ]}
            """#
        let form = try JSONDecoder().decode(FormData.self, from: Data(json.utf8))
        #expect(form.attributes.map(\.id) == ["a", "b", "e"])
        #expect(form.attributes[1].type == "UNKNOWN" && form.attributes[1].label == "B")
        #expect(form.attributes[1].kind == .unknown)

        // A server decodes strictly so that validation sees and refuses the broken attribute.
        let strict = JSONDecoder()
        strict.userInfo[FormData.strictAttributes] = true
        #expect(throws: (any Error).self) { try strict.decode(FormData.self, from: Data(json.utf8)) }
        let incomplete = #"{"title":"T","message":"M","attributes":[{"type":"AMOUNT","id":"c","label":"C"}]}"#
        let kept = try strict.decode(FormData.self, from: Data(incomplete.utf8))
        #expect(throws: OperationDataError.self) { try kept.attributes[0].validate() }
    }

    @Test("Amounts are 0 or of a magnitude from 1e-38 to 1e38, the bounds the OpenAPI document states")
    func amountBounds() throws {
        func attribute(_ amount: String) throws -> OperationAttribute {
            let json = #"{"type":"AMOUNT","id":"a","amount":"# + amount + #","currency":"EUR"}"#
            return try JSONDecoder().decode(OperationAttribute.self, from: Data(json.utf8))
        }
        for accepted in ["0", "-0", "1e38", "-1e38", "1e-38", "-1e-38", "1492.50", "0.000001"] {
            #expect(throws: Never.self, "\(accepted)") { try attribute(accepted).validate() }
        }
        for refused in ["1.0000001e38", "-1e39", "9.9e-39", "1e-100", "1e100"] {
            #expect(throws: OperationDataError.self, "\(refused)") { try attribute(refused).validate() }
        }
    }

    @Test("Timestamps are yyyy-MM-dd'T'HH:mm:ss+0000 and parse in every ISO 8601 offset form")
    func timestamps() throws {
        let date = Date(timeIntervalSince1970: 1_530_542_593.9)
        #expect(MobileTokenJSON.timestamp(date) == "2018-07-02T14:43:13+0000")
        for text in ["2018-07-02T14:43:13+0000", "2018-07-02T14:43:13Z", "2018-07-02T16:43:13+02:00"] {
            #expect(MobileTokenJSON.parseTimestamp(text) == Date(timeIntervalSince1970: 1_530_542_593))
        }
        #expect(MobileTokenJSON.parseTimestamp("2018-07-02T14:43:13.250Z")?.timeIntervalSince1970 == 1_530_542_593.25)
        #expect(MobileTokenJSON.parseTimestamp("yesterday") == nil)
    }

    @Test("Proximity codes read from deeplinks (potp or totp), code= JWTs and bare JWTs")
    func proximityCodes() throws {
        let code = ProximityCode(operationId: "op-1", totp: "12345678")
        #expect(code.deeplink(scheme: "bank") == "bank://operation?oid=op-1&potp=12345678")
        #expect(code.jwt.hasPrefix("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0."))
        #expect(ProximityCode(parsing: code.jwt) == code)
        #expect(ProximityCode(parsing: "bank://operation?oid=op-1&totp=12345678") == code)
        #expect(ProximityCode(parsing: "bank://operation?code=\(code.jwt)") == code)
        #expect(ProximityCode(parsing: "bank://operation?oid=op-1") == nil)
        // An operation id is required in a deeplink as in a JWT (found by the device-texts fuzzer).
        #expect(ProximityCode(parsing: "bank://operation?oid=&potp=12345678") == nil)
        #expect(ProximityCode(parsing: "not a code") == nil)
    }

    @Test("Templates fill placeholders, typed when alone, escaped inside operation data")
    func templateSubstitution() throws {
        let body: [String: JSONValue] = [
            "data": .string("A1*A{amount}EUR*N{note}"),
            "formData": .object([
                "en": .object([
                    "title": .string("Pay {amount} EUR {unknown-brace}"),
                    "attributes": .array([.object(["amount": .string("{amount}")])]),
                ])
            ]),
        ]
        let filled = try OperationTemplate.instantiate(
            body, params: ["amount": .number(Decimal(string: "12.5")!), "note": .string("a*b")])
        #expect(filled["data"] == .string(#"A1*A12.5EUR*Na\*b"#))
        guard case .object(let forms) = filled["formData"], case .object(let english) = forms["en"],
            case .array(let attributes) = english["attributes"], case .object(let amount) = attributes[0]
        else { throw TestFailure("unexpected shape") }
        #expect(english["title"] == .string("Pay 12.5 EUR {unknown-brace}"))
        #expect(amount["amount"] == .number(Decimal(string: "12.5")!))
        #expect(throws: OperationDataError.self) { try OperationTemplate.instantiate(body, params: [:]) }
        #expect(throws: OperationDataError.self) { try OperationTemplate.validate(["userId": .string("x")]) }
    }

    @Test("Any JSON number a double can hold is a JSON value, kept exactly where Decimal can hold it")
    func numbersBeyondDecimal() throws {
        let json = #"[12.5, 1e200, -1.5e-300, 2.225073858507e-311, 184467440737095516150]"#
        let values = try JSONDecoder().decode([JSONValue].self, from: Data(json.utf8))
        #expect(
            values == [
                .number(Decimal(string: "12.5")!), .double(1e200), .double(-1.5e-300),
                .double(Double("2.225073858507e-311")!),
                .number(Decimal(string: "184467440737095516150")!),
            ])
        let again = try JSONDecoder().decode([JSONValue].self, from: try JSONEncoder().encode(values))
        #expect(again == values)
        #expect(values[1].text == "1e+200")
        // Beyond a double, the value is refused rather than changed.
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([JSONValue].self, from: Data("[1e400]".utf8)) }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
