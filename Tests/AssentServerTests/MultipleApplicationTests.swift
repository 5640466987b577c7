import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

/// Several applications on one server: a second one made through the operator API has its own master key pair, key
/// and secret; its devices activate, sign and list with its configuration only, and the first application's devices
/// go on as before; the operator API works with the first application unless `?application=` names another, and a
/// resource of another application is not found.
@Suite("Several applications on one server")
struct MultipleApplicationTests {
    @Test(
        "A second application: its own keys; devices of each activate, list and approve with their own configuration only; the operator API is scoped by ?application=",
        arguments: Backend.all)
    func twoApplications(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            func send(_ method: String, _ path: String, _ body: String = "") async throws -> HTTPClient.Response {
                try await server.operatorSend(client, method, path, body)
            }
            // Created with its own keys; names are checked and unique.
            let business = try await server.operatorCall(
                client, "POST", "/api/v1/applications",
                body: try OperatorJSON.encoder().encode(CreateApplicationRequest(name: "Business")),
                as: ApplicationInfo.self)
            #expect(business.name == "Business" && business.applicationId != server.application.id)
            #expect(business.applicationKey != server.application.applicationKey)
            #expect(business.masterServerPublicKey != server.application.masterPublicKey.x963.base64EncodedString())
            let duplicate = try await send("POST", "/api/v1/applications", #"{"name":"Business"}"#)
            #expect(duplicate.status == 409 && duplicate.text.contains("already named Business"))
            #expect(try await send("POST", "/api/v1/applications", #"{"name":"   "}"#).status == 400)
            let list = try await server.operatorCall(client, "GET", "/api/v1/applications", as: ApplicationList.self)
            #expect(list.applications.map(\.applicationId) == [server.application.id, business.applicationId])
            let q = "?application=\(business.applicationId)"
            let selected = try await server.operatorCall(
                client, "GET", "/api/v1/application\(q)", as: ApplicationInfo.self)
            #expect(selected == business)
            let unknown = try await send("GET", "/api/v1/application?application=nope")
            #expect(unknown.status == 404 && unknown.text.contains("No application has the id nope"))
            let versions = try await server.operatorCall(
                client, "GET", "/api/v1/applications/\(business.applicationId)/versions",
                as: ApplicationVersionList.self)
            #expect(versions.versions.map(\.name) == ["1"])

            // A device of each application, for the same user name.
            var retail = try await server.activatedDevice(client)
            let code = try await server.operatorCall(
                client, "POST", "/api/v1/activations\(q)",
                body: try OperatorJSON.encoder().encode(CreateActivationRequest(userId: "alice", commitMode: "auto")),
                as: CreateActivationResponse.self)
            // The first application's configuration does not know the second's code.
            var stranger = TestDevice(client: client, configuration: try server.configuration)
            await #expect(throws: (any Error).self) { try await stranger.activate(code: code.activationCode) }
            var biz = TestDevice(
                client: client, configuration: try SDKConfiguration(parsing: business.sdkConfiguration))
            try await biz.activate(code: code.activationCode)
            let bizToken = try await biz.createToken()
            let retailToken = try await retail.createToken()

            // Each application's operation reaches its own devices only, and only they approve it.
            let retailOperation = try await server.createOperation(
                client, try OperationFixtures.payment(userId: "alice"))
            let bizOperation = try await server.operatorCall(
                client, "POST", "/api/v1/operations\(q)",
                body: try OperatorJSON.encoder().encode(try OperationFixtures.payment(userId: "alice")),
                as: OperationInfo.self)
            #expect(try await biz.listOperations(token: bizToken).map(\.id) == [bizOperation.id])
            #expect(try await retail.listOperations(token: retailToken).map(\.id) == [retailOperation.id])
            let crossed = try await retail.authorizeOperation(id: bizOperation.id, data: bizOperation.data)
            #expect(crossed.status != 200, "\(crossed.text)")
            #expect(try await biz.authorizeOperation(id: bizOperation.id, data: bizOperation.data).status == 200)
            #expect(
                try await retail.authorizeOperation(id: retailOperation.id, data: retailOperation.data).status == 200)

            // The operator API: without ?application= the first application's resources only.
            #expect(try await send("GET", "/api/v1/operations/\(bizOperation.id)").status == 404)
            let bizShown = try await server.operatorCall(
                client, "GET", "/api/v1/operations/\(bizOperation.id)\(q)", as: OperationInfo.self)
            #expect(bizShown.status == .approved)
            #expect(try await send("GET", "/api/v1/operations/\(retailOperation.id)\(q)").status == 404)
            #expect(try await send("GET", "/api/v1/activations/\(biz.activationId)").status == 404)
            #expect(try await send("POST", "/api/v1/activations/\(biz.activationId)/block").status == 404)
            #expect(try await send("GET", "/api/v1/activations/\(biz.activationId)/push-deliveries").status == 404)
            let firstList = try await server.operatorCall(
                client, "GET", "/api/v1/users/alice/activations", as: ActivationList.self)
            #expect(firstList.activations.map(\.activationId) == [retail.activationId])
            let secondList = try await server.operatorCall(
                client, "GET", "/api/v1/users/alice/activations\(q)", as: ActivationList.self)
            #expect(secondList.activations.map(\.activationId) == [biz.activationId])
            let secondOperations = try await server.operatorCall(
                client, "GET", "/api/v1/users/alice/operations\(q)", as: OperationList.self)
            #expect(secondOperations.operations.map(\.id) == [bizOperation.id])
            let blocked = try await server.operatorCall(
                client, "POST", "/api/v1/activations/\(biz.activationId)/block\(q)", as: ActivationInfo.self)
            #expect(blocked.status == "BLOCKED")
            #expect(try await retail.status().state == .active)

            // Operation templates are the application's own: one of the second is unknown to the first.
            let saved = try await send(
                "PUT", "/api/v1/operation-templates/business_payment\(q)",
                #"{"name":"authorize_payment","data":"A1*A{amount}CZK","formData":{"en":{"title":"Pay","message":"{amount} CZK"}}}"#
            )
            #expect(saved.status == 200, "\(saved.text)")
            let secondTemplates = try await server.operatorCall(
                client, "GET", "/api/v1/operation-templates\(q)", as: OperationTemplateList.self)
            #expect(secondTemplates.templates.map(\.name) == ["business_payment"])
            let firstTemplates = try await server.operatorCall(
                client, "GET", "/api/v1/operation-templates", as: OperationTemplateList.self)
            #expect(firstTemplates.templates.isEmpty)
            let fromTemplate = #"{"template":"business_payment","params":{"amount":"250"},"userId":"alice"}"#
            let unknownThere = try await send("POST", "/api/v1/operations", fromTemplate)
            #expect(unknownThere.status == 404 && unknownThere.text.contains("No operation template"))
            let templated = try await send("POST", "/api/v1/operations\(q)", fromTemplate)
            #expect(templated.status == 201 && templated.text.contains("250 CZK"), "\(templated.text)")
            #expect(try await send("DELETE", "/api/v1/operation-templates/business_payment").status == 404)
            #expect(try await send("DELETE", "/api/v1/operation-templates/business_payment\(q)").status == 204)

            // Second factors and OpenID clients are the application's own.
            _ = try await send(
                "POST", "/api/v1/tfa/accounts\(q)", #"{"userId":"carol","password":"correct horse battery"}"#)
            #expect(try await send("GET", "/api/v1/tfa/accounts/carol\(q)").status == 200)
            #expect(try await send("GET", "/api/v1/tfa/accounts/carol").status == 404)
            let shop = try await server.operatorCall(
                client, "POST", "/api/v1/clients\(q)",
                body: try OperatorJSON.encoder().encode(
                    CreateClientRequest(name: "Shop", scopes: ["profile"], redirectUris: ["https://shop.example/cb"])),
                as: CreateClientResponse.self)
            let firstClients = try await server.operatorCall(client, "GET", "/api/v1/clients", as: ClientList.self)
            #expect(!firstClients.clients.contains { $0.clientId == shop.client.clientId })
            #expect(try await send("DELETE", "/api/v1/clients/\(shop.client.clientId)").status == 404)
            // A key limited to the second application works there only, and manages no keys, operators or
            // applications.
            let limited = try await server.operatorCall(
                client, "POST", "/api/v1/api-keys",
                body: try OperatorJSON.encoder().encode(
                    CreateAPIKeyRequest(name: "business-ci", scopes: ["*"], applications: [business.applicationId])),
                as: CreateAPIKeyResponse.self)
            #expect(limited.applications == [business.applicationId])
            let unknownLimit = try await send(
                "POST", "/api/v1/api-keys", #"{"name":"x","scopes":["*"],"applications":["nope"]}"#)
            #expect(unknownLimit.status == 404 && unknownLimit.text.contains("No application has the id nope"))
            func withLimited(_ method: String, _ path: String, _ body: String = "") async throws
                -> HTTPClient.Response
            {
                try await client.send(
                    method, path, headers: ["Authorization": "Bearer \(limited.apiKey)"], body: Data(body.utf8))
            }
            let firstApplication = try await withLimited("GET", "/api/v1/application")
            #expect(
                firstApplication.status == 403 && firstApplication.text.contains("may not work with the application"))
            #expect(try await withLimited("GET", "/api/v1/application\(q)").status == 200)
            #expect(try await withLimited("GET", "/api/v1/operations/\(bizOperation.id)\(q)").status == 200)
            #expect(try await withLimited("GET", "/api/v1/operations/\(retailOperation.id)").status == 403)
            let visible = try JSONDecoder().decode(
                ApplicationList.self, from: try await withLimited("GET", "/api/v1/applications\(q)").body)
            #expect(visible.applications.map(\.applicationId) == [business.applicationId])
            #expect(
                try await withLimited("GET", "/api/v1/applications/\(server.application.id)/versions\(q)").status == 404
            )
            for (method, path) in [
                ("GET", "/api/v1/api-keys"), ("POST", "/api/v1/api-keys"), ("GET", "/api/v1/operators"),
                ("POST", "/api/v1/applications"), ("POST", "/api/v1/openid/keys/rotate"),
            ] {
                let refused = try await withLimited(method, "\(path)\(q)", method == "POST" ? #"{"name":"more"}"# : "")
                #expect(refused.status == 403 && refused.text.contains("limited to some applications"), "\(path)")
            }
            let audit = try await server.store.auditEvents(AuditFilter(typePrefix: "application.created"), limit: 5)
            #expect(audit.contains { $0.detail.contains(business.applicationId) && $0.actor == "key:bootstrap" })

            // The audit trail: each row names its application; a key limited to the second reads its rows only,
            // and neither the whole chain's export nor its state.
            func events(_ response: HTTPClient.Response) throws -> [AuditEventInfo] {
                #expect(response.status == 200, "\(response.text)")
                let list = try OperatorJSON.decoder().decode(AuditList.self, from: response.body)
                return list.events
            }
            let everything = try events(try await send("GET", "/api/v1/audit?limit=1000"))
            let ofBusiness = try events(try await withLimited("GET", "/api/v1/audit\(q)&limit=1000"))
            #expect(try events(try await send("GET", "/api/v1/audit\(q)&limit=1000")) == ofBusiness)
            #expect(!ofBusiness.isEmpty && ofBusiness.allSatisfy { $0.applicationId == business.applicationId })
            let businessTypes = Set(ofBusiness.map(\.type))
            for type in [
                "activation.created", "operation.created", "operation.approved", "activation.blocked",
                "tfa.account_created", "client.created", "operation_template.saved",
            ] {
                #expect(businessTypes.contains(type), "\(type) in \(businessTypes.sorted())")
            }
            #expect(!ofBusiness.contains { $0.activationId == retail.activationId })
            #expect(ofBusiness.contains { $0.activationId == biz.activationId && $0.type == "operation.approved" })
            #expect(
                everything.contains {
                    $0.activationId == retail.activationId && $0.applicationId == server.application.id
                })
            #expect(everything.contains { $0.type == "api_key.created" && $0.applicationId == nil })
            #expect(Set(everything.map(\.id)).isSuperset(of: ofBusiness.map(\.id)))
            for path in ["/api/v1/audit/export", "/api/v1/audit/chain"] {
                let refused = try await withLimited("GET", "\(path)\(q)")
                #expect(
                    refused.status == 403
                        && refused.errorMessage?.contains("audit chain links every application") == true)
            }
            #expect(try await withLimited("GET", "/api/v1/audit/key\(q)").status == 200)
            // The application each row names is in the chain: the export verifies, and names them.
            let export = try await send("GET", "/api/v1/audit/export")
            #expect(export.status == 200)
            let key = try await Services(server.environment).auditChain.key().publicKey
            let report = try AuditChain.verify(export: export.text, key: key).get()
            #expect(report.rows >= everything.count)
            let exported = export.text.split(separator: "\n").compactMap {
                try? JSONDecoder().decode(AuditChain.Line.self, from: Data($0.utf8))
            }
            #expect(
                exported.contains {
                    if case .row(let row) = $0 { row.applicationId == business.applicationId } else { false }
                })
        }
    }

    @Test(
        "The CLI: a second application is created, a token activates against it and approves its operation; the first goes on"
    )
    func secondApplicationFromTheCLI() async throws {
        try await CLITests.withServer("applications") { work, _, printed in
            let url = try #require(printed["url"])
            let firstConfig = try #require(printed["SDK configuration"])
            let environment = try CLITests.connection(printed)
            let business = try await CLITests.admin(
                ["application", "create", "--name", "Business"], environment: environment, as: ApplicationInfo.self)
            let listed = try await CLITests.run(["admin", "application", "list"], environment: environment)
            // The first is named for this machine (serve had no --organisation).
            let first = ServerBootstrap.hostName(issuer: nil)
            #expect(listed.output.contains(first) && listed.output.contains("Business"), "\(listed.output)")
            let second = ["--application", business.applicationId]
            // Shown by its id, or with --application; two different ones are refused.
            for selection in [[business.applicationId], second] {
                let shown = try await CLITests.admin(
                    ["application", "show"] + selection, environment: environment, as: ApplicationInfo.self)
                #expect(shown.name == "Business" && shown.sdkConfiguration == business.sdkConfiguration)
            }
            let both = try await CLITests.run(
                ["admin", "application", "show", "not-this-one"] + second, environment: environment)
            #expect(both.status == 2 && both.errors.contains("name two applications"), "\(both.errors)")

            /// Activates a CLI token of `config` with a code of the application `selection` names.
            func token(_ name: String, config: String, selection: [String]) async throws -> [String] {
                let code = try await CLITests.admin(
                    ["activation", "create", "--user", "alice"] + selection, environment: environment,
                    as: CreateActivationResponse.self
                ).activationCode
                let profile = ["--profile", work.appendingPathComponent(name).path]
                let activated = try await CLITests.run(
                    ["token", "activate", "--server", url, "--config", config, code, "--pin-stdin"] + profile,
                    environment: environment, input: "2468\n")
                #expect(activated.status == 0, "\(activated.errors)")
                return profile
            }
            let businessToken = try await token("business", config: business.sdkConfiguration, selection: second)
            let retailToken = try await token("retail", config: firstConfig, selection: [])
            // An operation of each application; each token sees and approves its own.
            func create(_ selection: [String]) async throws -> OperationInfo {
                try await CLITests.admin(
                    ["operation", "create", "--user", "alice", "--data", "A1*A100CZK", "--title", "Pay"] + selection,
                    environment: environment, as: OperationInfo.self)
            }
            let businessOperation = try await create(second)
            let retailOperation = try await create([])
            for (profile, operation) in [(businessToken, businessOperation), (retailToken, retailOperation)] {
                let pending = try await CLITests.run(["token", "list", "--json"] + profile, environment: environment)
                let ids = try MobileTokenJSON.decoder().decode([MobileOperation].self, from: Data(pending.output.utf8))
                    .map(\.id)
                #expect(ids == [operation.id], "\(pending.output)")
                let approved = try await CLITests.run(
                    ["token", "approve", operation.id, "--pin-stdin"] + profile, environment: environment,
                    input: "2468\n")
                #expect(approved.status == 0, "\(approved.errors)")
            }
            let shown = try await CLITests.admin(
                ["operation", "show", businessOperation.id] + second, environment: environment, as: OperationInfo.self)
            #expect(shown.status == .approved)
            // Without --application the first application's: the second's operation is not found there.
            let elsewhere = try await CLITests.run(
                ["admin", "operation", "show", businessOperation.id], environment: environment)
            #expect(elsewhere.status != 0 && elsewhere.errors.contains("NOT_FOUND"), "\(elsewhere.errors)")

            // The second application's own APNs credentials: set from a key file, shown without the key, removed.
            let keyFile = work.appendingPathComponent("AuthKey_BIZKEY1234.p8")
            try ECPrivateKey().pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
            let set = try await CLITests.admin(
                [
                    "application", "push", "apns", "--key-file", keyFile.path, "--key-id", "BIZKEY1234",
                    "--team-id", "BIZTEAM123", "--topic", "com.example.business",
                ] + second, environment: environment, as: ApplicationPushInfo.self)
            #expect(set.apns?.topic == "com.example.business" && set.apns?.source == .application)
            let shownPush = try await CLITests.run(["admin", "application", "push"] + second, environment: environment)
            #expect(shownPush.output.contains("topic com.example.business, team BIZTEAM123, key BIZKEY1234"))
            #expect(!shownPush.output.contains("PRIVATE KEY"), "\(shownPush.output)")
            let badTeam = try await CLITests.run(
                [
                    "admin", "application", "push", "apns", "--key-file", keyFile.path, "--key-id", "BIZKEY1234",
                    "--team-id", "short", "--topic", "com.example.business",
                ] + second, environment: environment)
            #expect(badTeam.status != 0 && badTeam.errors.contains("team id is 10 letters"), "\(badTeam.errors)")
            let removed = try await CLITests.run(
                ["admin", "application", "push", "remove", "apns"] + second, environment: environment)
            #expect(removed.status == 0 && removed.output.contains("Removed"), "\(removed.errors)")
        }
    }
}
