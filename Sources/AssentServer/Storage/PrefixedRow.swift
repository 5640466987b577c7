import SQLKit

/// The columns of a row whose names begin with `prefix`, under their names without it: two tables read in one
/// statement (`a.id AS a_id, o.id AS o_id`) decoded each by its own decoder.
struct PrefixedRow: SQLRow {
    let base: any SQLRow
    let prefix: String

    var allColumns: [String] {
        base.allColumns.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    func contains(column: String) -> Bool { base.contains(column: prefix + column) }

    func decodeNil(column: String) throws -> Bool { try base.decodeNil(column: prefix + column) }

    func decode<D: Decodable>(column: String, as type: D.Type) throws -> D {
        try base.decode(column: prefix + column, as: type)
    }
}
