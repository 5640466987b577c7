import ArgumentParser
import Foundation
import Synchronization
import Yams

/// The configuration file of `assent serve --config FILE`: a YAML mapping whose keys are the long names of `serve`'s
/// flags (`port: 8080`, `trusted-proxy: [10.0.0.0/8]`, `no-rate-limits: false`) and of the secrets otherwise only
/// read from the environment (`smtp-password`, `webhook-secret`, …). Every secret, and `database`, may instead be
/// read from a file: `smtp-password-file: /run/credentials/assent.service/smtp-password`.
///
/// What wins: a flag on the command line, then the environment variable a setting documents, then the file, then
/// the default. The keys come from the parser's own description of `serve`, so a new flag has its key at once.
struct ServeConfiguration {
    /// One setting the file may hold.
    struct Key: Sendable, Equatable {
        enum Kind: Sendable, Equatable {
            /// A flag: `true` or `false`.
            case flag
            /// An option with one value.
            case value
            /// A repeatable option: one value or a list.
            case list
            /// A secret only read from the environment.
            case secret
        }

        var name: String
        var kind: Kind
        /// The environment variable that sets it too, if any (and which then wins over the file).
        var environmentName: String?
        /// Whether its value is a secret: never printed, may come from `NAME-file`, refused inline in a file others
        /// can read.
        var isSecret: Bool
        var summary: String
    }

    /// The secrets `serve` reads only from the environment, by key.
    static let environmentSecrets: [(key: String, environmentName: String, summary: String)] = [
        ("webhook-secret", "ASSENT_WEBHOOK_SECRET", "HMAC key of webhook deliveries (at least 16 characters)."),
        ("hms-app-secret", "ASSENT_HMS_APP_SECRET", "Huawei Push Kit app secret."),
        ("smtp-password", "ASSENT_SMTP_PASSWORD", "Password of the mail relay user."),
        (
            "phone-gateway-secret", "ASSENT_PHONE_GATEWAY_SECRET",
            "HMAC key of the SMS and voice gateway's messages (at least 16 characters)."
        ),
        ("audit-witness-secret", "ASSENT_AUDIT_WITNESS_SECRET", "HMAC key of audit checkpoints sent to a URL."),
        (
            "kek", "ASSENT_KEK",
            "The key-encryption keys (Base64, separated by commas), instead of the kek file in the data directory."
        ),
    ]

    /// Options that hold a secret although they are flags.
    static let secretOptions: Set<String> = ["database"]

    /// Options the file cannot set: the file itself, and what only the parser uses.
    static let notKeys: Set<String> = ["config", "help", "version", "experimental-dump-help"]

    /// Every key, from `serve`'s own description: its flags and options, then the environment's secrets.
    static let keys: [Key] = {
        struct Tool: Decodable {
            struct Command: Decodable { var arguments: [Argument]? }
            struct Argument: Decodable {
                struct Name: Decodable {
                    var kind: String
                    var name: String
                }
                var kind: String
                var names: [Name]?
                var isRepeating: Bool
                var abstract: String?
                var discussion: String?
            }
            var command: Command
        }
        guard let tool = try? JSONDecoder().decode(Tool.self, from: Data(ServeCommand._dumpHelp().utf8)) else {
            preconditionFailure("The argument parser's description of serve is not the JSON it documents.")
        }
        var keys: [Key] = []
        for argument in tool.command.arguments ?? [] {
            guard argument.kind != "positional",
                let name = argument.names?.first(where: { $0.kind == "long" })?.name, !notKeys.contains(name)
            else { continue }
            let help = (argument.abstract ?? "") + " " + (argument.discussion ?? "")
            let environmentName = help.firstMatch(of: /Env: (ASSENT_[A-Z0-9_]+)/).map { String($0.1) }
            let kind: Key.Kind = argument.kind == "flag" ? .flag : argument.isRepeating ? .list : .value
            let summary = String(argument.abstract?.prefix { $0 != "\n" } ?? "")
                .replacing(/\s?Env: ASSENT_[A-Z0-9_]+(, comma-separated)?\.?/, with: "")
            keys.append(
                Key(
                    name: name, kind: kind, environmentName: environmentName,
                    isSecret: secretOptions.contains(name), summary: summary))
        }
        for secret in environmentSecrets {
            keys.append(
                Key(
                    name: secret.key, kind: .secret, environmentName: secret.environmentName, isSecret: true,
                    summary: secret.summary))
        }
        return keys
    }()

    /// A mistake in the file, with where it is.
    struct Mistake: Error, Equatable, CustomStringConvertible {
        var line: Int?
        var key: String?
        var sentence: String

        var description: String {
            [line.map { "line \($0)" }, key].compactMap { $0 }.joined(separator: ", ")
                + (line == nil && key == nil ? "" : ": ") + sentence
        }
    }

    /// Every mistake the file has, named.
    struct Mistakes: Error {
        var path: String
        var mistakes: [Mistake]
    }

    /// The file's path.
    var path: String
    /// The arguments the file's flags and options stand for, to be parsed before the command line's.
    var arguments: [String] = []
    /// The secrets the file holds, by the environment variable they stand for.
    var environment: [String: String] = [:]
    /// Keys the file sets that the command line or the environment set too (and which win).
    var overridden: [(key: String, by: String)] = []
    /// How many keys the file sets.
    var count = 0
    /// The line each key of the file is on.
    var lines: [String: Int] = [:]
    /// What is wrong in the file; its other keys are read all the same.
    var mistakes: [Mistake] = []

    /// Reads `path` for a `serve` whose own command line is `commandLine` in `processEnvironment`.
    /// - Throws: ``Mistakes`` naming every mistake found.
    static func load(path: String, commandLine: [String], processEnvironment: [String: String]) throws(Mistakes)
        -> ServeConfiguration
    {
        let file = try ServeConfiguration(
            reading: path, commandLine: commandLine, processEnvironment: processEnvironment)
        guard file.mistakes.isEmpty else { throw Mistakes(path: path, mistakes: file.mistakes) }
        return file
    }

    /// Reads `path`, keeping each key that is right and a ``Mistake`` for each that is not.
    /// - Throws: ``Mistakes`` when the file cannot be read as a YAML mapping at all.
    init(reading path: String, commandLine: [String], processEnvironment: [String: String]) throws(Mistakes) {
        self.path = path
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Mistakes(path: path, mistakes: [Mistake(sentence: "The file cannot be read.")])
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw Mistakes(path: path, mistakes: [Mistake(sentence: "The file is not UTF-8 text.")])
        }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            throw Mistakes(path: path, mistakes: [Self.mistake(parsing: error)])
        }
        guard let root else { return }  // An empty file sets nothing.
        guard case .mapping(let mapping) = root else {
            throw Mistakes(
                path: path,
                mistakes: [
                    Mistake(
                        line: root.mark?.line,
                        sentence: "The file is a mapping of keys to values, such as `port: 8080` on a line of its own.")
                ])
        }
        let othersCanRead = Self.othersCanRead(path)
        let given = Self.flagsGiven(in: commandLine)
        let byName = Dictionary(Self.keys.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var seen: Set<String> = []
        for (keyNode, value) in mapping {
            let line = keyNode.mark?.line
            guard case .scalar(let scalar) = keyNode else {
                mistakes.append(Mistake(line: line, sentence: "A key is a flag's name, such as port."))
                continue
            }
            var name = scalar.string
            var fromFile = false
            if byName[name] == nil, name.hasSuffix("-file"), let secret = byName[String(name.dropLast(5))],
                secret.isSecret
            {
                name = secret.name
                fromFile = true
            }
            guard let key = byName[name] else {
                mistakes.append(Mistake(line: line, key: scalar.string, sentence: Self.unknown(scalar.string)))
                continue
            }
            guard seen.insert(key.name).inserted else {
                mistakes.append(
                    Mistake(
                        line: line, key: scalar.string,
                        sentence: "\(key.name) is set twice (as \(key.name) and \(key.name)-file): keep one."))
                continue
            }
            count += 1
            lines[key.name] = line
            let texts: [String]
            do throws(Mistake) {
                texts = try Self.texts(of: value, for: key, fromFile: fromFile)
            } catch {
                mistakes.append(Mistake(line: value.mark?.line ?? line, key: scalar.string, sentence: error.sentence))
                continue
            }
            if key.isSecret, !fromFile, othersCanRead {
                mistakes.append(
                    Mistake(
                        line: line, key: scalar.string,
                        sentence: "A secret is written in a file every user of this machine can read: move it to "
                            + "\(key.name)-file, or make the file unreadable to others (chmod o-rwx)."))
                continue
            }
            var secretValue: String?
            if fromFile {
                do throws(Mistake) {
                    secretValue = try Self.secret(at: texts[0], for: key)
                } catch {
                    mistakes.append(Mistake(line: line, key: scalar.string, sentence: error.sentence))
                    continue
                }
            }
            if given.contains(key.name) {
                overridden.append((key.name, "--\(key.name) on the command line"))
                continue
            }
            if let variable = key.environmentName, processEnvironment[variable] != nil {
                overridden.append((key.name, variable))
                continue
            }
            if key.isSecret, let variable = key.environmentName {
                environment[variable] = secretValue ?? texts.joined(separator: ",")
                continue
            }
            switch key.kind {
            case .flag: arguments += texts == ["true"] ? ["--\(key.name)"] : []
            case .value, .list, .secret: arguments += texts.flatMap { ["--\(key.name)=\($0)"] }
            }
        }
    }

    /// The texts a value stands for: `true`/`false` for a flag, one text for an option, one or more for a list.
    private static func texts(of value: Node, for key: Key, fromFile: Bool) throws(Mistake) -> [String] {
        func scalarText(_ node: Node) throws(Mistake) -> String {
            guard case .scalar(let scalar) = node else {
                throw Mistake(sentence: "The value is one text or number, not a list or a mapping.")
            }
            return scalar.string
        }
        if fromFile {
            let path = try scalarText(value)
            guard path.hasPrefix("/") else { throw Mistake(sentence: "The file is named by its absolute path.") }
            return [path]
        }
        switch key.kind {
        case .flag:
            guard case .scalar(let scalar) = value, scalar.style == .plain, ["true", "false"].contains(scalar.string)
            else { throw Mistake(sentence: "\(key.name) is true or false.") }
            return [scalar.string]
        case .value, .secret:
            let text = try scalarText(value)
            guard !text.isEmpty else { throw Mistake(sentence: "The value is empty: give one, or leave the key out.") }
            return [text]
        case .list:
            switch value {
            case .sequence(let sequence):
                var texts: [String] = []
                for item in sequence {
                    guard case .scalar(let scalar) = item, !scalar.string.isEmpty else {
                        throw Mistake(sentence: "Each item of the list is one text, such as 10.0.0.0/8.")
                    }
                    texts.append(scalar.string)
                }
                return texts
            default:
                return [try scalarText(value)]
            }
        }
    }

    /// The secret held by the file at `path`, without its final line break.
    private static func secret(at path: String, for key: Key) throws(Mistake) -> String {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else { throw Mistake(sentence: "The secret file \(path) cannot be read.") }
        if othersCanRead(path) {
            throw Mistake(
                sentence: "The secret file \(path) can be read by every user of this machine: chmod o-rwx it.")
        }
        var secret = Substring(text)
        while secret.last == "\n" || secret.last == "\r" { secret = secret.dropLast() }
        guard !secret.isEmpty else { throw Mistake(sentence: "The secret file \(path) is empty.") }
        return String(secret)
    }

    /// Whether users other than the owner and the group can read the file at `path`.
    static func othersCanRead(_ path: String) -> Bool {
        let mode = (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
        return (mode ?? 0) & 0o004 != 0
    }

    /// The long names of the flags and options `commandLine` gives (`--port 1`, `--port=1`).
    static func flagsGiven(in commandLine: [String]) -> Set<String> {
        Set(
            commandLine.compactMap { word -> String? in
                guard word.hasPrefix("--"), word.count > 2 else { return nil }
                return String(word.dropFirst(2).prefix { $0 != "=" })
            })
    }

    /// The sentence for a key no setting has, with the nearest keys.
    static func unknown(_ name: String) -> String {
        let close = keys.map(\.name).filter { Assent.editDistance($0, name) <= 2 }
        let names = keys.map(\.name).filter { $0 == name + "s" || name.hasPrefix($0) && $0.count > 3 }
        let suggestions = (close + names).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        return "No setting is called \(name)"
            + (suggestions.isEmpty
                ? "; `assent config keys` lists them."
                : ". Did you mean " + suggestions.map { "\($0)" }.joined(separator: " or ") + "?")
    }

    /// A YAML syntax error as a sentence with its line, without quoting the line (it may hold a secret).
    static func mistake(parsing error: any Error) -> Mistake {
        guard let error = error as? YamlError else { return Mistake(sentence: "The file is not YAML.") }
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _),
            .composer(_, let problem, let mark, _):
            return Mistake(line: mark.line, sentence: "The file is not YAML: \(problem) (column \(mark.column)).")
        case .duplicatedKeysInMapping(let duplicates, _):
            return Mistake(sentence: "A key is set twice: \(duplicates.sorted().joined(separator: ", ")).")
        default:
            return Mistake(sentence: "The file is not YAML.")
        }
    }

    /// `arguments` of `assent …` with the file of `serve --config FILE` (or `ASSENT_CONFIG`) read: its settings put
    /// before the command line's, and its secrets returned as environment variables.
    /// - Throws: ``Mistakes`` when the file has any.
    static func expanding(_ arguments: [String], environment: [String: String]) throws(Mistakes) -> (
        arguments: [String], environment: [String: String]
    ) {
        guard arguments.first == "serve", let path = configPath(in: Array(arguments.dropFirst()), environment)
        else { return (arguments, environment) }
        let file = try ServeConfiguration.load(
            path: path, commandLine: Array(arguments.dropFirst()), processEnvironment: environment)
        return (
            ["serve"] + file.arguments + arguments.dropFirst(),
            environment.merging(file.environment) { process, _ in process }
        )
    }

    /// The value of `--config` (`--config FILE`, `--config=FILE`), else `ASSENT_CONFIG`.
    static func configPath(in commandLine: [String], _ environment: [String: String]) -> String? {
        for (index, word) in commandLine.enumerated() {
            if word == "--" { break }
            if word.hasPrefix("--config=") { return String(word.dropFirst("--config=".count)) }
            if word == "--config", index + 1 < commandLine.count { return commandLine[index + 1] }
        }
        return environment["ASSENT_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
    }
}

/// The environment `serve`'s settings are read from: the process's, with the secrets of its configuration file.
enum SettingsEnvironment {
    private static let chosen = Mutex<[String: String]?>(nil)

    static var current: [String: String] { chosen.withLock { $0 } ?? ProcessInfo.processInfo.environment }

    /// Set once, before the command runs.
    static func use(_ environment: [String: String]) { chosen.withLock { $0 = environment } }
}
