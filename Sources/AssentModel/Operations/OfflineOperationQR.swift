import AssentCrypto
import Foundation

/// An operation carried by a QR code to a device that is offline, signed by the server.
///
/// ```
/// {operationId}
/// {title}            (\n and \\ escaped)
/// {message}          (\n and \\ escaped)
/// {operationData}
/// {flags}
/// [{totp}]           only when the code has 8 or more lines
/// {nonce, Base64 of 16 bytes}
/// {keyType}{signature, Base64 DER}   0 = master server key, 1 = personal server key
/// ```
///
/// The server signs the UTF-8 of everything up to and including the key-type character. Newer formats may add
/// lines before the nonce; a parser reads the nonce and signature from the end.
public struct OfflineOperationQR: Sendable, Equatable {
    /// What the QR allows and asks for.
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `B`: approval with biometry is allowed.
        public static let biometryAllowed = Flags(rawValue: 1)
        /// `X`: show the approve and reject buttons swapped.
        public static let flipButtons = Flags(rawValue: 2)
        /// `F`: show a fraud warning.
        public static let fraudWarning = Flags(rawValue: 4)
        /// `C`: block approval while a phone call is active.
        public static let blockApprovalOnCall = Flags(rawValue: 8)

        static let letters: [(Character, Flags)] = [
            ("B", .biometryAllowed), ("X", .flipButtons), ("F", .fraudWarning), ("C", .blockApprovalOnCall),
        ]
    }

    /// Which server key signed.
    public enum KeyType: Character, Sendable {
        /// The application's master server key.
        case master = "0"
        /// The activation's personal server key.
        case personal = "1"
    }

    public var operationId: String
    public var title: String
    public var message: String
    /// The operation data string, as signed.
    public var operationData: String
    public var flags: Flags
    /// The proximity TOTP, when the QR carries one.
    public var totp: String?
    /// 16 random bytes, the nonce of the offline signature.
    public var nonce: Data
    public var keyType: KeyType
    /// DER ECDSA P-256 SHA-256 signature of ``signedText``.
    public var signature: Data

    /// The text the server signs: every line, then the key-type character.
    public var signedText: String {
        var lines = [
            operationId, Self.escape(title), Self.escape(message), operationData,
            Flags.letters.filter { flags.contains($0.1) }.map { String($0.0) }.joined(),
        ]
        if let totp { lines.append(totp) }
        lines.append(nonce.base64EncodedString())
        return lines.joined(separator: "\n") + "\n" + String(keyType.rawValue)
    }

    /// The whole QR text.
    public var text: String { signedText + signature.base64EncodedString() }

    /// Creates and signs a QR operation (server side).
    public init(
        operationId: String, title: String, message: String, operationData: String, flags: Flags, totp: String?,
        nonce: Data = Bytes.random(count: 16), keyType: KeyType, signingKey: ECPrivateKey
    ) throws {
        guard !operationId.isEmpty, !operationId.contains("\n"), !operationData.contains("\n") else {
            throw OperationDataError(message: "The operation id and data must be single non-empty lines.")
        }
        self.operationId = operationId
        self.title = title
        self.message = message
        self.operationData = operationData
        self.flags = flags
        self.totp = totp
        self.nonce = nonce
        self.keyType = keyType
        self.signature = Data()
        self.signature = try ServerSignature.sign(Data(signedText.utf8), with: signingKey)
    }

    /// Parses a scanned QR text (device side); call ``verify(masterPublicKey:personalPublicKey:)`` before use.
    public init(parsing text: String) throws {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count >= 7 else {
            throw OperationDataError(message: "An offline operation QR has at least 7 lines.")
        }
        let last = lines[lines.count - 1]
        guard let keyCharacter = last.first, let keyType = KeyType(rawValue: keyCharacter),
            let signature = Data(base64Encoded: String(last.dropFirst())), !signature.isEmpty,
            let nonce = Data(base64Encoded: lines[lines.count - 2]), nonce.count == 16, !lines[0].isEmpty
        else { throw OperationDataError(message: "The QR's nonce or signature line is malformed.") }
        var flags: Flags = []
        for letter in lines[4] {
            // Unknown letters come from newer servers: ignore them.
            if let flag = Flags.letters.first(where: { $0.0 == letter })?.1 { flags.insert(flag) }
        }
        self.operationId = lines[0]
        self.title = try Self.unescape(lines[1])
        self.message = try Self.unescape(lines[2])
        self.operationData = lines[3]
        self.flags = flags
        self.totp = lines.count >= 8 ? lines[5] : nil
        self.nonce = nonce
        self.keyType = keyType
        self.signature = signature
        // Verification must cover the text exactly as scanned, including any lines a newer format added.
        self.scannedSignedText = String(text.dropLast(last.count - 1))
    }

    /// The signed part exactly as scanned (`nil` for QR codes made here).
    private var scannedSignedText: String?

    /// Throws unless the server key named by ``keyType`` signed the QR.
    public func verify(masterPublicKey: ECPublicKey, personalPublicKey: ECPublicKey?) throws {
        let key: ECPublicKey
        switch keyType {
        case .master: key = masterPublicKey
        case .personal:
            guard let personalPublicKey else {
                throw AssentCryptoError(.invalidSignature, "The QR is signed with a personal key this device lacks.")
            }
            key = personalPublicKey
        }
        guard try ServerSignature.isValid(signature, of: Data((scannedSignedText ?? signedText).utf8), by: key) else {
            throw AssentCryptoError(.invalidSignature, "The QR code was not signed by this server.")
        }
    }

    /// The body of the offline signature: `{operationId}&{operationData}[&{totp}]`.
    public var signatureBody: Data {
        Self.signatureBody(operationId: operationId, operationData: operationData, totp: totp)
    }

    /// `{operationId}&{operationData}[&{totp}]`, for a server that kept these parts of the QR it issued.
    public static func signatureBody(operationId: String, operationData: String, totp: String?) -> Data {
        Data(([operationId, operationData] + (totp.map { [$0] } ?? [])).joined(separator: "&").utf8)
    }

    /// The uriId of offline operation approvals.
    public static let uriId = "/operation/authorize/offline"

    static func escape(_ text: String) -> String { TextEscaping.escape(text, literals: ["\\"]) }

    static func unescape(_ text: String) throws -> String {
        try TextEscaping.unescape(text, literals: ["\\"], forbidControlCharacters: false) {
            OperationDataError(message: "QR text: \($0)")
        }
    }

    public static func == (lhs: OfflineOperationQR, rhs: OfflineOperationQR) -> Bool {
        lhs.text == rhs.text
    }
}
