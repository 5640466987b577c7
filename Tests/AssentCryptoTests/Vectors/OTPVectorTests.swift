import AssentCrypto
import Foundation
import Testing

@Suite("RFC vectors: HOTP and TOTP")
struct OTPVectorTests {
    struct HOTPVector: Decodable {
        let secretHex: String
        let counter: UInt64
        let digits: Int
        let algorithm: String
        let otp: String
    }

    struct TOTPVector: Decodable {
        let secretHex: String
        let secretBase32: String
        let unixTime: UInt64
        let period: Int
        let digits: Int
        let algorithm: String
        let otp: String
    }

    static func algorithm(_ name: String) throws -> OTPAlgorithm {
        guard let algorithm = OTPAlgorithm(rawValue: name) else { throw Mismatch(description: "algorithm \(name)") }
        return algorithm
    }

    @Test("rfc4226-hotp.json: RFC 4226 Appendix D")
    func hotp() {
        Vectors.run("otp/rfc4226-hotp.json", expected: 10, as: HOTPVector.self) { vector in
            let hotp = try HOTP(
                secret: Data(hex: vector.secretHex), digits: vector.digits,
                algorithm: try Self.algorithm(vector.algorithm))
            try require(hotp.code(counter: vector.counter), vector.otp, "HOTP")
            try require(hotp.validate(vector.otp, counter: 0, lookAhead: 10), vector.counter, "HOTP validation")
        }
    }

    @Test("rfc6238-totp.json: RFC 6238 Appendix B, SHA-1/256/512")
    func totp() {
        Vectors.run("otp/rfc6238-totp.json", expected: 18, as: TOTPVector.self) { vector in
            let secret = Data(hex: vector.secretHex)
            try require(try Base32.decode(vector.secretBase32), secret, "Base32 secret")
            try require(Base32.encode(secret), vector.secretBase32, "Base32 encoding")
            let totp = try TOTP(
                secret: secret, digits: vector.digits, algorithm: try Self.algorithm(vector.algorithm),
                period: vector.period)
            try require(totp.code(at: vector.unixTime), vector.otp, "TOTP")
            let step = vector.unixTime / UInt64(vector.period)
            try require(totp.validate(vector.otp, at: vector.unixTime + 30, past: 1, future: 0), step, "one step late")
            try require(totp.validate(vector.otp, at: vector.unixTime + 60, past: 1, future: 0), nil, "two steps late")
        }
    }
}
