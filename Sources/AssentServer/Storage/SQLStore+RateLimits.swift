import SQLKit

extension SQLStore {
    public func hitRateLimit(key: String, now: Millis, window: Millis) async throws -> (count: Int, windowEnd: Millis) {
        // One statement: concurrent hits from any process each add one. A window opens at a key's first hit and
        // lasts `window`; the first hit after it ended opens the next.
        let row = try await database.raw(
            """
            INSERT INTO rate_limits (key, window_end, count) VALUES (\(bind: key), \(bind: now + window), 1)
            ON CONFLICT (key) DO UPDATE SET
                count = CASE WHEN rate_limits.window_end <= \(bind: now) THEN 1 ELSE rate_limits.count + 1 END,
                window_end = CASE WHEN rate_limits.window_end <= \(bind: now) THEN excluded.window_end
                        ELSE rate_limits.window_end END
            RETURNING count, window_end
            """
        ).first()
        guard let row else { throw AssentServerError.internalError("The rate-limit counter returned no row.") }
        return (
            Int(try row.decode(column: "count", as: Int64.self)), try row.decode(column: "window_end", as: Int64.self)
        )
    }

    public func rateLimit(key: String, now: Millis) async throws -> (count: Int, windowEnd: Millis)? {
        try await database.raw(
            "SELECT count, window_end FROM rate_limits WHERE key = \(bind: key) AND window_end > \(bind: now)"
        ).first().map {
            (Int(try $0.decode(column: "count", as: Int64.self)), try $0.decode(column: "window_end", as: Int64.self))
        }
    }

    public func clearRateLimits(key: String, prefix: String) async throws -> Int {
        try await database.raw(
            """
            DELETE FROM rate_limits WHERE key = \(bind: key) OR key LIKE \(bind: Self.likePrefix(prefix)) ESCAPE '\\'
            RETURNING key
            """
        ).all().count
    }

    public func purgeRateLimits(before: Millis) async throws {
        try await database.raw("DELETE FROM rate_limits WHERE window_end < \(bind: before)").run()
    }
}
