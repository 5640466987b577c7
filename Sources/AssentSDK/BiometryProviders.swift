import Foundation
import Synchronization

/// A ``BiometryProvider`` that simulates the biometric check in memory, for tests, simulators and previews. Each
/// ``retrieve(account:prompt:)`` succeeds, fails or is cancelled as ``nextOutcome`` says; the prompts shown are
/// recorded.
public final class SimulatedBiometryProvider: BiometryProvider {
    /// What the next simulated check does.
    public enum Outcome: Sendable {
        case success
        /// The finger or face did not match.
        case failure
        /// The user cancelled the prompt.
        case cancel
    }

    /// The simulated check failed.
    public struct NotRecognized: Error, Sendable {}

    private struct Storage {
        var available: Bool
        var outcome = Outcome.success
        var keys: [String: Data] = [:]
        var prompts: [String] = []
    }

    private let storage: Mutex<Storage>

    /// A provider whose biometry is available (or not).
    public init(available: Bool = true) {
        storage = Mutex(Storage(available: available))
    }

    public var isAvailable: Bool { storage.withLock { $0.available } }

    /// Makes biometry available or not (as when the user removes every enrolled finger).
    public func setAvailable(_ available: Bool) { storage.withLock { $0.available = available } }
    /// What the following checks do, until changed.
    public var nextOutcome: Outcome {
        get { storage.withLock { $0.outcome } }
        set { storage.withLock { $0.outcome = newValue } }
    }
    /// The prompts shown so far, oldest first.
    public var prompts: [String] { storage.withLock { $0.prompts } }
    /// The accounts holding a key.
    public var accounts: [String] { storage.withLock { $0.keys.keys.sorted() } }

    public func store(_ key: Data, account: String) async throws {
        storage.withLock { $0.keys[account] = key }
    }

    public func retrieve(account: String, prompt: String) async throws -> Data {
        try storage.withLock { storage in
            storage.prompts.append(prompt)
            switch storage.outcome {
            case .cancel: throw CancellationError()
            case .failure: throw NotRecognized()
            case .success:
                guard storage.available, let key = storage.keys[account] else { throw NotRecognized() }
                return key
            }
        }
    }

    public func delete(account: String) async throws {
        _ = storage.withLock { $0.keys.removeValue(forKey: account) }
    }
}

#if canImport(LocalAuthentication) && canImport(Security)
    import LocalAuthentication
    import Security

    /// The Apple ``BiometryProvider``: the biometry key is a Keychain item that only the currently enrolled
    /// fingers or face release (`biometryCurrentSet`, this device only); reading it shows the system prompt.
    public struct LocalAuthenticationBiometryProvider: BiometryProvider {
        /// The Keychain service the keys are stored under.
        public let service: String

        /// A provider storing its keys under `service`.
        public init(service: String = "io.assent.biometry") {
            self.service = service
        }

        public var isAvailable: Bool {
            LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil)
        }

        private func baseQuery(account: String) -> [String: Any] {
            [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: service,
                kSecAttrAccount as String: account,
            ]
        }

        public func store(_ key: Data, account: String) async throws {
            guard
                let access = SecAccessControlCreateWithFlags(
                    nil, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, .biometryCurrentSet, nil)
            else {
                throw AssentError(.biometryFailed, "The Keychain access control for biometry cannot be created.")
            }
            SecItemDelete(baseQuery(account: account) as CFDictionary)
            var query = baseQuery(account: account)
            query[kSecAttrAccessControl as String] = access
            query[kSecValueData as String] = key
            let status = SecItemAdd(query as CFDictionary, nil)
            guard status == errSecSuccess else {
                throw AssentError(.biometryFailed, "The Keychain refused the biometry key (OSStatus \(status)).")
            }
        }

        public func retrieve(account: String, prompt: String) async throws -> Data {
            let service = service
            // The read waits for the user; keep it off the cooperative thread pool. Only Sendable values cross
            // into the closure: the context and the query are made there.
            let (status, data): (OSStatus, Data?) = await withCheckedContinuation { continuation in
                DispatchQueue.global(qos: .userInitiated).async {
                    let context = LAContext()
                    context.localizedReason = prompt
                    let query: [String: Any] = [
                        kSecClass as String: kSecClassGenericPassword,
                        kSecAttrService as String: service,
                        kSecAttrAccount as String: account,
                        kSecUseAuthenticationContext as String: context,
                        kSecReturnData as String: true,
                        kSecMatchLimit as String: kSecMatchLimitOne,
                    ]
                    var result: CFTypeRef?
                    let status = SecItemCopyMatching(query as CFDictionary, &result)
                    continuation.resume(returning: (status, result as? Data))
                }
            }
            switch status {
            case errSecSuccess:
                guard let data else { throw AssentError(.biometryFailed, "The Keychain returned no key.") }
                return data
            case errSecUserCanceled:
                throw CancellationError()
            case errSecItemNotFound:
                throw AssentError(.factorUnavailable, "No biometry key is stored (enrolment changed or removed).")
            default:
                throw AssentError(.biometryFailed, "The biometric check failed (OSStatus \(status)).")
            }
        }

        public func delete(account: String) async throws {
            let status = SecItemDelete(baseQuery(account: account) as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else {
                throw AssentError(
                    .biometryFailed, "The Keychain refused to delete the biometry key (OSStatus \(status)).")
            }
        }
    }
#endif
