import AssentCrypto
import AssentTesting
import Foundation
import SQLKit
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// How an activation's row is read and written: keys decoded where they are used, the sealed master secret written
/// back as read unless it changed.
@Suite("Activation rows")
struct ActivationStorageTests {
    @Test(
        "An update keeps the sealed master secret it read; a changed secret is sealed anew; the keys decode as sent",
        arguments: Backend.all)
    func sealedSecretKept(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let device = try await server.activatedDevice(client)
            let store = server.store
            let id = device.activationId
            func storedMasterSecret() async throws -> Data {
                let row = try #require(
                    try await store.database.raw("SELECT master_secret FROM activations WHERE id = \(bind: id)").first()
                )
                return try row.decode(column: "master_secret", as: Data.self)
            }
            let sealed = try await storedMasterSecret()

            // A counter update (what every signature writes) leaves the sealed bytes as they were: sealing draws a
            // fresh nonce, so sealing again would have changed them.
            var activation = try #require(try await store.activation(id: id))
            activation.counter += 1
            activation.failedAttempts = 1
            #expect(try await store.updateActivation(activation, expectedVersion: activation.version))
            #expect(try await storedMasterSecret() == sealed)
            let updated = try #require(try await store.activation(id: id))
            #expect(updated.counter == activation.counter && updated.failedAttempts == 1)
            #expect(updated.masterSecret == activation.masterSecret)

            // A different secret is sealed anew and reads back as written.
            var changed = updated
            changed.masterSecret = Data(repeating: 7, count: 16)
            #expect(try await store.updateActivation(changed, expectedVersion: changed.version))
            #expect(try await storedMasterSecret() != sealed)
            let reread = try #require(try await store.activation(id: id))
            #expect(reread.masterSecret == Data(repeating: 7, count: 16))

            // The keys, decoded only where used, are the ones both sides hold.
            #expect(try reread.devicePublicKey() == device.deviceKey.publicKey)
            #expect(try reread.serverPublicKey() == device.serverPublicKey)
            #expect(try reread.fingerprint() == device.fingerprint)
        }
    }
}
