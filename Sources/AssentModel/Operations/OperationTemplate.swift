import Foundation

/// Fills an operation template's `{placeholders}` with a relying party's parameters.
public enum OperationTemplate {
    /// The fields a template may set (those of ``CreateOperationRequest`` except `userId`, `template`, `params`).
    public static let fields: Set<String> = [
        "name", "data", "formData", "defaultLanguage", "ui", "allowedSignatureType", "expiresIn",
        "maxFailedAttempts", "proximityCheck",
    ]

    /// Throws unless `body` only has template fields.
    public static func validate(_ body: [String: JSONValue]) throws {
        let unknown = Set(body.keys).subtracting(fields)
        guard unknown.isEmpty else {
            throw OperationDataError(
                message: "A template cannot set \(unknown.sorted().joined(separator: ", ")); it may set "
                    + fields.sorted().joined(separator: ", ") + ".")
        }
    }

    /// The template with every placeholder replaced. A string that is exactly `{name}` becomes the parameter's JSON
    /// value; inside longer strings the parameter's text is inserted (escaped for operation data in `data`).
    /// Throws naming every missing parameter.
    public static func instantiate(_ body: [String: JSONValue], params: [String: JSONValue]) throws
        -> [String: JSONValue]
    {
        let missing = Set(body.values.flatMap(placeholderNames)).subtracting(params.keys).sorted()
        guard missing.isEmpty else {
            throw OperationDataError(
                message: "The template needs the parameter\(missing.count == 1 ? "" : "s") "
                    + missing.joined(separator: ", ") + ".")
        }
        return try body.reduce(into: [:]) { result, entry in
            result[entry.key] = try substitute(entry.value, params: params, inData: entry.key == "data")
        }
    }

    /// The parameters `body` needs, sorted.
    public static func parameters(of body: [String: JSONValue]) -> [String] {
        Set(body.values.flatMap(placeholderNames)).sorted()
    }

    private static func placeholderNames(_ value: JSONValue) -> [String] {
        switch value {
        case .string(let text): placeholders(in: text).map(\.name)
        case .array(let items): items.flatMap(placeholderNames)
        case .object(let members): members.values.flatMap(placeholderNames)
        default: []
        }
    }

    private static func substitute(_ value: JSONValue, params: [String: JSONValue], inData: Bool) throws -> JSONValue {
        switch value {
        case .string(let text):
            return try substitute(text, params: params, inData: inData)
        case .array(let items):
            return .array(try items.map { try substitute($0, params: params, inData: inData) })
        case .object(let members):
            return .object(try members.mapValues { try substitute($0, params: params, inData: inData) })
        default:
            return value
        }
    }

    private static func substitute(_ text: String, params: [String: JSONValue], inData: Bool) throws -> JSONValue {
        let placeholders = Self.placeholders(in: text)
        if placeholders.count == 1, placeholders[0].range == text.startIndex..<text.endIndex, !inData {
            return try parameter(placeholders[0].name, params)
        }
        var result = ""
        var cursor = text.startIndex
        for placeholder in placeholders {
            result += text[cursor..<placeholder.range.lowerBound]
            guard let value = try parameter(placeholder.name, params).text else {
                throw OperationDataError(message: "Template parameter \(placeholder.name) must be a string or number.")
            }
            result += inData ? OperationData.escape(value) : value
            cursor = placeholder.range.upperBound
        }
        result += text[cursor...]
        return .string(result)
    }

    private static func parameter(_ name: String, _ params: [String: JSONValue]) throws -> JSONValue {
        guard let value = params[name] else {
            throw OperationDataError(message: "The template needs the parameter \(name).")
        }
        return value
    }

    /// `{name}` occurrences where name is letters, digits, `_` or `.`.
    private static func placeholders(in text: String) -> [(name: String, range: Range<String.Index>)] {
        var found: [(String, Range<String.Index>)] = []
        var index = text.startIndex
        while let open = text[index...].firstIndex(of: "{") {
            let nameStart = text.index(after: open)
            guard let close = text[nameStart...].firstIndex(of: "}") else { break }
            let name = text[nameStart..<close]
            if !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ".") })
            {
                found.append((String(name), open..<text.index(after: close)))
                index = text.index(after: close)
            } else {
                index = nameStart
            }
        }
        return found
    }
}
