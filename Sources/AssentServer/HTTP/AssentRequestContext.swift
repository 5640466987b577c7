import Hummingbird
import Logging
import NIOCore

/// The per-request context: Hummingbird's core storage plus the authenticated operator key, if any.
public struct AssentRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The operator API key that authenticated the request.
    public var apiKey: APIKeyRecord?
    /// The application an operator request named (`?application=`); `nil`: the first one.
    public var application: ApplicationRecord?
    /// The client's IP address, when known: the connection's peer, or behind a trusted proxy the address it
    /// forwarded (``ClientAddressMiddleware``).
    public var clientAddress: String?
    /// What the per-address rate limits count for this client (``IPNetwork/limitKey(of:)``: an IPv6 client's /64).
    public var clientLimitKey: String? { clientAddress.map(IPNetwork.limitKey(of:)) }

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        apiKey = nil
        application = nil
        clientAddress = source.channel.remoteAddress?.ipAddress
    }

    /// Requests larger than this are refused with 413 before they are parsed.
    public var maxUploadSize: Int { HTTPSupport.maxBodySize }
}
