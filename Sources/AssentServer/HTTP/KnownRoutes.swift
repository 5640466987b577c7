import Synchronization

/// The router's routes as method and path pattern, so that a request for a known path with another method can be
/// answered 405 with `Allow` instead of 404. Filled once the routes are registered.
final class KnownRoutes: Sendable {
    private let routes = Mutex<[(method: String, segments: [Substring])]>([])
    private let dialects = Mutex<[(segments: [Substring], dialect: ErrorDialect)]>([])

    /// Records that the routes at `pattern` answer failures in `dialect`.
    func note(_ dialect: ErrorDialect, for pattern: String) {
        dialects.withLock { $0.append((pattern.split(separator: "/"), dialect)) }
    }

    /// The dialect of the routes at `path`; ``ErrorDialect/plain`` when no API route has the path.
    func dialect(for path: String) -> ErrorDialect {
        let segments = path.split(separator: "/")
        return dialects.withLock { $0.first { Self.matches($0.segments, segments) }?.dialect } ?? .plain
    }

    /// Records `(method, pattern)` pairs, patterns as the router prints them (`/api/v1/operations/{id}`).
    func set(_ list: [(method: String, pattern: String)]) {
        routes.withLock { $0 = list.map { ($0.method, $0.pattern.split(separator: "/")) } }
    }

    /// The methods some route serves at `path`, sorted; empty when no route has the path.
    func methods(for path: String) -> [String] {
        let segments = path.split(separator: "/")
        let methods = routes.withLock { routes in
            routes.filter { Self.matches($0.segments, segments) }.map(\.method)
        }
        return Set(methods).sorted()
    }

    private static func matches(_ pattern: [Substring], _ path: [Substring]) -> Bool {
        if pattern.last == "**" {
            return path.count >= pattern.count - 1 && zip(pattern.dropLast(), path).allSatisfy(same)
        }
        return pattern.count == path.count && zip(pattern, path).allSatisfy(same)
    }

    private static func same(_ pair: (Substring, Substring)) -> Bool {
        let (pattern, segment) = pair
        return pattern == segment || pattern == "*" || (pattern.hasPrefix("{") && pattern.hasSuffix("}"))
    }
}
