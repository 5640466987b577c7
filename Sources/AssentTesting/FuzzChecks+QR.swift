import Foundation

#if canImport(AssentQR)
    import AssentQR
#endif

extension FuzzChecks {
    /// QR encoding: the first 400 bytes encode at every level in the smallest version that holds them, with the
    /// side that version has, or are refused as too long only when no version holds them.
    @Sendable public static func qr(_ input: Data) throws {
        let bytes = Array(input.prefix(400))
        for level in QRErrorCorrection.allCases {
            let code: QRCode
            do {
                code = try QRCode(bytes: bytes, errorCorrection: level, boostErrorCorrection: false)
            } catch QRCodeError.dataTooLong {
                guard bytes.count > QRCode.capacity(version: 40, level) else {
                    throw Violation("\(bytes.count) bytes were refused at \(level) though version 40 holds them.")
                }
                continue
            }
            guard code.size == 4 * code.version + 17, code.errorCorrection == level, (0...7).contains(code.mask),
                bytes.count <= QRCode.capacity(version: code.version, level),
                code.version == 1 || bytes.count > QRCode.capacity(version: code.version - 1, level)
            else {
                throw Violation("\(bytes.count) bytes at \(level) gave version \(code.version), size \(code.size).")
            }
        }
    }
}
