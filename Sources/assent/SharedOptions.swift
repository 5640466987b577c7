/// Options every subcommand of a group takes, which a user may also put before the subcommand — `assent token
/// --profile DIR activate …`, `assent admin --json activation list …` — as in git or kubectl. They are moved after
/// the subcommand before parsing, where its option group reads them.
enum SharedOptions {
    struct Group {
        /// Options followed by a value (`--profile DIR` or `--profile=DIR`).
        var valued: Set<String>
        var flags: Set<String>
    }

    static let groups: [String: Group] = [
        "token": Group(valued: ["--profile"], flags: ["--json", "--pin-stdin"]),
        "admin": Group(valued: ["--url", "--api-key"], flags: ["--json"]),
    ]

    /// `arguments` (without the program name) with a group's shared options moved from before its subcommand to
    /// after it (before a `--`, if any). Anything else is left as it is, for the parser to judge.
    static func reordered(_ arguments: [String]) -> [String] {
        guard let first = arguments.first, let group = groups[first] else { return arguments }
        var moved: [String] = []
        var index = arguments.index(after: arguments.startIndex)
        while index < arguments.endIndex {
            let word = arguments[index]
            let name = String(word.prefix { $0 != "=" })
            if group.flags.contains(word) || (group.valued.contains(name) && word.contains("=")) {
                moved.append(word)
                index += 1
            } else if group.valued.contains(word), index + 1 < arguments.endIndex {
                moved += arguments[index...(index + 1)]
                index += 2
            } else {
                break
            }
        }
        guard !moved.isEmpty, index < arguments.endIndex else { return arguments }
        var rest = Array(arguments[index...])
        rest.insert(contentsOf: moved, at: rest.firstIndex(of: "--") ?? rest.endIndex)
        return [first] + rest
    }
}
