import Hummingbird
import Logging
import NIOCore

/// The per-request context: Hummingbird's core storage plus the authenticated operator key, if any.
public struct AssentRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The operator API key that authenticated the request.
    public var apiKey: APIKeyRecord?
    /// The IP address of the connection's peer (what the rate limits key on), when known.
    public var clientAddress: String?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        apiKey = nil
        clientAddress = source.channel.remoteAddress?.ipAddress
    }

    /// Requests larger than this are refused with 413 before they are parsed.
    public var maxUploadSize: Int { HTTPSupport.maxBodySize }
}
