/// The one rule for the user ids the server accepts — in activations, operations and login accounts alike, so an id
/// valid in one place is valid in all: 1 to 255 Unicode scalars, no control characters, and no space (of any kind)
/// at either end. The OpenAPI document states the same rule as ``pattern``.
public enum UserID {
    /// The most Unicode scalars a user id has.
    public static let maximumLength = 255

    /// The rule as a JSON Schema (ECMA-262) pattern, checked against the document by the tests.
    public static let pattern =
        "^[^" + InputText.spaceClass + "]([^" + InputText.controlClass + "]*[^" + InputText.spaceClass + "])?$"

    /// What an error says when a user id breaks the rule.
    public static let requirement =
        "userId must be 1 to 255 characters without control characters or surrounding spaces."

    /// Whether `id` follows the rule.
    public static func isValid(_ id: String) -> Bool {
        let scalars = id.unicodeScalars
        guard let first = scalars.first, let last = scalars.last, !InputText.isSpace(first),
            !InputText.isSpace(last)
        else { return false }
        var count = 0
        for scalar in scalars {
            count += 1
            guard count <= maximumLength, !InputText.isControl(scalar) else { return false }
        }
        return true
    }
}
