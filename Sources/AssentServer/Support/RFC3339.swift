import Foundation

/// RFC 3339 §5.6 `date-time` and `full-date`, exactly as OpenAPI's `date-time` and `date` formats mean them: a
/// fraction of a second of any length, `Z` or an offset, `T`/`Z` in either case, a leap second (`:60`, counted as
/// the next second); nothing else (no space for `T`, no missing offset, no day the month does not have).
enum RFC3339 {
    /// The instant `text` names; a `full-date` is midnight UTC. `nil` for anything RFC 3339 does not allow.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<index + count] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            index += count
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        var seconds = Double(daysFromCivil(year: year, month: month, day: day)) * 86_400
        if index == bytes.count { return Date(timeIntervalSince1970: seconds) }
        guard expect("Tt"), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
            let second = number(2), hour < 24, minute < 60, second <= 60
        else { return nil }
        seconds += Double(hour * 3600 + minute * 60 + second)
        if expect(".") {
            let start = index
            var fraction = 0.0
            var scale = 0.1
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                fraction += Double(bytes[index] - UInt8(ascii: "0")) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
            seconds += fraction
        }
        if expect("Zz") {
            // UTC.
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign = bytes[index] == UInt8(ascii: "+") ? 1.0 : -1.0
            index += 1
            guard let hours = number(2), expect(":"), let minutes = number(2), hours < 24, minutes < 60 else {
                return nil
            }
            seconds -= sign * Double(hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        return index == bytes.count ? Date(timeIntervalSince1970: seconds) : nil
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar.
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
