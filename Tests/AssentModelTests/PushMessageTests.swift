import AssentModel
import Foundation
import Testing

@Suite("Mobile-token push messages")
struct PushMessageTests {
    @Test("The Wultra keys round-trip for both message types; results map from statuses")
    func roundTrip() throws {
        let created = PushMessage.operationCreated(
            id: "op-1", name: "login", activationId: "act-1", title: "Log in?", body: "From Prague")
        #expect(
            created.data == [
                "messageType": "mtoken.operationInit", "operationId": "op-1", "operationName": "login",
                "activationId": "act-1",
            ])
        #expect(PushMessage(data: created.data, title: "Log in?", body: "From Prague") == created)
        let finished = PushMessage.operationFinished(id: "op-1", name: "login", result: .timeout, activationId: nil)
        #expect(finished.data["mtokenOperationResult"] == "operation.timeout")
        #expect(PushMessage(data: finished.data) == finished)
        #expect(PushMessage.OperationResult(.approved) == .success)
        #expect(PushMessage.OperationResult(.rejected) == .canceled)
        #expect(PushMessage.OperationResult(.canceled) == .canceled)
        #expect(PushMessage.OperationResult(.expired) == .timeout)
        #expect(PushMessage.OperationResult(.failed) == .failure)
        #expect(PushMessage.OperationResult(.pending) == nil)
    }

    @Test("Incomplete or foreign notifications are not mobile-token messages; unknown results are kept")
    func incomplete() {
        #expect(PushMessage(data: ["messageType": "mtoken.operationInit", "operationId": "op-1"]) == nil)
        #expect(PushMessage(data: ["messageType": "mtoken.operationInit", "operationName": "login"]) == nil)
        #expect(
            PushMessage(data: ["messageType": "mtoken.operationFinished", "operationId": "o", "operationName": "n"])
                == nil)
        #expect(PushMessage(data: ["messageType": "promo", "operationId": "o", "operationName": "n"]) == nil)
        let future = PushMessage(data: [
            "messageType": "mtoken.operationFinished", "operationId": "o", "operationName": "n",
            "mtokenOperationResult": "operation.somethingNew",
        ])
        #expect(
            future
                == .operationFinished(id: "o", name: "n", result: .unknown("operation.somethingNew"), activationId: nil)
        )
    }

    @Test("Both spellings of each platform decode; others are refused")
    func platforms() throws {
        for (name, platform) in [
            ("ios", PushPlatform.apns), ("APNS", .apns), ("android", .fcm), ("fcm", .fcm), ("huawei", .hms),
            ("hms", .hms),
        ] {
            #expect(PushPlatform(name: name) == platform)
            #expect(try JSONDecoder().decode(PushPlatform.self, from: Data("\"\(name)\"".utf8)) == platform)
        }
        #expect(PushPlatform(name: "windows") == nil)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(PushPlatform.self, from: Data(#""wns""#.utf8)) }
    }
}
