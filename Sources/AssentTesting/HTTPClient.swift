import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A failed expectation inside a test helper, with a sentence saying what.
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A minimal HTTP client over URLSession, with enough connections for the concurrency tests.
public struct HTTPClient: Sendable {
    /// A response: status, headers and body.
    public struct Response: Sendable {
        public var status: Int
        public var body: Data
        /// Header values by lower-cased name.
        public var headerValues: [String: String] = [:]
        public var text: String { String(decoding: body, as: UTF8.self) }

        /// The value of the header `name` (any case).
        public func header(_ name: String) -> String? { headerValues[name.lowercased()] }

        /// The `code` of a PowerAuth or operator error body.
        public var errorCode: String? { errorFields?.code }

        /// The `message` of a PowerAuth or operator error body.
        public var errorMessage: String? { errorFields?.message }

        /// `code` and `message` from `{"responseObject": {…}}` (PowerAuth) or the top level (operator API).
        private var errorFields: (code: String?, message: String?)? {
            struct Fields: Decodable {
                let code: String?
                let message: String?
            }
            struct Envelope: Decodable {
                let responseObject: Fields?
                let code: String?
                let message: String?
            }
            guard let envelope = try? JSONDecoder().decode(Envelope.self, from: body) else { return nil }
            return (
                envelope.responseObject?.code ?? envelope.code, envelope.responseObject?.message ?? envelope.message
            )
        }
    }

    public let base: URL
    let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        // Generous: on a small shared machine a request can wait long behind the tests running beside it.
        configuration.timeoutIntervalForRequest = 120
        return URLSession(configuration: configuration)
    }()

    /// Creates a client for a server base URL.
    public init(base: URL) { self.base = base }

    /// Sends a request and returns the whole response.
    public func send(_ method: String, _ path: String, headers: [String: String] = [:], body: Data = Data())
        async throws
        -> Response
    {
        var request = URLRequest(url: URL(string: path, relativeTo: base)!)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if !body.isEmpty || method == "POST" { request.httpBody = body }
        let (data, response) = try await session.data(for: request)
        let http = response as? HTTPURLResponse
        var headerValues: [String: String] = [:]
        for (name, value) in http?.allHeaderFields ?? [:] {
            headerValues["\(name)".lowercased()] = "\(value)"
        }
        return Response(status: http?.statusCode ?? 0, body: data, headerValues: headerValues)
    }
}
