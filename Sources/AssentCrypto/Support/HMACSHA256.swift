import Crypto
import Foundation

/// HMAC-SHA256 shorthand used by the PowerAuth constructions.
enum HMACSHA256 {
    static func mac<K: ContiguousBytes, D: DataProtocol>(key: K, data: D) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key)))
    }
}
