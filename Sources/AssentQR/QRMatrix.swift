/// The module grid while a symbol is built: function patterns, the zigzag placement of codewords, the masks and
/// their penalty scores.
struct QRMatrix {
    let version: Int
    let size: Int
    /// Row-major, `y * size + x`; true is dark.
    private(set) var modules: [Bool]
    /// Which modules belong to function patterns (never masked, never data).
    private var isFunction: [Bool]

    init(version: Int) {
        self.version = version
        size = version * 4 + 17
        modules = Array(repeating: false, count: size * size)
        isFunction = Array(repeating: false, count: size * size)
    }

    private mutating func setFunction(_ x: Int, _ y: Int, _ dark: Bool) {
        modules[y * size + x] = dark
        isFunction[y * size + x] = true
    }

    // MARK: Function patterns

    /// Timing, finders, alignment patterns, version information and a reserved format area.
    mutating func drawFunctionPatterns(level: QRErrorCorrection) {
        for index in 0..<size {
            setFunction(6, index, index % 2 == 0)
            setFunction(index, 6, index % 2 == 0)
        }
        drawFinder(3, 3)
        drawFinder(size - 4, 3)
        drawFinder(3, size - 4)
        let positions = QRTables.alignmentPositions(version)
        let last = positions.count - 1
        for (i, x) in positions.enumerated() {
            for (j, y) in positions.enumerated() {
                // The three corners that overlap a finder have none.
                if (i == 0 && j == 0) || (i == 0 && j == last) || (i == last && j == 0) { continue }
                drawAlignment(x, y)
            }
        }
        drawFormatBits(level: level, mask: 0)
        drawVersion()
    }

    /// A 7×7 finder with its light separator, centred at (x, y).
    private mutating func drawFinder(_ x: Int, _ y: Int) {
        for dy in -4...4 {
            for dx in -4...4 {
                let distance = max(abs(dx), abs(dy))
                let (column, row) = (x + dx, y + dy)
                if (0..<size).contains(column), (0..<size).contains(row) {
                    setFunction(column, row, distance != 2 && distance != 4)
                }
            }
        }
    }

    /// A 5×5 alignment pattern centred at (x, y).
    private mutating func drawAlignment(_ x: Int, _ y: Int) {
        for dy in -2...2 {
            for dx in -2...2 {
                setFunction(x + dx, y + dy, max(abs(dx), abs(dy)) != 1)
            }
        }
    }

    /// The 15 format bits: level and mask, a BCH(15,5) remainder, XOR 0x5412.
    static func formatBits(level: QRErrorCorrection, mask: Int) -> Int {
        let data = level.formatBits << 3 | mask
        var remainder = data
        for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
        return (data << 10 | remainder) ^ 0x5412
    }

    /// The 18 version bits: the version and a BCH(18,6) remainder.
    static func versionBits(_ version: Int) -> Int {
        var remainder = version
        for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25) }
        return version << 12 | remainder
    }

    /// Both copies of the 15-bit format information (level and mask, BCH-protected and masked), and the dark module.
    mutating func drawFormatBits(level: QRErrorCorrection, mask: Int) {
        let bits = Self.formatBits(level: level, mask: mask)
        func bit(_ index: Int) -> Bool { (bits >> index) & 1 == 1 }

        for index in 0...5 { setFunction(8, index, bit(index)) }
        setFunction(8, 7, bit(6))
        setFunction(8, 8, bit(7))
        setFunction(7, 8, bit(8))
        for index in 9..<15 { setFunction(14 - index, 8, bit(index)) }

        for index in 0..<8 { setFunction(size - 1 - index, 8, bit(index)) }
        for index in 8..<15 { setFunction(8, size - 15 + index, bit(index)) }
        setFunction(8, size - 8, true)
    }

    /// The 18-bit version information (versions 7 and up), below the top-right finder and right of the
    /// bottom-left one.
    private mutating func drawVersion() {
        guard version >= 7 else { return }
        let bits = Self.versionBits(version)
        for index in 0..<18 {
            let dark = (bits >> index) & 1 == 1
            let a = size - 11 + index % 3
            let b = index / 3
            setFunction(a, b, dark)
            setFunction(b, a, dark)
        }
    }

    // MARK: Data

    /// Places the codewords' bits, most significant first, in two-column strips zigzagging from the bottom right;
    /// the vertical timing column is skipped and the remainder bits stay light.
    mutating func drawCodewords(_ codewords: [UInt8]) {
        let bitCount = codewords.count * 8
        var index = 0
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 }
            let upward = (right + 1) & 2 == 0
            for vertical in 0..<size {
                for offset in 0..<2 {
                    let x = right - offset
                    let y = upward ? size - 1 - vertical : vertical
                    if !isFunction[y * size + x] && index < bitCount {
                        modules[y * size + x] = (codewords[index >> 3] >> (7 - UInt8(index & 7))) & 1 == 1
                        index += 1
                    }
                }
            }
            right -= 2
        }
    }

    // MARK: Masks

    /// Inverts every data module the pattern selects (applying a mask twice undoes it). x is the column, y the row.
    mutating func applyMask(_ mask: Int) {
        for y in 0..<size {
            for x in 0..<size where !isFunction[y * size + x] {
                let invert =
                    switch mask {
                    case 0: (x + y) % 2 == 0
                    case 1: y % 2 == 0
                    case 2: x % 3 == 0
                    case 3: (x + y) % 3 == 0
                    case 4: (x / 3 + y / 2) % 2 == 0
                    case 5: x * y % 2 + x * y % 3 == 0
                    case 6: (x * y % 2 + x * y % 3) % 2 == 0
                    default: ((x + y) % 2 + x * y % 3) % 2 == 0
                    }
                if invert { modules[y * size + x].toggle() }
            }
        }
    }

    /// The mask whose symbol scores the lowest penalty (the first on a tie).
    mutating func bestMask(level: QRErrorCorrection) -> Int {
        var best = (mask: 0, penalty: Int.max)
        for mask in 0..<8 {
            applyMask(mask)
            drawFormatBits(level: level, mask: mask)
            let penalty = penaltyScore()
            if penalty < best.penalty { best = (mask, penalty) }
            applyMask(mask)
        }
        return best.mask
    }

    /// The four penalty rules: runs of five or more, 2×2 blocks, finder-like patterns, and the dark/light balance.
    func penaltyScore() -> Int {
        var result = 0
        for line in 0..<size {
            result += linePenalty { modules[line * size + $0] }
            result += linePenalty { modules[$0 * size + line] }
        }
        for y in 0..<(size - 1) {
            for x in 0..<(size - 1) {
                let color = modules[y * size + x]
                if color == modules[y * size + x + 1] && color == modules[(y + 1) * size + x]
                    && color == modules[(y + 1) * size + x + 1]
                {
                    result += 3
                }
            }
        }
        let dark = modules.count(where: { $0 })
        let total = size * size
        let k = (abs(dark * 20 - total * 10) + total - 1) / total - 1
        result += k * 10
        return result
    }

    /// Rules 1 and 3 along one row or column; the area outside the symbol counts as light.
    private func linePenalty(_ module: (Int) -> Bool) -> Int {
        var result = 0
        var runColor = false
        var runLength = 0
        var history = FinderHistory(size: size)
        for position in 0..<size {
            let color = module(position)
            if color == runColor {
                runLength += 1
                if runLength == 5 {
                    result += 3
                } else if runLength > 5 {
                    result += 1
                }
            } else {
                history.add(runLength)
                if !runColor { result += history.finderLikePatterns() * 40 }
                runColor = color
                runLength = 1
            }
        }
        if runColor {
            history.add(runLength)
            runLength = 0
        }
        history.add(runLength + size)
        return result + history.finderLikePatterns() * 40
    }
}

/// The last seven run lengths of a line, newest first, for the finder-like pattern rule.
private struct FinderHistory {
    let size: Int
    private var runs = [Int](repeating: 0, count: 7)

    init(size: Int) { self.size = size }

    mutating func add(_ length: Int) {
        // The first run borders the light area outside the symbol.
        let length = runs[0] == 0 ? length + size : length
        runs.removeLast()
        runs.insert(length, at: 0)
    }

    /// 1:1:3:1:1 dark-light runs with four light modules on one side (counted once per side).
    func finderLikePatterns() -> Int {
        let n = runs[1]
        let core = n > 0 && runs[2] == n && runs[3] == n * 3 && runs[4] == n && runs[5] == n
        return (core && runs[0] >= n * 4 && runs[6] >= n ? 1 : 0) + (core && runs[6] >= n * 4 && runs[0] >= n ? 1 : 0)
    }
}
