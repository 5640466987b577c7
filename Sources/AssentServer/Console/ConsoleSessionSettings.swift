/// How long a console session lasts: it ends after a spell without the operator's pages or actions, and in any case
/// some hours after signing in, so that an unattended browser or a stolen cookie does not stay signed in.
public struct ConsoleSessionSettings: Sendable, Equatable {
    /// Seconds after the operator's last page or action (default 30 minutes; PCI DSS asks for 15 at most). A live
    /// page's stream does not count: it is the page, not the person.
    public var idleTimeout = 1800
    /// Seconds after signing in, however active (default 12 hours).
    public var maxLifetime = 43_200

    /// What `idleTimeout` may be: a minute to a day.
    public static let idleRange = 60...86_400
    /// What `maxLifetime` may be: five minutes to a week.
    public static let maxRange = 300...604_800

    public init() {}

    /// Refuses values out of range, and an idle timeout longer than the whole session.
    public func validate() throws {
        guard Self.idleRange.contains(idleTimeout) else {
            throw AssentServerError.invalidRequest("The console's idle timeout is 60 to 86400 seconds.")
        }
        guard Self.maxRange.contains(maxLifetime) else {
            throw AssentServerError.invalidRequest("The console's longest session is 300 to 604800 seconds.")
        }
        guard idleTimeout <= maxLifetime else {
            throw AssentServerError.invalidRequest(
                "The console's idle timeout is longer than its longest session: shorten it, or lengthen that.")
        }
    }
}
