import AssentCrypto
import AssentModel
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The live statuses of a console page: `GET /console/live?activations=…&operations=…` (ids, comma-separated) is
/// an event stream that sends `status` events (`{"id": …, "status": …}`) — every listed status at once, then each
/// change. It looks again every two seconds, and at once when the one event stream announces news for the user of
/// a page about one user; it ends after 15 minutes (the page's script reconnects).
struct ConsoleLive: Sendable {
    let activations: ActivationService
    let operations: OperationService
    /// Wakes the stream of a page about one user.
    let events: EventHub

    /// The most ids one stream follows of each kind.
    static let limit = 100

    struct Change: Encodable {
        var id: String
        var status: String
    }

    func stream(_ visit: ConsolePages.Visit) async throws -> Response {
        func ids(_ name: String) -> [String] {
            Array(
                (visit.query(name) ?? "").split(separator: ",").map(String.init).filter {
                    (1...64).contains($0.utf8.count)
                }
                .prefix(Self.limit))
        }
        let requestedActivations = visit.allows(.activationsRead) ? ids("activations") : []
        let requestedOperations = visit.allows(.operationsRead) ? ids("operations") : []
        var users = Set<String>()
        // Only the visit's application's: another's ids are not followed.
        var ownActivations: [String] = []
        for id in requestedActivations {
            if let activation = try await activations.find(id: id), activation.applicationId == visit.application.id {
                ownActivations.append(id)
                if ownActivations.count == 1 { users.insert(activation.userId) }
            }
        }
        var ownOperations: [String] = []
        for id in requestedOperations {
            if let operation = try await operations.find(id: id), operation.applicationId == visit.application.id {
                ownOperations.append(id)
                if ownOperations.count == 1, let user = operation.userId { users.insert(user) }
            }
        }
        let (activationIds, operationIds) = (ownActivations, ownOperations)
        let subscription = users.count == 1 ? users.first.map { events.subscribe(userId: $0) } : nil
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // The state: the status last sent per id, and how many looks in a row found nothing new.
        return WebPages.eventStream(subscription: subscription, state: ([String: String](), 0)) {
            writer, state, pause in
            var changes: [Change] = []
            for id in activationIds {
                if let current = try await activations.find(id: id)?.state.name, state.0[id] != current {
                    changes.append(Change(id: id, status: current))
                }
            }
            for id in operationIds {
                if let current = try await operations.find(id: id)?.status.rawValue, state.0[id] != current {
                    changes.append(Change(id: id, status: current))
                }
            }
            for change in changes {
                state.0[change.id] = change.status
                let data = String(decoding: try encoder.encode(change), as: UTF8.self)
                try await writer.write(ByteBuffer(string: "event: status\ndata: \(data)\n\n"))
            }
            state.1 = changes.isEmpty ? state.1 + 1 : 0
            if state.1 >= 7 {
                // A comment every ~15 quiet seconds keeps proxies from closing the connection.
                try await writer.write(ByteBuffer(string: ": waiting\n\n"))
                state.1 = 0
            }
            await pause(upTo: .seconds(2))
            return true
        }
    }
}
