import Foundation

/// The operator API's OpenAPI 3.1 document, shipped as a resource and served at `/api/v1/openapi.json`.
enum OpenAPIDocument {
    static let json: Data = {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json"),
            let data = try? Data(contentsOf: url)
        else { preconditionFailure("The bundled openapi.json is missing: the build is broken.") }
        return data
    }()
}
