import AssentModel
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A small client of the operator API.
struct OperatorClient {
    struct Failure: Error {
        var code: String
        var message: String
        var exitCode: Int32
    }

    let baseURL: URL
    let apiKey: String
    /// The application every request works with (`?application=`); `nil`: the server's first.
    var application: String? = nil

    func get<T: Decodable>(_ path: String, query: [URLQueryItem] = [], as type: T.Type) async throws -> T {
        try await send("GET", path, query: query, body: Optional<String>.none, as: type)
    }

    func post<T: Decodable, B: Encodable>(_ path: String, body: B?, as type: T.Type) async throws -> T {
        try await send("POST", path, body: body, as: type)
    }

    func delete<T: Decodable>(_ path: String, as type: T.Type) async throws -> T {
        try await send("DELETE", path, body: Optional<String>.none, as: type)
    }

    func send<T: Decodable, B: Encodable>(
        _ method: String, _ path: String, query: [URLQueryItem] = [], body: B?, as type: T.Type
    ) async throws -> T {
        guard var components = URLComponents(url: baseURL.appendingPathComponent(path), resolvingAgainstBaseURL: false)
        else { throw Failure(code: "ERR_USAGE", message: "The server URL is malformed.", exitCode: 2) }
        let items = query + (application.map { [URLQueryItem(name: "application", value: $0)] } ?? [])
        if !items.isEmpty { components.queryItems = items }
        guard let url = components.url else {
            throw Failure(code: "ERR_USAGE", message: "The server URL is malformed.", exitCode: 2)
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("Bearer \(apiKey)", forHTTPHeaderField: "Authorization")
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try OperatorJSON.encoder().encode(body)
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await URLSession.shared.data(for: request)
        } catch {
            throw Failure(
                code: CLIFailure.unreachableCode, message: CLIFailure.unreachable(baseURL.absoluteString, error),
                exitCode: 6)
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard (200..<300).contains(status) else {
            let error = try? OperatorJSON.decoder().decode(OperatorError.self, from: data)
            throw Failure(
                code: error?.code ?? "HTTP_\(status)", message: error?.message ?? "The server answered \(status).",
                exitCode: CLIFailure.exitCode(forStatus: status))
        }
        if T.self == Empty.self { return Empty() as! T }
        if T.self == RawBody.self { return RawBody(data: data) as! T }
        do {
            return try OperatorJSON.decoder().decode(type, from: data)
        } catch {
            throw Failure(
                code: "ERR_RESPONSE", message: "The server's answer is not what this CLI expects.", exitCode: 1)
        }
    }

    struct Empty: Decodable {}

    /// The answer's bytes as they came (an export of JSON lines, say).
    struct RawBody: Decodable {
        var data: Data
        init(data: Data) { self.data = data }
        init(from decoder: any Decoder) throws {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "A raw body is not decoded."))
        }
    }
}
