/// Where a database's schema stands against the migrations this build knows.
public enum SchemaState: Sendable, Equatable {
    /// Every version this build knows is applied, and no other.
    case current
    /// Versions this build knows are not applied yet (`assent migrate`, or a start, applies them).
    case behind(missing: [Int])
    /// A newer Assent applied versions this build does not know, each one declaring that a build of this one's
    /// version still serves the schema (its migrations only added): this build serves it, as during a rolling
    /// upgrade whose new version migrated first.
    case aheadCompatible(unknown: [Int])
    /// The database has versions this build does not know and may not serve: a newer Assent removed or changed
    /// something this build reads.
    case ahead(unknown: [Int])

    /// The state of a database with `applied` versions, for a build that knows `known`. `compatibleFrom` holds,
    /// for the versions that recorded it, the oldest build (by its newest known version) that serves the schema.
    public init(applied: Set<Int>, known: [Int], compatibleFrom: [Int: Int] = [:]) {
        let unknown = applied.subtracting(known).sorted()
        let missing = Set(known).subtracting(applied).sorted()
        let newestKnown = known.max() ?? 0
        if !unknown.isEmpty {
            // A version this build knows but the schema lacks, under a newer one: another line of versions.
            let servable =
                missing.isEmpty && unknown.allSatisfy { compatibleFrom[$0].map { $0 <= newestKnown } ?? false }
            self = servable ? .aheadCompatible(unknown: unknown) : .ahead(unknown: unknown)
        } else if !missing.isEmpty {
            self = .behind(missing: missing)
        } else {
            self = .current
        }
    }

    /// Whether this build serves the schema as it is.
    public var isServable: Bool {
        switch self {
        case .current, .aheadCompatible: true
        case .behind, .ahead: false
        }
    }

    /// As `/health/ready` names it.
    public var name: String {
        switch self {
        case .current: "CURRENT"
        case .behind: "BEHIND"
        case .aheadCompatible: "AHEAD_COMPATIBLE"
        case .ahead: "AHEAD"
        }
    }
}

/// A server does not start on a schema newer than it knows unless every newer version declared it still serves it:
/// it would misread the newer version's data, and its own migrations would not undo the newer ones.
public struct SchemaNewerThanServer: Error, CustomStringConvertible {
    /// The versions the database has that this build does not know.
    public var unknown: [Int]
    /// The newest version this build knows.
    public var known: Int

    public var description: String {
        "The database's schema has version \(unknown.last ?? 0), newer than this server knows (up to \(known)), "
            + "and that version no longer serves builds as old as this one: a newer Assent migrated it. Run that "
            + "version or a newer one; this one would misread its data."
    }
}
