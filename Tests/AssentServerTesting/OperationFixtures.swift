import AssentModel
import AssentServer
import AssentTesting
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// Operations and spec examples shared by the operation tests.
enum OperationFixtures {
    /// One operation of the Mobile Token API's list example (`wultra/enrollment-server` `docs/Mobile-Token-API.md`).
    static let specListedOperation = #"""
        {
          "id": "7e0ba60f-bf22-4ff5-b999-2733784e5eaa",
          "name": "authorize_payment",
          "data": "A1*A100CZK*Q238400856/0300**D20190629*NUtility Bill Payment - 05/2019",
          "status": "PENDING",
          "operationCreated": "2018-07-02T14:43:13+0000",
          "operationExpires": "2018-07-02T14:48:17+0000",
          "allowedSignatureType": {
            "type": "2FA",
            "variants": ["possession_knowledge", "possession_biometry"]
          },
          "formData": {
            "title": "Confirm Payment",
            "message": "Hello,\nplease confirm following payment:",
            "attributes": [
              {"type": "ALERT", "alertType": "WARNING", "id": "operation.warning", "label": "Balance alert",
               "title": "Insufficient Balance",
               "message": "You have only $1.00 on your account with number 238400856/0300."},
              {"type": "HEADING", "id": "operation.heading", "label": "Utility Payment"},
              {"type": "AMOUNT", "id": "operation.amount", "label": "Amount", "amount": 2199.40, "currency": "CZK",
               "amountFormatted": "2199,40", "currencyFormatted": "Kč"},
              {"type": "AMOUNT_CONVERSION", "id": "operation.conversion", "label": "Conversion Rate", "dynamic": false,
               "sourceAmount": 100.00, "sourceCurrency": "USD", "sourceAmountFormatted": "100.00",
               "sourceCurrencyFormatted": "$", "sourceValueFormatted": "$100.00", "targetAmount": 2199.40,
               "targetCurrency": "CZK", "targetAmountFormatted": "2199,40", "targetCurrencyFormatted": "Kč",
               "targetValueFormatted": "2199,40 Kč"},
              {"type": "KEY_VALUE", "id": "operation.account", "label": "To Account", "value": "238400856/0300"},
              {"type": "KEY_VALUE", "id": "operation.dueDate", "label": "Due Date", "value": "Jun 29, 2019"},
              {"type": "NOTE", "id": "operation.note", "label": "Note", "note": "Utility Bill Payment - 05/2019"},
              {"type": "IMAGE", "id": "operation.image", "label": "Payment Check Preview",
               "thumbnailUrl": "https://example.com/thumbnail.png", "originalUrl": "https://example.com/image.png"},
              {"type": "PARTY_INFO", "id": "operation.partyInfo", "label": "Application",
               "partyInfo": {"logoUrl": "https://itesco.cz/img/logo/logo.svg", "name": "Tesco",
                             "description": "Find out more about Tesco...", "websiteUrl": "https://itesco.cz/hello"}}
            ]
          }
        }
        """#

    /// The example's form data.
    static var specFormData: FormData {
        get throws {
            let object = try JSONSerialization.jsonObject(with: Data(specListedOperation.utf8)) as? [String: Any]
            let form = try JSONSerialization.data(withJSONObject: object?["formData"] ?? [:])
            return try JSONDecoder().decode(FormData.self, from: form)
        }
    }

    /// A payment for `userId` with English and Czech texts.
    static func payment(userId: String?, proximityCheck: Bool = false, maxFailedAttempts: Int? = nil) throws
        -> CreateOperationRequest
    {
        CreateOperationRequest(
            userId: userId, name: "authorize_payment",
            data: "A1*A100CZK*Q238400856/0300**D20190629*NUtility Bill Payment - 05/2019",
            formData: [
                "en": try specFormData,
                "cs": FormData(
                    title: "Potvrďte platbu", message: "Dobrý den,\nprosím potvrďte platbu:",
                    resultTexts: ResultTexts(success: "Platba potvrzena"),
                    attributes: [
                        OperationAttribute(type: "KEY_VALUE", id: "operation.account").with(label: "Na účet")
                            .setting(\.value, "238400856/0300")
                    ]),
            ],
            ui: OperationUI(flipButtons: true, blockApprovalOnCall: true),
            maxFailedAttempts: maxFailedAttempts, proximityCheck: proximityCheck)
    }
}

extension OperationAttribute {
    /// This attribute with one field set.
    func setting<Value>(_ field: WritableKeyPath<OperationAttribute, Value>, _ value: Value) -> OperationAttribute {
        var copy = self
        copy[keyPath: field] = value
        return copy
    }
}

/// A webhook (or CIBA callback) receiver on a loopback port: records every delivery, answers 500 to the first
/// `failFirst` ones.
final class WebhookReceiver: Sendable {
    struct Delivery: Sendable {
        var body: Data
        var signature: String?
        var authorization: String?
    }

    let deliveries = Mutex<[Delivery]>([])
    let failFirst: Int
    /// The status of an accepted delivery.
    let answer: HTTPResponse.Status
    /// Where an accepted delivery is redirected (302 with `Location`), if anywhere.
    let redirect: String?

    init(failFirst: Int = 0, answer: HTTPResponse.Status = .ok, redirect: String? = nil) {
        self.failFirst = failFirst
        self.answer = answer
        self.redirect = redirect
    }

    /// Runs the receiver for the duration of `body`, passing its URL.
    func run<T: Sendable>(_ body: @Sendable (URL) async throws -> T) async throws -> T {
        let router = Router()
        router.post("hook") { request, _ -> Response in
            let data = Data(try await request.body.collect(upTo: 1 << 20).readableBytesView)
            let count = self.deliveries.withLock {
                $0.append(
                    Delivery(
                        body: data, signature: request.headers[HTTPField.Name(WebhookSignature.headerName)!],
                        authorization: request.headers[.authorization]))
                return $0.count
            }
            if count <= self.failFirst { return Response(status: .internalServerError) }
            if let redirect = self.redirect { return Response(status: .found, headers: [.location: redirect]) }
            return Response(status: self.answer)
        }
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) })
        return try await withRunningServer(app, ports: ports) { port in
            try await body(URL(string: "http://127.0.0.1:\(port)/hook")!)
        }
    }

    /// Waits until `count` deliveries arrived (at most `seconds`).
    func wait(for count: Int, seconds: Double = 20) async throws -> [Delivery] {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            let current = deliveries.withLock { $0 }
            if current.count >= count { return current }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("only \(deliveries.withLock { $0.count }) of \(count) webhook deliveries arrived")
    }
}
