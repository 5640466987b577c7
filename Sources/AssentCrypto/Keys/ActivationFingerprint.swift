import Crypto
import Foundation

/// The 8-digit fingerprint both the device and the operator show, to compare the exchanged keys.
public enum ActivationFingerprint {
    /// `SHA256(devicePubX ‖ utf8(activationId) ‖ serverPubX)`, last four bytes big-endian, 31 bits,
    /// modulo 10^8, zero-padded. X coordinates are taken without leading zero bytes.
    public static func compute(
        devicePublicKey: ECPublicKey,
        activationId: String,
        serverPublicKey: ECPublicKey
    ) -> String {
        var input = Data(strippingLeadingZeros(devicePublicKey.xCoordinate))
        input.append(Data(activationId.utf8))
        input.append(Data(strippingLeadingZeros(serverPublicKey.xCoordinate)))
        return PowerAuthSignature.decimalize(Data(SHA256.hash(data: input)), digits: 8)
    }

    static func strippingLeadingZeros(_ bytes: Data) -> Data.SubSequence {
        bytes.drop { $0 == 0 }
    }
}
