import AssentModel
import Foundation

/// Operation templates: named operation bodies with `${placeholders}`, saved and removed by the operator, filled in
/// when an operation names one.
public struct OperationTemplateService: Sendable {
    let environment: ServerEnvironment
    /// The part of the store this sees.
    var store: any OperationStore { environment.store }

    public init(environment: ServerEnvironment) { self.environment = environment }

    /// A saved template.
    public struct Template: Sendable, Equatable {
        public var name: String
        public var body: [String: JSONValue]
        public var updatedAt: Millis
    }

    /// Saves `body` as the template `name`, replacing one of that name.
    public func save(name: String, body: [String: JSONValue], actor: String) async throws -> Template {
        guard OperationService.isName(name) else {
            throw AssentServerError.invalidRequest("A template name is 1 to 64 letters, digits, '_', '.', '-'.")
        }
        do {
            try OperationTemplate.validate(body)
        } catch let error as OperationDataError {
            throw AssentServerError.invalidRequest(error.message)
        }
        let now = environment.nowMillis
        try await store.putTemplate(
            name: name, body: String(decoding: try JSONEncoder().encode(body), as: UTF8.self), at: now)
        await environment.audit(.operationTemplateSaved, actor: actor, "Template \(name) saved.")
        return Template(name: name, body: body, updatedAt: now)
    }

    /// Every template, by name.
    public func all() async throws -> [Template] {
        try await store.templates().map {
            Template(name: $0.name, body: try Self.decode($0.body), updatedAt: $0.updatedAt)
        }
    }

    /// Removes the template `name`, or answers that there is none.
    public func delete(name: String, actor: String) async throws {
        guard try await store.deleteTemplate(name: name) else {
            throw AssentServerError.notFound("No operation template is named \(name).")
        }
        await environment.audit(.operationTemplateDeleted, actor: actor, "Template \(name) deleted.")
    }

    /// Merges the named template (placeholders filled with `params`) under the request's own fields.
    func instantiate(_ request: CreateOperationRequest) async throws -> CreateOperationRequest {
        guard let name = request.template else {
            guard request.params == nil else {
                throw AssentServerError.invalidRequest("params are only used together with template.")
            }
            return request
        }
        guard let stored = try await store.template(name: name) else {
            throw AssentServerError.notFound("No operation template is named \(name).")
        }
        let body = try Self.decode(stored.body)
        let filled: [String: JSONValue]
        do {
            filled = try OperationTemplate.instantiate(body, params: request.params ?? [:])
        } catch let error as OperationDataError {
            throw AssentServerError.invalidRequest(error.message)
        }
        var own = try JSONDecoder().decode([String: JSONValue].self, from: try JSONEncoder().encode(request))
        own["template"] = nil
        own["params"] = nil
        let merged = filled.merging(own) { _, requestValue in requestValue }
        do {
            var result = try OperationService.strictDecoder().decode(
                CreateOperationRequest.self, from: try JSONEncoder().encode(merged))
            result.template = name
            return result
        } catch {
            throw AssentServerError.invalidRequest(
                "Template \(name) filled with the parameters is not a valid operation: \(HTTPSupport.describe(error))")
        }
    }

    private static func decode(_ body: String) throws -> [String: JSONValue] {
        try JSONDecoder().decode([String: JSONValue].self, from: Data(body.utf8))
    }
}
