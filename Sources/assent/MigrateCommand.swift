import ArgumentParser
import AssentServer
import Foundation
import Logging

/// `assent migrate`: brings the database's schema to this build's version, with the schema owner's privileges.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply the schema migrations this build has and the database lacks.",
        discussion: """
            On PostgreSQL, run it with the URL of the role that owns the schema before new servers start: the \
            servers' own role may read and write rows but not change the schema (docs/DEPLOY.md), and a server \
            refuses to start on a schema that lacks its migrations. A server whose role owns the schema migrates \
            at start, as on SQLite. A version's migrations only add (columns, tables, indexes) and say so, so \
            servers of the previous version keep serving, and may restart, on the migrated schema; what a version \
            removes it removes in a later one, and a server refuses a schema newer than it serves. No secret is \
            read: the key-encryption key is not needed.

            Example: assent migrate --database postgres://assent_owner@db.internal:5432/assent
            """)

    @OptionGroup var storage: StorageOptions
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        var logger = Logger(label: "assent.migrate")
        logger.logLevel = .warning
        try await CLIFailure.reporting {
            let migration: ServerBootstrap.Migration
            do {
                migration = try await ServerBootstrap.migrateSchema(storage.location, logger: logger)
            } catch let error as SchemaNewerThanServer {
                throw AssentServerError.configuration(error.description)
            }
            if json {
                say(
                    #"{"applied":[\#(migration.applied.map(String.init).joined(separator: ","))],"version":\#(migration.version)}"#
                )
            } else if migration.newerThanBuild {
                say(
                    "The \(migration.backend.rawValue) schema is at version \(migration.version), newer than this "
                        + "build, whose servers still serve it: nothing to apply.")
            } else if migration.applied.isEmpty {
                say("The \(migration.backend.rawValue) schema is current: version \(migration.version).")
            } else {
                say(
                    "Applied \(migration.applied.count) migration\(migration.applied.count == 1 ? "" : "s") to the "
                        + "\(migration.backend.rawValue) schema: now version \(migration.version).")
            }
        }
    }
}
