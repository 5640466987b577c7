import AssentModel
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Body reading, JSON responses and header access shared by the route groups.
enum HTTPSupport {
    /// The largest request body any endpoint accepts (1 MiB).
    static let maxBodySize = 1 << 20

    static let authorization = HTTPField.Name("X-PowerAuth-Authorization")!
    static let encryption = HTTPField.Name("X-PowerAuth-Encryption")!
    static let token = HTTPField.Name("X-PowerAuth-Token")!
    static let acceptLanguage = HTTPField.Name("Accept-Language")!

    /// The whole body, refusing more than ``maxBodySize`` bytes (the error middleware turns the overflow into 413).
    static func body(_ request: Request) async throws -> Data {
        Data(try await request.body.collect(upTo: maxBodySize).readableBytesView)
    }

    /// Decodes the body as `T`, or throws a 400 with the reason.
    static func decode<T: Decodable>(_ type: T.Type, from request: Request, decoder: JSONDecoder = JSONDecoder())
        async throws -> T
    {
        try decode(type, from: try await body(request), decoder: decoder)
    }

    /// Decodes `data` as `T`, or throws a 400 with the reason.
    static func decode<T: Decodable>(_ type: T.Type, from data: Data, decoder: JSONDecoder = JSONDecoder()) throws -> T
    {
        do {
            return try decoder.decode(type, from: data)
        } catch {
            throw AssentServerError.invalidRequest("The request body is not the expected JSON: \(describe(error))")
        }
    }

    /// A JSON response.
    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok, encoder: JSONEncoder = JSONEncoder())
        throws -> Response
    {
        let data = try encoder.encode(value)
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// A list's `limit` query parameter: an integer from 1 to 1000, 100 when absent.
    static func limit(_ text: String?) throws -> Int {
        guard let text else { return 100 }
        guard let limit = Int(text), (1...1000).contains(limit) else {
            throw AssentServerError.invalidRequest("limit is an integer from 1 to 1000 (default 100).")
        }
        return limit
    }

    /// A list's `status` query parameter (any case), `nil` when absent.
    static func operationStatus(_ text: String?) throws -> OperationStatus? {
        guard let text else { return nil }
        guard let status = OperationStatus(rawValue: text.uppercased()) else {
            throw AssentServerError.invalidRequest(
                "status is one of " + OperationStatus.allCases.map(\.rawValue).joined(separator: ", ") + ".")
        }
        return status
    }

    /// A short, secret-free description of a decoding error.
    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "field \(key.stringValue) is missing."
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "field \(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type."
        case DecodingError.dataCorrupted(let context) where !context.codingPath.isEmpty: context.debugDescription
        case DecodingError.dataCorrupted: "it is not valid JSON."
        default: "it cannot be read."
        }
    }
}
