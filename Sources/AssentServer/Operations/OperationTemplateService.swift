import AssentModel
import Foundation

/// Operation templates: named operation bodies with `${placeholders}`, saved and removed by the operator, filled in
/// when an operation names one. Each application has its own.
public struct OperationTemplateService: Sendable {
    /// The part of the store this sees.
    let store: any OperationStore
    let clock: WallClock
    let audit: Auditor

    /// A saved template.
    public struct Template: Sendable, Equatable {
        public var name: String
        public var body: [String: JSONValue]
        public var updatedAt: Millis
    }

    /// Saves `body` as the application's template `name`, replacing one of that name.
    public func save(name: String, body: [String: JSONValue], in application: ApplicationRecord, actor: String)
        async throws -> Template
    {
        guard OperationService.isName(name) else {
            throw AssentServerError.invalidRequest("A template name is 1 to 64 letters, digits, '_', '.', '-'.")
        }
        do {
            try OperationTemplate.validate(body)
        } catch let error as OperationDataError {
            throw AssentServerError.invalidRequest(error.message)
        }
        let now = clock.millis
        try await store.putTemplate(
            applicationId: application.id, name: name,
            body: String(decoding: try JSONEncoder().encode(body), as: UTF8.self), at: now)
        await audit(
            .operationTemplateSaved, application: application.id, actor: actor,
            "Template \(name) of application \(application.id) saved.")
        return Template(name: name, body: body, updatedAt: now)
    }

    /// Every template of the application, by name.
    public func all(in application: ApplicationRecord) async throws -> [Template] {
        try await store.templates(applicationId: application.id).map {
            Template(name: $0.name, body: try Self.decode($0.body), updatedAt: $0.updatedAt)
        }
    }

    /// Removes the application's template `name`, or answers that there is none.
    public func delete(name: String, in application: ApplicationRecord, actor: String) async throws {
        guard try await store.deleteTemplate(applicationId: application.id, name: name) else {
            throw AssentServerError.notFound("No operation template is named \(name).")
        }
        await audit(
            .operationTemplateDeleted, application: application.id, actor: actor,
            "Template \(name) of application \(application.id) deleted.")
    }

    /// Merges the application's named template (placeholders filled with `params`) under the request's own fields.
    func instantiate(_ request: CreateOperationRequest, in application: ApplicationRecord) async throws
        -> CreateOperationRequest
    {
        guard let name = request.template else {
            guard request.params == nil else {
                throw AssentServerError.invalidRequest("params are only used together with template.")
            }
            return request
        }
        guard let stored = try await store.template(applicationId: application.id, name: name) else {
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

extension Migrations {
    /// Version 27: operation templates are each application's own; the templates there were become the first
    /// application's. SQLite rebuilds the table (its primary key cannot change; the version applies whole or not at
    /// all); PostgreSQL's statements are idempotent, as concurrent starts need.
    static func templatesPerApplicationV27(_ dialect: Dialect) -> [String] {
        let first = "(SELECT id FROM applications ORDER BY created_at LIMIT 1)"
        guard dialect == .sqlite else {
            return [
                "ALTER TABLE operation_templates ADD COLUMN IF NOT EXISTS application_id TEXT REFERENCES applications(id)",
                "UPDATE operation_templates SET application_id = \(first) WHERE application_id IS NULL",
                "ALTER TABLE operation_templates DROP CONSTRAINT IF EXISTS operation_templates_pkey",
                """
                CREATE UNIQUE INDEX IF NOT EXISTS operation_templates_application_name
                ON operation_templates(application_id, name)
                """,
            ]
        }
        return [
            """
            CREATE TABLE operation_templates_by_application (
                application_id TEXT NOT NULL REFERENCES applications(id),
                name TEXT NOT NULL,
                body TEXT NOT NULL,
                updated_at \(dialect.bigint) NOT NULL,
                PRIMARY KEY (application_id, name)
            )
            """,
            """
            INSERT INTO operation_templates_by_application (application_id, name, body, updated_at)
            SELECT \(first), name, body, updated_at FROM operation_templates WHERE EXISTS (SELECT 1 FROM applications)
            """,
            "DROP TABLE operation_templates",
            "ALTER TABLE operation_templates_by_application RENAME TO operation_templates",
        ]
    }
}
