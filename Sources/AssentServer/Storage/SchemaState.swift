/// Where a database's schema stands against the migrations this build knows.
public enum SchemaState: Sendable, Equatable {
    /// Every version this build knows is applied, and no other.
    case current
    /// Versions this build knows are not applied yet (`assent migrate`, or a start, applies them).
    case behind(missing: [Int])
    /// The database has versions this build does not know: a newer Assent migrated it.
    case ahead(unknown: [Int])

    /// The state of a database with `applied` versions, for a build that knows `known`.
    public init(applied: Set<Int>, known: [Int]) {
        let unknown = applied.subtracting(known).sorted()
        let missing = Set(known).subtracting(applied).sorted()
        if !unknown.isEmpty {
            self = .ahead(unknown: unknown)
        } else if !missing.isEmpty {
            self = .behind(missing: missing)
        } else {
            self = .current
        }
    }

    /// As `/health/ready` names it.
    public var name: String {
        switch self {
        case .current: "CURRENT"
        case .behind: "BEHIND"
        case .ahead: "AHEAD"
        }
    }
}

/// A server does not start on a schema newer than it knows: it would misread the newer version's data, and its own
/// migrations would not undo the newer ones.
public struct SchemaNewerThanServer: Error, CustomStringConvertible {
    /// The versions the database has that this build does not know.
    public var unknown: [Int]
    /// The newest version this build knows.
    public var known: Int

    public var description: String {
        "The database's schema has version \(unknown.last ?? 0), newer than this server knows (up to \(known)): "
            + "a newer Assent migrated it. Run that version or a newer one; this one would misread its data."
    }
}
