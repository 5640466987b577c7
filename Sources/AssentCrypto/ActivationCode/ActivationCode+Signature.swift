import Foundation

// Signing and verifying activation codes, apart from their parsing, which the fuzzer builds without the crypto
// library.

extension ActivationCode {
    /// Signs the code with the application's master server private key, for the `CODE#signature` QR form.
    public func signature(with masterPrivateKey: ECPrivateKey) throws -> Data {
        try ServerSignature.sign(Data(value.utf8), with: masterPrivateKey)
    }

    /// Whether `signature` (DER) is the master server key's signature of this code.
    public func isSignatureValid(_ signature: Data, masterPublicKey: ECPublicKey) throws -> Bool {
        try ServerSignature.isValid(signature, of: Data(value.utf8), by: masterPublicKey)
    }
}

extension ActivationQRCode {
    /// Creates the QR text for `code`, signed by the master server private key.
    public init(code: ActivationCode, masterPrivateKey: ECPrivateKey) throws {
        self.code = code
        self.signature = try code.signature(with: masterPrivateKey)
    }

    /// Throws ``AssentCryptoError/Code/invalidSignature`` unless the master server key signed the code.
    public func verify(masterPublicKey: ECPublicKey) throws {
        guard try code.isSignatureValid(signature, masterPublicKey: masterPublicKey) else {
            throw AssentCryptoError(.invalidSignature, "The activation code was not signed by this server.")
        }
    }
}
