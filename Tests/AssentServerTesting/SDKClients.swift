import AssentSDK
import AssentServer
import AssentTesting
import Foundation

/// SDK clients against a test server: a fresh keystore directory, a client, one activated with PIN 1234.
enum SDKClients {
    /// A fresh directory for a file keystore.
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("assent-sdk-\(UUID())")
    }

    /// An SDK client for `server`, with its state in a fresh file keystore.
    static func client(
        _ server: TestServer, base: URL, directory: URL, biometry: (any BiometryProvider)? = nil
    ) throws -> AssentClient {
        try AssentClient(
            serverURL: base, configuration: try server.configuration.text,
            keystore: try FileKeystore(directory: directory), biometry: biometry)
    }

    /// A client activated for `userId` with PIN 1234.
    static func activatedClient(
        _ server: TestServer, _ http: HTTPClient, directory: URL, userId: String = "alice"
    ) async throws -> AssentClient {
        let client = try Self.client(server, base: http.base, directory: directory)
        _ = try await client.startActivation(
            code: try await server.createActivation(http, userId: userId).activationCode)
        try await client.finishActivation(pin: "1234")
        return client
    }

    /// Runs `body` against a live server on `backend` with an SDK client activated for alice (PIN 1234), its state
    /// in `directory`.
    static func withActivatedClient(
        _ backend: Backend, tfa: TFASettings = TFASettings(),
        _ body: @Sendable (TestServer, HTTPClient, AssentClient, URL) async throws -> Void
    ) async throws {
        let server = try await TestServer.make(backend, tfa: tfa)
        defer { Task { await server.shutdown() } }
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.live { http in
            try await body(server, http, try await activatedClient(server, http, directory: directory), directory)
        }
    }
}
