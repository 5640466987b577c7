#if canImport(Security)
    import Foundation
    import Security

    /// The Apple ``Keystore``: the state is one generic-password Keychain item, readable after the first unlock
    /// and never leaving this device (no backup, no iCloud sync). The Keychain encrypts it at rest and replaces it
    /// as a whole.
    public struct KeychainKeystore: Keystore {
        /// The Keychain item's service.
        public let service: String
        /// The Keychain item's account.
        public let account: String
        /// A Keychain access group shared with app extensions, if any.
        public let accessGroup: String?

        /// A keystore in the item `service`/`account`.
        public init(service: String = "io.assent.state", account: String = "default", accessGroup: String? = nil) {
            self.service = service
            self.account = account
            self.accessGroup = accessGroup
        }

        private var query: [String: Any] {
            var query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: service,
                kSecAttrAccount as String: account,
            ]
            if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
            return query
        }

        public func load() throws -> Data? {
            var request = query
            request[kSecReturnData as String] = true
            request[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(request as CFDictionary, &result)
            switch status {
            case errSecSuccess:
                guard let data = result as? Data else {
                    throw AssentError(.keystore, "The Keychain item holds no data.")
                }
                return data
            case errSecItemNotFound:
                return nil
            default:
                throw AssentError(.keystore, "The Keychain cannot be read (OSStatus \(status)).")
            }
        }

        public func save(_ data: Data) throws {
            let update = SecItemUpdate(query as CFDictionary, [kSecValueData as String: data] as CFDictionary)
            if update == errSecSuccess { return }
            guard update == errSecItemNotFound else {
                throw AssentError(.keystore, "The Keychain cannot be written (OSStatus \(update)).")
            }
            var item = query
            item[kSecValueData as String] = data
            item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            let status = SecItemAdd(item as CFDictionary, nil)
            guard status == errSecSuccess else {
                throw AssentError(.keystore, "The Keychain cannot be written (OSStatus \(status)).")
            }
        }

        public func delete() throws {
            let status = SecItemDelete(query as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else {
                throw AssentError(.keystore, "The Keychain item cannot be deleted (OSStatus \(status)).")
            }
        }
    }
#endif
