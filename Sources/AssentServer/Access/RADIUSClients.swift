import AssentCrypto
import AssentModel
import Foundation
import SQLKit

/// A VPN gateway (a NAS) that may ask FreeRADIUS: the addresses it sends from, the application whose accounts sign
/// in through it, and the shared secret of its RADIUS packets (sealed; FreeRADIUS learns it from Assent when the
/// gateway's first packet arrives — integrations/freeradius/sites-available/assent-clients).
public struct RADIUSClientRecord: Sendable, Equatable {
    public var id: String
    public var applicationId: String
    /// A short name, unique: FreeRADIUS's shortname for it, and how the CLI names it.
    public var name: String
    /// Where its packets come from: an address or a network (`192.0.2.10`, `10.8.0.0/24`).
    public var network: String
    public var secret: String
    public var createdAt: Millis
}

/// The registered RADIUS clients.
public protocol RADIUSClientStore: Sendable {
    func insertRADIUSClient(_ client: RADIUSClientRecord) async throws
    func radiusClients() async throws -> [RADIUSClientRecord]
    /// Removes the client named `name`; whether there was one.
    func deleteRADIUSClient(name: String) async throws -> Bool
}

extension Migrations {
    /// Version 41: the RADIUS clients (gateways) and their sealed shared secrets.
    static func radiusClientsV41(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS radius_clients (
                id TEXT PRIMARY KEY,
                application_id TEXT NOT NULL REFERENCES applications(id),
                name TEXT NOT NULL UNIQUE,
                network TEXT NOT NULL,
                secret \(dialect.blob) NOT NULL,
                created_at \(dialect.bigint) NOT NULL
            )
            """
        ]
    }
}

extension SQLStore {
    public func insertRADIUSClient(_ client: RADIUSClientRecord) async throws {
        let sealed = try box.seal(Data(client.secret.utf8), context: SealedColumn.radiusClientSecret.context(client.id))
        try await database.raw(
            """
            INSERT INTO radius_clients (id, application_id, name, network, secret, created_at)
            VALUES (\(bind: client.id), \(bind: client.applicationId), \(bind: client.name), \(bind: client.network), \
            \(bind: sealed), \(bind: client.createdAt))
            """
        ).run()
    }

    public func radiusClients() async throws -> [RADIUSClientRecord] {
        try await database.raw("SELECT * FROM radius_clients ORDER BY name").all().map { row in
            let id = try row.decode(column: "id", as: String.self)
            let secret = try box.open(
                try row.decode(column: "secret", as: Data.self), context: SealedColumn.radiusClientSecret.context(id))
            return RADIUSClientRecord(
                id: id, applicationId: try row.decode(column: "application_id", as: String.self),
                name: try row.decode(column: "name", as: String.self),
                network: try row.decode(column: "network", as: String.self),
                secret: String(decoding: secret, as: UTF8.self),
                createdAt: try row.decode(column: "created_at", as: Int64.self))
        }
    }

    public func deleteRADIUSClient(name: String) async throws -> Bool {
        !(try await database.raw("DELETE FROM radius_clients WHERE name = \(bind: name) RETURNING id").all()).isEmpty
    }
}

/// Registers VPN gateways with their shared secrets (`assent admin radius-client`) and tells FreeRADIUS which one a
/// packet comes from.
public struct RADIUSClientService: Sendable {
    let store: any RADIUSClientStore
    let clock: WallClock
    let audit: Auditor
    let applications: ApplicationService

    /// ``add(name:network:application:actor:)`` for the application with id `applicationId` (the default one when
    /// `nil`).
    /// - Throws: `NOT_FOUND` for an id no application has.
    public func add(name: String, network: String, applicationId: String?, actor: String) async throws
        -> RADIUSClientRecord
    {
        let application: ApplicationRecord
        if let applicationId {
            guard let found = try await applications.application(id: applicationId) else {
                throw AssentServerError.notFound("No application has the id \(applicationId.prefix(64)).")
            }
            application = found
        } else {
            application = try await applications.defaultApplication()
        }
        return try await add(name: name, network: network, application: application, actor: actor)
    }

    /// 24 random bytes in Base64URL, never starting with `-`: gateways' tools and radclient take such a secret on
    /// their command line for an option.
    static func newSecret() -> String {
        while true {
            let secret = Base64URL.encode(Bytes.random(count: 24))
            if !secret.hasPrefix("-") { return secret }
        }
    }

    /// Registers a gateway sending from `network` for `application`, with a new random secret (returned; it can be
    /// read again with ``list()``).
    /// - Throws: `ERR_REQUEST` for a name that is not 1 to 32 letters, digits, `-`, `_` or `.`, a name in use, an
    ///   address or network that does not parse or overlaps another client's.
    func add(name: String, network text: String, application: ApplicationRecord, actor: String) async throws
        -> RADIUSClientRecord
    {
        guard (1...32).contains(name.utf8.count),
            name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) })
        else {
            throw AssentServerError.invalidRequest(
                "A RADIUS client's name has 1 to 32 letters, digits, '-', '_' or '.'.")
        }
        let network: IPNetwork
        do {
            network = try IPNetwork(parsing: text)
        } catch let error as AssentServerError {
            throw AssentServerError.invalidRequest(error.message)
        }
        let existing = try await store.radiusClients()
        guard !existing.contains(where: { $0.name == name }) else {
            throw AssentServerError.invalidRequest("A RADIUS client is named \(name) already.")
        }
        if let other = existing.first(where: { (try? IPNetwork(parsing: $0.network))?.overlaps(network) == true }) {
            throw AssentServerError.invalidRequest(
                "\(network) overlaps \(other.network) of RADIUS client \(other.name): a packet's sender must name one "
                    + "client.")
        }
        let client = RADIUSClientRecord(
            id: TFATokens.id(), applicationId: application.id, name: name, network: network.description,
            secret: Self.newSecret(), createdAt: clock.millis)
        try await store.insertRADIUSClient(client)
        await audit(
            .radiusClientAdded, application: application.id, actor: actor,
            "RADIUS client \(name) (\(network)) added.")
        return client
    }

    public func list() async throws -> [RADIUSClientRecord] { try await store.radiusClients() }

    /// Removes a gateway: FreeRADIUS stops answering it once its cached entry expires.
    public func remove(name: String, actor: String) async throws {
        guard let client = try await store.radiusClients().first(where: { $0.name == name }),
            try await store.deleteRADIUSClient(name: name)
        else { throw AssentServerError.notFound("No RADIUS client is named \(name.prefix(32)).") }
        await audit(
            .radiusClientRemoved, application: client.applicationId, actor: actor,
            "RADIUS client \(name) (\(client.network)) removed.")
    }

    /// The client whose network holds `address`, if any.
    func client(at address: String) async throws -> RADIUSClientRecord? {
        guard let bytes = IPNetwork.bytes(of: address) else { return nil }
        return try await store.radiusClients().first { (try? IPNetwork(parsing: $0.network))?.contains(bytes) == true }
    }
}

extension IPNetwork {
    /// Whether the two networks share an address.
    func overlaps(_ other: IPNetwork) -> Bool {
        guard address.count == other.address.count else { return false }
        return contains(other.address) || other.contains(address)
    }
}
