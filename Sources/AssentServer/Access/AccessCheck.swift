import Foundation

/// What a VPN (through FreeRADIUS) or a host (through PAM) asks about a person's sign-in: the user, what they typed,
/// the answer to an earlier challenge, and where the sign-in happens.
struct AccessRequest: Sendable, Equatable {
    /// The account's user id (`User-Name`).
    var userId: String
    /// What the person typed: the password, the password followed by a code, or — answering a challenge — a code or
    /// nothing (after approving on the phone).
    var typed: String
    /// The challenge this answers (`State`), if any.
    var state: String?
    /// What is signed in to, as the phone shows it: "VPN", "SSH".
    var service: String
    /// The gateway or host (`NAS-Identifier`, else `NAS-IP-Address`; a host's name).
    var gateway: String?
    /// The address the person connects from (`Calling-Station-Id`; `PAM_RHOST`).
    var clientAddress: String?
    /// Whether the gateway can show a challenge and send its answer. Not over EAP-GTC, whose one round carries the
    /// typed field only: there the code comes in the same field, or a push is approved without a number.
    var challenges = true
}

/// Assent's answer: let in, keep out, or ask once more (the gateway shows `message` and sends the answer back with
/// `state`).
enum AccessDecision: Sendable, Equatable {
    case accept(message: String)
    case reject(message: String)
    case challenge(message: String, state: String)
}

/// The readings of a typed field: the whole field as the password, or a password followed by a code — a TOTP code
/// (`digits` digits) or a backup code (12 letters and digits) — the most specific first.
struct TypedField: Sendable, Equatable {
    var password: String
    var code: String?

    static func readings(_ typed: String, totpDigits: Int?, backupCodes: Bool) -> [TypedField] {
        var readings: [TypedField] = []
        if let digits = totpDigits, typed.count > digits {
            let code = String(typed.suffix(digits))
            if code.allSatisfy({ $0.isASCII && $0.isNumber }) {
                readings.append(TypedField(password: String(typed.dropLast(digits)), code: code))
            }
        }
        let backupLength = BackupCodeFactor.length
        if backupCodes, typed.count > backupLength {
            let code = String(typed.suffix(backupLength))
            if BackupCodeFactor.normalized(code) != nil {
                readings.append(TypedField(password: String(typed.dropLast(backupLength)), code: code))
            }
        }
        readings.append(TypedField(password: typed, code: nil))
        return readings
    }
}

/// The `State` of a challenge: which factor it waits for and the challenge's assertion (a random bearer whose hash
/// names the challenge; it ties the next answer to this sign-in's flow).
struct AccessState: Sendable, Equatable {
    enum Waiting: String, Sendable {
        case push
        case code
    }

    var waiting: Waiting
    var assertion: String

    static let prefix = "assent1"

    var text: String { "\(Self.prefix):\(waiting.rawValue):\(assertion)" }

    init(waiting: Waiting, assertion: String) {
        (self.waiting, self.assertion) = (waiting, assertion)
    }

    init?(_ text: String) {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == Self.prefix, let waiting = Waiting(rawValue: String(parts[1])),
            (1...128).contains(parts[2].utf8.count)
        else { return nil }
        (self.waiting, self.assertion) = (waiting, String(parts[2]))
    }
}
