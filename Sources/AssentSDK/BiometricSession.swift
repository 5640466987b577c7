import Foundation

/// Seed 004's biometric session: the signed-in ``TFASession`` kept behind the user's biometry.
///
/// ``optIn()`` stores the session with the ``BiometryProvider`` (on Apple the Keychain, released only after Face ID
/// or Touch ID; on Linux the simulated provider); ``lock()`` drops it from memory, after which
/// ``TFAService/authenticatedSession()`` refuses with ``AssentError/Code/sessionLocked``; ``unlock(prompt:)``
/// shows the biometric prompt and restores it. ``optOut()`` deletes the protected copy. `isLocked` is
/// `isOptIn && session is gone`, as in the seed.
public actor BiometricSession {
    let service: TFAService
    let provider: any BiometryProvider
    let account: String
    /// Whether the session is stored behind biometry. Persist it with the app's settings and pass it back in.
    public private(set) var isOptIn: Bool

    /// A biometric session over `service`'s login, its protected copy stored under `account`.
    public init(
        service: TFAService, provider: any BiometryProvider, account: String = "assent.tfa.session",
        isOptIn: Bool = false
    ) {
        self.service = service
        self.provider = provider
        self.account = account
        self.isOptIn = isOptIn
    }

    /// Whether the session is locked away (opted in and not unlocked).
    public var isLocked: Bool {
        get async {
            guard isOptIn else { return false }
            return await service.isLocked
        }
    }

    /// Stores the current session behind biometry. Needs a signed-in, unlocked session and available biometry.
    public func optIn() async throws {
        guard await provider.isAvailable else {
            throw AssentError(.factorUnavailable, "Biometry is not available on this device.")
        }
        let session = try await service.authenticatedSession()
        do {
            try await provider.store(try JSONEncoder().encode(session), account: account)
        } catch {
            throw AssentError.wrap(error, .keystore, "The session could not be stored behind biometry.")
        }
        isOptIn = true
    }

    /// Deletes the protected copy; an unlocked session stays signed in.
    public func optOut() async throws {
        guard isOptIn else { return }
        if await service.isLocked {
            throw AssentError(.sessionLocked, "Unlock the session before opting out of biometry.")
        }
        try await provider.delete(account: account)
        isOptIn = false
    }

    /// Drops the session from memory; only allowed when opted in (otherwise it could not come back).
    public func lock() async throws {
        guard isOptIn else {
            throw AssentError(.factorUnavailable, "Opt in to the biometric session before locking it.")
        }
        await service.lock()
        await service.logout()
    }

    /// Shows the biometric prompt and restores the session.
    public func unlock(prompt: String = "Please authenticate to proceed") async throws {
        guard isOptIn else { throw AssentError(.factorUnavailable, "The session is not behind biometry.") }
        let data: Data
        do {
            data = try await provider.retrieve(account: account, prompt: prompt)
        } catch {
            throw AssentError.wrap(error, .biometryFailed, "The biometric check did not pass.")
        }
        guard let session = try? JSONDecoder().decode(TFASession.self, from: data) else {
            throw AssentError(.keystore, "The stored session is unreadable: sign in again.")
        }
        await service.unlock(with: session)
    }
}
