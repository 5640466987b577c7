import AssentCrypto
import Foundation

/// What an app (or the CLI token) needs to talk to one Assent application, bundled in one opaque string.
///
/// The string is the Base64 of a small JSON object; apps store it as given and never build it by hand.
/// The operator API's `GET /api/v1/application` returns it as `sdkConfiguration`.
public struct SDKConfiguration: Sendable, Equatable {
    /// The application key (Base64 of 16 bytes).
    public var applicationKey: String
    /// The application secret (Base64 of 16 bytes).
    public var applicationSecret: String
    /// The application's master server public key (X9.63, uncompressed).
    public var masterServerPublicKey: ECPublicKey

    /// Creates a configuration, validating the key lengths.
    public init(applicationKey: String, applicationSecret: String, masterServerPublicKey: ECPublicKey) throws {
        _ = try Bytes.base64(applicationKey, field: "Application key", length: 16)
        _ = try Bytes.base64(applicationSecret, field: "Application secret", length: 16)
        self.applicationKey = applicationKey
        self.applicationSecret = applicationSecret
        self.masterServerPublicKey = masterServerPublicKey
    }

    private struct Wire: Codable {
        var version: Int
        var applicationKey: String
        var applicationSecret: String
        var masterServerPublicKey: String
    }

    static let formatVersion = 1

    /// Decodes the opaque configuration string.
    public init(parsing text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let data = Data(base64Encoded: trimmed),
            let wire = try? JSONDecoder().decode(Wire.self, from: data)
        else {
            throw AssentCryptoError(.invalidEncoding, "The SDK configuration string is malformed: copy it again.")
        }
        guard wire.version == Self.formatVersion else {
            throw AssentCryptoError(.invalidEncoding, "The SDK configuration was made by a newer server.")
        }
        try self.init(
            applicationKey: wire.applicationKey,
            applicationSecret: wire.applicationSecret,
            masterServerPublicKey: try ECPublicKey(
                base64: wire.masterServerPublicKey, field: "Master server public key")
        )
    }

    /// The opaque configuration string.
    public var text: String {
        let wire = Wire(
            version: Self.formatVersion,
            applicationKey: applicationKey,
            applicationSecret: applicationSecret,
            masterServerPublicKey: masterServerPublicKey.x963.base64EncodedString()
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding four plain fields cannot fail.
        return try! encoder.encode(wire).base64EncodedString()
    }
}
