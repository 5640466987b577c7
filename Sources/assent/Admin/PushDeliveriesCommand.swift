import ArgumentParser
import AssentModel
import Foundation

/// `assent admin activation deliveries <id>` and `assent admin operation deliveries <id>`: the push delivery trace
/// (service, HTTP answer, outcome, the service's reason), newest first.
enum PushDeliveriesCommand {
    static func table(_ list: PushDeliveryList) -> [[String]] {
        [["AT", "SERVICE", "EVENT", "OPERATION", "ACTIVATION", "HTTP", "OUTCOME", "MS", "REASON"]]
            + list.deliveries.map {
                [
                    $0.at.formatted(.iso8601), $0.service, $0.event, $0.operationId, $0.activationId,
                    $0.httpStatus.map(String.init) ?? "-", $0.outcome, String($0.latencyMillis), $0.reason ?? "-",
                ]
            }
    }

    static func run(_ connection: ConnectionOptions, path: String) async throws {
        try await CLIFailure.reporting {
            let list = try await connection.client().get(path, as: PushDeliveryList.self)
            try connection.output(list) { table(list) }
        }
    }
}

extension ActivationCommand {
    struct Deliveries: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show an activation's newest push attempts and what became of them.",
            discussion: "Example: assent admin activation deliveries <id>")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The activation id.") var id: String

        func run() async throws {
            try await PushDeliveriesCommand.run(connection, path: "api/v1/activations/\(id)/push-deliveries")
        }
    }
}

extension OperationCommand {
    struct Deliveries: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show an operation's push attempts and what became of them.",
            discussion: "Example: assent admin operation deliveries <id>")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The operation id.") var id: String

        func run() async throws {
            try await PushDeliveriesCommand.run(connection, path: "api/v1/operations/\(id)/push-deliveries")
        }
    }
}
