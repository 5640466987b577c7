import ArgumentParser
import Foundation

/// `assent config`: the configuration file of `assent serve --config`.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Check a configuration file for assent serve, or list its keys.",
        subcommands: [Check.self, Keys.self])

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Name each mistake in a configuration file, without starting anything.",
            discussion: """
                Reads FILE as assent serve --config FILE would, in this shell's environment (whose variables win \
                over the file's keys), and checks every setting as serve does before it opens the database: \
                unknown keys, values of the wrong kind, unreadable secret files, secrets others can read, values out \
                of range, destinations the egress policy refuses. Exit 0 when there is none, 1 when there are.
                """)

        @Argument(help: "The configuration file (default: ASSENT_CONFIG).") var file: String?

        func run() async throws {
            let environment = ProcessInfo.processInfo.environment
            guard let path = file ?? environment["ASSENT_CONFIG"] else {
                throw ValidationError("Name the file: assent config check /etc/assent/assent.yaml.")
            }
            let (mistakes, overridden, count) = await Self.check(path, environment: environment)
            for (key, winner) in overridden {
                say("\(path): \(key) is also set by \(winner), which wins.")
            }
            guard mistakes.isEmpty else {
                FileHandle.standardError.write(
                    Data(mistakes.map { "error: \(path): \($0)\n" }.joined().utf8))
                FileHandle.standardError.write(
                    Data("\(path): \(mistakes.count) mistake\(mistakes.count == 1 ? "" : "s").\n".utf8))
                throw ExitCode.failure
            }
            say("\(path): \(count) setting\(count == 1 ? "" : "s"), no mistakes.")
        }

        /// Every mistake of the file at `path`, what the environment or command line overrides, and how many keys it sets.
        static func check(_ path: String, environment: [String: String]) async -> (
            mistakes: [String], overridden: [(key: String, by: String)], count: Int
        ) {
            let file: ServeConfiguration
            do {
                file = try ServeConfiguration(reading: path, commandLine: [], processEnvironment: environment)
            } catch {
                return (error.mistakes.map(\.description), [], 0)
            }
            var mistakes = file.mistakes.map(\.description)
            // Each option alone first, so that every value the parser refuses is named, not only the first; the
            // settings are then checked without them.
            var arguments: [String] = []
            for argument in file.arguments {
                do {
                    _ = try ServeCommand.parse([argument])
                    arguments.append(argument)
                } catch {
                    let key = String(argument.dropFirst(2).prefix { $0 != "=" })
                    let mistake = ServeConfiguration.Mistake(
                        line: file.lines[key], key: key, sentence: ServeCommand.message(for: error))
                    mistakes.append(mistake.description)
                }
            }
            let command: ServeCommand
            do {
                command = try ServeCommand.parse(arguments)
            } catch {
                return (mistakes + [ServeCommand.message(for: error)], file.overridden, file.count)
            }
            do {
                _ = try await command.settings(
                    environment: environment.merging(file.environment) { process, _ in process })
            } catch {
                mistakes += error.sentences
            }
            return (mistakes, file.overridden, file.count)
        }
    }

    struct Keys: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every key a configuration file may hold, with its environment variable.")

        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let keys = ServeConfiguration.keys
            if json {
                struct Row: Encodable {
                    var key: String
                    var kind: String
                    var environment: String?
                    var secret: Bool
                    var summary: String
                }
                let rows = keys.map {
                    Row(
                        key: $0.name, kind: Self.kind($0), environment: $0.environmentName, secret: $0.isSecret,
                        summary: $0.summary)
                }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                say(String(decoding: try encoder.encode(rows), as: UTF8.self))
                return
            }
            let width = keys.map { $0.name.count + ($0.isSecret ? 7 : 0) }.max() ?? 0
            for key in keys {
                let name = key.name + (key.isSecret ? "[-file]" : "")
                let padded = name.padding(toLength: width + 2, withPad: " ", startingAt: 0)
                let kind = Self.kind(key).padding(toLength: 12, withPad: " ", startingAt: 0)
                say(padded + kind + (key.environmentName.map { $0 + "  " } ?? "") + key.summary)
            }
        }

        static func kind(_ key: ServeConfiguration.Key) -> String {
            switch key.kind {
            case .flag: "true|false"
            case .value: "value"
            case .list: "list"
            case .secret: "secret"
            }
        }
    }
}
