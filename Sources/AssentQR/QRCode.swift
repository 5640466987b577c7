/// How much of a QR code may be damaged and still read: about 7 %, 15 %, 25 % or 30 % of its codewords.
public enum QRErrorCorrection: Int, Sendable, CaseIterable, Comparable {
    case low = 0
    case medium
    case quartile
    case high

    /// The two bits the format information carries (not in L, M, Q, H order).
    var formatBits: Int {
        switch self {
        case .low: 1
        case .medium: 0
        case .quartile: 3
        case .high: 2
        }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Why a QR code could not be made.
public enum QRCodeError: Error, Equatable, CustomStringConvertible {
    /// The data does not fit in a version-40 symbol at the requested level.
    case dataTooLong(bytes: Int, capacity: Int)
    /// A mask outside 0…7, or a version outside 1…40, was asked for.
    case invalidParameter(String)

    public var description: String {
        switch self {
        case .dataTooLong(let bytes, let capacity):
            "\(bytes) bytes do not fit in a QR code at this error-correction level (at most \(capacity))."
        case .invalidParameter(let text): text
        }
    }
}

/// A QR code symbol (ISO/IEC 18004 Model 2) holding bytes in byte mode: versions 1–40, levels L/M/Q/H, the mask
/// with the lowest penalty unless one is given.
///
/// Readers assume ISO-8859-1 or sniff UTF-8 for byte mode; keep payloads ASCII (percent-encode URIs).
public struct QRCode: Sendable, Equatable {
    /// 1 … 40.
    public let version: Int
    /// The level actually used (it may be higher than asked when the data still fits; see `boostErrorCorrection`).
    public let errorCorrection: QRErrorCorrection
    /// 0 … 7.
    public let mask: Int
    /// Modules per side: 4 · version + 17.
    public let size: Int
    private let modules: [Bool]

    /// Whether the module in column `x`, row `y` is dark; (0, 0) is the top-left corner. Outside the symbol (the
    /// quiet zone) is light.
    public subscript(x: Int, y: Int) -> Bool {
        guard (0..<size).contains(x), (0..<size).contains(y) else { return false }
        return modules[y * size + x]
    }

    /// Encodes `text` as its UTF-8 bytes.
    public init(
        text: String, errorCorrection: QRErrorCorrection = .medium, boostErrorCorrection: Bool = true,
        mask: Int? = nil
    ) throws {
        try self.init(
            bytes: Array(text.utf8), errorCorrection: errorCorrection, boostErrorCorrection: boostErrorCorrection,
            mask: mask)
    }

    /// Encodes `bytes` in the smallest version that holds them at `errorCorrection`; with `boostErrorCorrection`
    /// the level is raised while the data still fits that version.
    public init(
        bytes: [UInt8], errorCorrection: QRErrorCorrection = .medium, boostErrorCorrection: Bool = true,
        mask: Int? = nil
    ) throws {
        if let mask, !(0...7).contains(mask) {
            throw QRCodeError.invalidParameter("A QR mask is 0 to 7.")
        }
        func usedBits(_ version: Int) -> Int { 4 + Self.countBits(version) + 8 * bytes.count }
        guard
            let version = (1...40).first(where: {
                usedBits($0) <= QRTables.dataCodewords($0, errorCorrection) * 8
            })
        else {
            throw QRCodeError.dataTooLong(bytes: bytes.count, capacity: Self.capacity(version: 40, errorCorrection))
        }
        var level = errorCorrection
        if boostErrorCorrection {
            for higher in QRErrorCorrection.allCases
            where higher > level && usedBits(version) <= QRTables.dataCodewords(version, higher) * 8 {
                level = higher
            }
        }
        let codewords = Self.codewords(bytes: bytes, version: version, level: level)
        var matrix = QRMatrix(version: version)
        matrix.drawFunctionPatterns(level: level)
        matrix.drawCodewords(codewords)
        let chosen = mask ?? matrix.bestMask(level: level)
        matrix.applyMask(chosen)
        matrix.drawFormatBits(level: level, mask: chosen)
        self.version = version
        self.errorCorrection = level
        self.mask = chosen
        self.size = matrix.size
        self.modules = matrix.modules
    }

    /// How many bytes a symbol of `version` holds at `errorCorrection`.
    public static func capacity(version: Int, _ errorCorrection: QRErrorCorrection) -> Int {
        (QRTables.dataCodewords(version, errorCorrection) * 8 - 4 - countBits(version)) / 8
    }

    /// The width of the byte-mode character count: 8 bits up to version 9, 16 bits above.
    static func countBits(_ version: Int) -> Int { version <= 9 ? 8 : 16 }

    /// The data codewords (mode, count, bytes, terminator, padding) split into blocks, each followed by its
    /// Reed–Solomon codewords, interleaved in the order they are placed.
    static func codewords(bytes: [UInt8], version: Int, level: QRErrorCorrection) -> [UInt8] {
        let capacity = QRTables.dataCodewords(version, level)
        var bits = BitBuffer()
        bits.append(0b0100, count: 4)
        bits.append(bytes.count, count: countBits(version))
        for byte in bytes { bits.append(Int(byte), count: 8) }
        bits.append(0, count: min(4, capacity * 8 - bits.count))
        bits.append(0, count: (8 - bits.count % 8) % 8)
        var data = bits.bytes
        var pad: UInt8 = 0xEC
        while data.count < capacity {
            data.append(pad)
            pad ^= 0xEC ^ 0x11
        }

        let blockCount = QRTables.errorCorrectionBlocks[level.rawValue][version]
        let eccLength = QRTables.eccCodewordsPerBlock[level.rawValue][version]
        let raw = QRTables.rawDataModules(version) / 8
        let shortBlocks = blockCount - raw % blockCount
        let shortLength = raw / blockCount
        let divisor = ReedSolomon.divisor(degree: eccLength)
        var blocks: [(data: ArraySlice<UInt8>, ecc: [UInt8])] = []
        var start = data.startIndex
        for index in 0..<blockCount {
            let length = shortLength - eccLength + (index < shortBlocks ? 0 : 1)
            let slice = data[start..<start + length]
            start += length
            blocks.append((slice, ReedSolomon.remainder(slice, divisor: divisor)))
        }
        var result: [UInt8] = []
        result.reserveCapacity(raw)
        for offset in 0...(shortLength - eccLength) {
            for block in blocks where offset < block.data.count {
                result.append(block.data[block.data.startIndex + offset])
            }
        }
        for offset in 0..<eccLength {
            for block in blocks { result.append(block.ecc[offset]) }
        }
        return result
    }
}

/// Bits appended most significant first, read back as bytes.
struct BitBuffer {
    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    mutating func append(_ value: Int, count width: Int) {
        for bit in stride(from: width - 1, through: 0, by: -1) {
            if count % 8 == 0 { bytes.append(0) }
            if (value >> bit) & 1 == 1 { bytes[bytes.count - 1] |= 0x80 >> UInt8(count % 8) }
            count += 1
        }
    }
}
