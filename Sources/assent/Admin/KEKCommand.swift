import ArgumentParser
import AssentCrypto
import AssentServer
import Foundation
import Logging

/// `assent admin kek …`: the key-encryption key ring, on the server's store directly (key material never crosses
/// HTTP).
struct KEKCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kek", abstract: "Rotate the key-encryption key that seals every secret at rest.",
        discussion: """
            Run on the server's machine with the same --data-dir / --database and ASSENT_KEK as `assent serve`. \
            With the kek file (the default), `rotate` adds a new key to it, waits until every running server holds \
            it (a server re-reads the file every 5 s), makes it the sealing key and re-seals every value; `retire` \
            then removes the old key. With ASSENT_KEK: `new` prints a key, add it to ASSENT_KEK for every process, \
            restart them, then `rotate --to <key id>`, and `retire` before removing the old key from ASSENT_KEK.
            """,
        subcommands: [Status.self, New.self, Rotate.self, Retire.self])

    /// Opens the store, runs `body` with the key ring service, closes the store.
    static func withService<T>(
        _ storage: StorageOptions, _ body: (KeyRingService) async throws -> T
    ) async throws -> T {
        var logger = Logger(label: "assent.admin")
        logger.logLevel = .warning
        let store = try await ServerBootstrap.openStore(storage.location, logger: logger)
        do {
            let result = try await body(KeyRingService(store: store))
            try await store.shutdown()
            return result
        } catch {
            try? await store.shutdown()
            throw error
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the sealing key, this ring's keys, values still to re-seal and the running servers.")
        @OptionGroup var storage: StorageOptions
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            try await CLIFailure.reporting {
                let status = try await KEKCommand.withService(storage) { try await $0.status() }
                let now = Date().millis
                try printOutput(status, json: json) {
                    TextTable.fields([
                        ("sealing key", status.sealingKeyId),
                        ("since", status.changedAt.formatted(.iso8601)),
                        ("ring (\(status.source))", status.keyIds.joined(separator: " ")),
                        (
                            "to re-seal",
                            status.pending.isEmpty
                                ? "nothing"
                                : status.pending.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
                                    separator: ", ")
                        ),
                    ])
                        + status.holders.map {
                            [
                                "server \($0.id)",
                                "holds \($0.keyIds.joined(separator: " ")); seals with \($0.sealingKeyId); "
                                    + ($0.isLive(at: now) ? "running" : "not seen for \((now - $0.seenAt) / 1000) s"),
                            ]
                        }
                }
            }
        }
    }

    struct New: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a new random key and its id, for ASSENT_KEK (nothing is stored).")
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            try await CLIFailure.reporting {
                let key = Bytes.random(count: 32)
                let id = try SecretBox.keyId(of: key)
                if json {
                    print(#"{"key":"\#(key.base64EncodedString())","keyId":"\#(id)"}"#)
                } else {
                    print(
                        "Key \(id), shown once (add it to ASSENT_KEK, comma-separated):\n\(key.base64EncodedString())")
                }
            }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a key the sealing key and re-seal every secret under it.",
            discussion: """
                Without --to, a new key is made and added to the kek file. Refused while a running server does \
                not hold the key (after waiting for it) or when the ring is ASSENT_KEK and --to is missing.
                """)
        @Option(help: "The id of a key already in the ring (see `status`).") var to: String?
        @Option(help: "Seconds to wait for every running server to hold the key.") var wait = 20
        @OptionGroup var storage: StorageOptions
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            try await CLIFailure.reporting {
                guard wait >= 0 else { throw ValidationError("--wait is a number of seconds, 0 or more.") }
                let rotation = try await KEKCommand.withService(storage) { service in
                    var service = service
                    service.holderWait = .seconds(wait)
                    return try await service.rotate(to: try to ?? service.addKey())
                }
                if json {
                    try printOutput(rotation, json: true) { [] }
                } else {
                    print(
                        "Key \(rotation.sealingKeyId) seals now (was \(rotation.previousKeyId)); re-sealed "
                            + "\(rotation.resealed) values"
                            + (rotation.unreadable > 0
                                ? "; \(rotation.unreadable) values no key of this ring opens were left as they are."
                                : ".")
                            + " Retire the old key with `assent admin kek retire \(rotation.previousKeyId)`.")
                }
            }
        }
    }

    struct Retire: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take a key out of service: refused while it seals or any value still needs it.",
            discussion: "With the kek file, the key is removed from it; with ASSENT_KEK, remove it there afterwards.")
        @Argument(help: "The key id.") var keyId: String
        @OptionGroup var storage: StorageOptions
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            try await CLIFailure.reporting {
                let retirement = try await KEKCommand.withService(storage) { try await $0.retire(keyId) }
                if json {
                    try printOutput(retirement, json: true) { [] }
                } else {
                    print(
                        "Retired key \(retirement.keyId): no value needs it"
                            + (retirement.removedFromFile
                                ? "; removed from the kek file."
                                : "; remove it from ASSENT_KEK for every process."))
                }
            }
        }
    }
}
