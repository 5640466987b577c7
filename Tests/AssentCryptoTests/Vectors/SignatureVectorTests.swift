import AssentCrypto
import Foundation
import Testing

@Suite("Published vectors: signatures")
struct SignatureVectorTests {
    static func keys(_ vector: InputOutput) throws -> [Data] {
        let type = try SignatureType(parsing: try vector.input("signatureType"))
        return try type.factors.map { factor in
            switch factor {
            case .possession: try vector.inputData("signaturePossessionKey")
            case .knowledge: try vector.inputData("signatureKnowledgeKey")
            case .biometry: try vector.inputData("signatureBiometryKey")
            }
        }
    }

    static func check(_ vector: InputOutput, format: SignatureFormat) throws {
        let keys = try keys(vector)
        let counter = try HashCounter(base64: try vector.input("counterData"))
        let data = try vector.inputData("data")
        let expected = try vector.output("signature")
        let signature = try PowerAuthSignature.compute(data: data, counter: counter, keys: keys, format: format)
        try require(signature, expected, "signature")
        let match = try PowerAuthSignature.validate(
            expected, data: data, counter: counter, keys: keys, format: format, lookAhead: 1)
        try require(match?.offset, 0, "server-side validation offset")
    }

    @Test("signatures-v3.json: protocol 3.0 decimal signatures, 1FA to 3FA")
    func decimalV30() {
        Vectors.run("powerauth/signatures-v3.json", expected: 300, as: InputOutput.self) { vector in
            try Self.check(vector, format: .decimalV30)
        }
    }

    @Test("signatures-v31.json: protocol 3.1+ Base64 signatures, 1FA to 3FA")
    func base64V31() {
        Vectors.run("powerauth/signatures-v31.json", expected: 300, as: InputOutput.self) { vector in
            try Self.check(vector, format: .base64)
        }
    }

    @Test("signatures-offline.json: offline decimal signatures with 4 to 8 digits")
    func offline() {
        Vectors.run("powerauth/signatures-offline.json", expected: 200, as: InputOutput.self) { vector in
            guard let length = Int(try vector.input("signatureComponentLength")) else {
                throw Mismatch(description: "signatureComponentLength is not a number")
            }
            try Self.check(vector, format: .decimal(length: length))
        }
    }
}
