import Crypto
import Foundation

/// The `aes128gcm` content coding of RFC 8188: a header (salt, record size, key id) followed by records, each
/// AES-128-GCM under a content-encryption key and nonce derived from the input keying material and the salt.
public enum ContentEncoding {
    /// One record's plaintext and the zero octets that pad it (hiding its length).
    public struct Record: Sendable, Equatable {
        public var data: Data
        public var padding: Int

        public init(data: Data, padding: Int = 0) {
            self.data = data
            self.padding = padding
        }
    }

    /// A decoded header: what precedes the first record.
    public struct Header: Sendable, Equatable {
        public var salt: Data
        public var recordSize: Int
        public var keyId: Data
        /// The header's length in octets (21 + the key id's).
        public var length: Int { 21 + keyId.count }
    }

    /// The smallest record size: a delimiter octet and the 16-octet tag.
    public static let minimumRecordSize = 18

    /// Encrypts `records` under `inputKey` with `salt` (16 octets), each record `recordSize` octets long except the
    /// last, which may be shorter.
    /// - Throws: `invalidLength` when the salt is not 16 octets, the key id is longer than 255 octets, the record
    ///   size is out of range, a record does not fit it, or a record other than the last is not filled exactly.
    public static func encrypt(
        _ records: [Record], inputKey: some DataProtocol, salt: Data, recordSize: Int, keyId: Data = Data()
    ) throws -> Data {
        guard salt.count == 16 else { throw AssentCryptoError(.invalidLength, "The salt is 16 octets.") }
        guard keyId.count <= 255 else { throw AssentCryptoError(.invalidLength, "The key id is at most 255 octets.") }
        guard (minimumRecordSize...Int(UInt32.max)).contains(recordSize) else {
            throw AssentCryptoError(.invalidLength, "The record size is between 18 and 2^32 - 1 octets.")
        }
        guard !records.isEmpty else { throw AssentCryptoError(.invalidLength, "There is at least one record.") }
        let (key, nonce) = derive(inputKey: inputKey, salt: salt)
        var output = salt
        withUnsafeBytes(of: UInt32(recordSize).bigEndian) { output.append(contentsOf: $0) }
        output.append(UInt8(keyId.count))
        output.append(keyId)
        for (index, record) in records.enumerated() {
            let isLast = index == records.count - 1
            let plainLength = record.data.count + 1 + record.padding
            guard record.padding >= 0, plainLength + 16 <= recordSize, isLast || plainLength + 16 == recordSize else {
                throw AssentCryptoError(
                    .invalidLength, "Record \(index) does not fit the record size \(recordSize).")
            }
            var plaintext = record.data
            plaintext.append(isLast ? 2 : 1)
            plaintext.append(contentsOf: repeatElement(0, count: record.padding))
            let sealed = try AssentCryptoError.wrapping("AES-GCM") {
                try AES.GCM.seal(plaintext, using: key, nonce: try recordNonce(nonce, index: index))
            }
            output.append(sealed.ciphertext)
            output.append(sealed.tag)
        }
        return output
    }

    /// Reads the header of an encoded body.
    /// - Throws: `invalidLength` when the body is shorter than its header or the record size is below 18.
    public static func header(of body: Data) throws -> Header {
        let bytes = [UInt8](body.prefix(21))
        guard bytes.count == 21 else {
            throw AssentCryptoError(.invalidLength, "The body is shorter than an aes128gcm header.")
        }
        let recordSize = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let keyIdLength = Int(bytes[20])
        guard body.count >= 21 + keyIdLength else {
            throw AssentCryptoError(.invalidLength, "The body ends inside the header's key id.")
        }
        guard recordSize >= minimumRecordSize else {
            throw AssentCryptoError(.invalidLength, "The record size \(recordSize) is below 18.")
        }
        let start = body.startIndex
        return Header(
            salt: Data(body[start..<start + 16]), recordSize: recordSize,
            keyId: Data(body[start + 21..<start + 21 + keyIdLength]))
    }

    /// Decrypts an encoded body with `inputKey` and returns its records' data, joined.
    /// - Throws: `invalidLength` for a malformed header or record layout, `decryptionFailed` when a record does
    ///   not authenticate or its delimiter or padding is wrong (RFC 8188 §2: a truncated body fails).
    public static func decrypt(_ body: Data, inputKey: some DataProtocol) throws -> Data {
        let header = try header(of: body)
        return try decryptRecords(
            body.dropFirst(header.length), inputKey: inputKey, salt: header.salt, recordSize: header.recordSize)
    }

    /// Decrypts the records after the header.
    static func decryptRecords(_ ciphertext: Data, inputKey: some DataProtocol, salt: Data, recordSize: Int) throws
        -> Data
    {
        guard !ciphertext.isEmpty else { throw AssentCryptoError(.invalidLength, "The body holds no record.") }
        let (key, nonce) = derive(inputKey: inputKey, salt: salt)
        var output = Data()
        var offset = ciphertext.startIndex
        var index = 0
        while offset < ciphertext.endIndex {
            let end = min(offset + recordSize, ciphertext.endIndex)
            let isLast = end == ciphertext.endIndex
            let record = ciphertext[offset..<end]
            guard record.count >= 17 else {
                throw AssentCryptoError(.invalidLength, "Record \(index) is shorter than a tag and a delimiter.")
            }
            let plaintext: Data
            do {
                let box = try AES.GCM.SealedBox(
                    nonce: try recordNonce(nonce, index: index), ciphertext: record.dropLast(16),
                    tag: record.suffix(16))
                plaintext = try AES.GCM.open(box, using: key)
            } catch {
                throw AssentCryptoError(.decryptionFailed, "Record \(index) does not authenticate.")
            }
            guard let delimiterIndex = plaintext.lastIndex(where: { $0 != 0 }) else {
                throw AssentCryptoError(.decryptionFailed, "Record \(index) holds only padding.")
            }
            let delimiter = plaintext[delimiterIndex]
            guard delimiter == (isLast ? 2 : 1) else {
                throw AssentCryptoError(
                    .decryptionFailed,
                    isLast
                        ? "The last record is not marked last: the body was truncated."
                        : "Record \(index) is marked last but more follow.")
            }
            output.append(plaintext[plaintext.startIndex..<delimiterIndex])
            offset = end
            index += 1
        }
        return output
    }

    /// The content-encryption key and the nonce base (RFC 8188 §2.2 and §2.3).
    static func derive(inputKey: some DataProtocol, salt: Data) -> (SymmetricKey, Data) {
        let prk = HMAC<SHA256>.authenticationCode(for: Array(inputKey), using: SymmetricKey(data: salt))
        let prkKey = SymmetricKey(data: Data(prk))
        let cek = HMAC<SHA256>.authenticationCode(
            for: Data("Content-Encoding: aes128gcm".utf8) + [0, 1], using: prkKey)
        let nonce = HMAC<SHA256>.authenticationCode(for: Data("Content-Encoding: nonce".utf8) + [0, 1], using: prkKey)
        return (SymmetricKey(data: Data(cek).prefix(16)), Data(nonce).prefix(12))
    }

    /// The nonce of record `index`: the base XOR the index as a 96-bit big-endian number.
    static func recordNonce(_ base: Data, index: Int) throws -> AES.GCM.Nonce {
        var bytes = [UInt8](base)
        var value = UInt64(index)
        for position in stride(from: 11, through: 4, by: -1) {
            bytes[position] ^= UInt8(truncatingIfNeeded: value)
            value >>= 8
        }
        return try AES.GCM.Nonce(data: bytes)
    }
}
