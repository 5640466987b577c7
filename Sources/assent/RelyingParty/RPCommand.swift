import ArgumentParser
import AssentCrypto
import AssentModel
import AsyncHTTPClient
import Crypto
import Foundation
import Hummingbird
import JWTKit
import NIOCore

/// `assent rp …`: plays a relying party of Assent's OpenID provider, to try it and to test it.
struct RPCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rp", abstract: "Play a relying party of the OpenID provider (CIBA).",
        subcommands: [CIBACommand.self])
}

/// `assent rp ciba`: asks for a user's approval by CIBA and prints the verified ID token.
struct CIBACommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ciba",
        abstract: "Send a backchannel authentication request, wait for the user, verify and print the ID token.",
        discussion: """
            The client must be registered (assent admin client create); --mode is the mode it was registered with. \
            A ping or push client's notification endpoint must be this command's --listen address, e.g. \
            --endpoint http://127.0.0.1:9090/ciba and --listen 127.0.0.1:9090.
            Example: assent rp ciba --client cl_… --login-hint alice --binding-message W4SK
            Exit codes: 0 approved (token verified), 4 denied, 5 expired, 1 any other failure.
            """)

    @Option(help: "The server (issuer) URL. Env: ASSENT_URL.") var server: String?
    @Option(help: "The client id.") var client: String
    @Option(help: "The client secret. Env: ASSENT_CLIENT_SECRET.") var secret: String?
    @Flag(help: "Send the secret in the form (client_secret_post) instead of HTTP Basic.") var post = false
    @Option(help: "poll, ping or push: as the client is registered.") var mode = "poll"
    @Option(help: "The user to ask (login_hint).") var loginHint: String
    @Option(help: "A short text shown here and on the phone.") var bindingMessage: String?
    @Option(help: #"Transaction details as JSON, e.g. {"amount":"10.00","currency":"EUR","account":"…"}."#)
    var transaction: String?
    @Option(help: "The scope.") var scope = "openid"
    @Option(help: "Seconds the request may wait for the user.") var requestedExpiry: Int?
    @Option(help: "HOST:PORT the ping/push receiver listens on.") var listen: String?
    @Flag(help: "Print the result as JSON.") var json = false

    func run() async throws {
        let base = (server ?? ProcessInfo.processInfo.environment["ASSENT_URL"] ?? "http://127.0.0.1:8080")
            .trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        guard let secret = secret ?? ProcessInfo.processInfo.environment["ASSENT_CLIENT_SECRET"] else {
            throw ValidationError("Give the client secret with --secret or ASSENT_CLIENT_SECRET.")
        }
        guard let deliveryMode = CIBADeliveryMode(rawValue: mode) else {
            throw ValidationError("--mode is poll, ping or push.")
        }
        if deliveryMode != .poll && listen == nil {
            throw ValidationError("A \(mode) client needs --listen HOST:PORT (its notification endpoint's address).")
        }
        let party = RelyingParty(base: base, clientId: client, secret: secret, basic: !post)
        do {
            let outcome = try await party.run(
                mode: deliveryMode, fields: requestFields(), listen: listen,
                progress: { FileHandle.standardError.write(Data(($0 + "\n").utf8)) })
            try report(outcome)
        } catch let error as OAuthErrorResponse {
            let exitCode: Int32 =
                switch error.error {
                case "access_denied": 4
                case "expired_token": 5
                default: 1
                }
            CLIFailure.fail(
                code: error.error, message: error.errorDescription ?? "The provider refused.", exitCode: exitCode)
        } catch let error as RelyingParty.Failure {
            CLIFailure.fail(code: "ERR_RP", message: error.message, exitCode: 1)
        }
    }

    private func requestFields() -> [String: String] {
        var fields = ["scope": scope, "login_hint": loginHint]
        fields["binding_message"] = bindingMessage
        fields["transaction"] = transaction
        fields["requested_expiry"] = requestedExpiry.map(String.init)
        return fields
    }

    private func report(_ outcome: RelyingParty.Outcome) throws {
        if json {
            FileHandle.standardOutput.write(outcome.claimsJSON + Data("\n".utf8))
        } else {
            print("ID token verified (\(outcome.algorithm), key \(outcome.keyId)): \(outcome.subject) approved.")
            print(String(decoding: outcome.claimsJSON, as: UTF8.self))
        }
    }
}

/// One CIBA exchange as a relying party does it: discovery, the request, the wait (poll, ping or push), and the
/// ID token's verification with the provider's published keys (jwt-kit).
struct RelyingParty: Sendable {
    struct Failure: Error { let message: String }

    struct Outcome: Sendable {
        var subject: String
        var algorithm: String
        var keyId: String
        /// The verified claims, pretty-printed.
        var claimsJSON: Data
    }

    /// The claims a CIBA client must check.
    struct Claims: JWTPayload {
        var iss: IssuerClaim
        var sub: SubjectClaim
        var aud: AudienceClaim
        var exp: ExpirationClaim
        var atHash: String
        var authReqId: String

        enum CodingKeys: String, CodingKey {
            case iss, sub, aud, exp
            case atHash = "at_hash"
            case authReqId = "urn:openid:params:jwt:claim:auth_req_id"
        }

        func verify(using algorithm: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
        }
    }

    let base: String
    let clientId: String
    let secret: String
    let basic: Bool

    func run(
        mode: CIBADeliveryMode, fields: [String: String], listen: String?, progress: @Sendable (String) -> Void
    ) async throws -> Outcome {
        let discovery = try await getJSON("\(base)/.well-known/openid-configuration")
        guard let issuer = discovery["issuer"] as? String,
            let authorize = discovery["backchannel_authentication_endpoint"] as? String,
            let tokenEndpoint = discovery["token_endpoint"] as? String, let jwksURI = discovery["jwks_uri"] as? String
        else { throw Failure(message: "The discovery document lacks the CIBA endpoints.") }
        var fields = fields
        let notificationToken = Base64URL.encode(Data((0..<24).map { _ in UInt8.random(in: 0...255) }))
        var receiver: CallbackReceiver?
        if mode != .poll, let listen {
            fields["client_notification_token"] = notificationToken
            receiver = try await CallbackReceiver.start(listen: listen, token: notificationToken)
        }
        defer { receiver?.stop() }
        let ack = try JSONDecoder().decode(CIBAAcknowledgement.self, from: try await postForm(authorize, fields))
        progress(
            "Request \(ack.authReqId) sent; waiting up to \(ack.expiresIn) s for \(fields["login_hint"] ?? "the user")"
                + (fields["binding_message"].map { " (binding message \($0))" } ?? "") + ".")
        let tokens: OAuthTokenResponse
        let grant = ["grant_type": "urn:openid:params:grant-type:ciba", "auth_req_id": ack.authReqId]
        switch mode {
        case .poll:
            tokens = try await poll(tokenEndpoint, grant, interval: ack.interval ?? 5, expiresIn: ack.expiresIn)
        case .ping:
            let body = try await receiver!.next(seconds: ack.expiresIn + 30)
            guard (try? JSONDecoder().decode(CIBAPing.self, from: body))?.authReqId == ack.authReqId else {
                throw Failure(message: "The ping names another request.")
            }
            progress("Ping received; fetching the tokens.")
            tokens = try JSONDecoder().decode(OAuthTokenResponse.self, from: try await postForm(tokenEndpoint, grant))
        case .push:
            let body = try await receiver!.next(seconds: ack.expiresIn + 30)
            if let error = try? JSONDecoder().decode(OAuthErrorResponse.self, from: body) { throw error }
            tokens = try JSONDecoder().decode(OAuthTokenResponse.self, from: body)
            guard tokens.authReqId == ack.authReqId else { throw Failure(message: "The push names another request.") }
        }
        return try await verify(tokens, issuer: issuer, jwksURI: jwksURI, authReqId: ack.authReqId)
    }

    /// Polls at the interval, adding 5 seconds after each `slow_down`, until an answer other than pending.
    private func poll(_ endpoint: String, _ grant: [String: String], interval: Int, expiresIn: Int) async throws
        -> OAuthTokenResponse
    {
        var interval = interval
        let deadline = ContinuousClock.now + .seconds(expiresIn + 30)
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .seconds(interval))
            do {
                return try JSONDecoder().decode(OAuthTokenResponse.self, from: try await postForm(endpoint, grant))
            } catch let error as OAuthErrorResponse where error.error == "authorization_pending" {
                continue
            } catch let error as OAuthErrorResponse where error.error == "slow_down" {
                interval += 5
            }
        }
        throw Failure(message: "No answer before the request expired.")
    }

    /// Checks the ID token: signature with the published key its header names, issuer, audience, expiry, the
    /// request it answers, and `at_hash` against the access token.
    private func verify(_ tokens: OAuthTokenResponse, issuer: String, jwksURI: String, authReqId: String) async throws
        -> Outcome
    {
        let jwks = try await get(jwksURI)
        let keys = try await JWTKeyCollection().add(jwksJSON: String(decoding: jwks, as: UTF8.self))
        let claims: Claims
        do {
            claims = try await keys.verify(tokens.idToken, as: Claims.self)
        } catch {
            throw Failure(message: "The ID token does not verify with the provider's keys: \(error)")
        }
        let atHash = Base64URL.encode(Data(Data(SHA256.hash(data: Data(tokens.accessToken.utf8))).prefix(16)))
        guard claims.iss.value == issuer else {
            throw Failure(message: "The ID token's issuer is \(claims.iss.value).")
        }
        guard claims.aud.value.contains(clientId) else { throw Failure(message: "The ID token is for another client.") }
        guard claims.authReqId == authReqId else { throw Failure(message: "The ID token answers another request.") }
        guard claims.atHash == atHash else { throw Failure(message: "at_hash does not match the access token.") }
        let header = try CompactJWS.header(of: tokens.idToken)
        let payload = try Base64URL.decode(String(tokens.idToken.split(separator: ".")[1]))
        let object = try JSONSerialization.jsonObject(with: payload)
        return Outcome(
            subject: claims.sub.value, algorithm: header.alg, keyId: header.kid ?? "-",
            claimsJSON: try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys]))
    }

    // MARK: HTTP (AsyncHTTPClient: URLSession on Linux hangs on a 401 with `WWW-Authenticate: Basic`)

    private func get(_ url: String) async throws -> Data {
        let (status, body) = try await send(HTTPClientRequest(url: url))
        guard status == 200 else { throw Failure(message: "GET \(url) answered \(status).") }
        return body
    }

    private func getJSON(_ url: String) async throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: try await get(url)) as? [String: Any] else {
            throw Failure(message: "\(url) is not a JSON object.")
        }
        return object
    }

    /// Posts a form with the client's authentication; an OAuth error answer is thrown as ``OAuthErrorResponse``.
    private func postForm(_ url: String, _ fields: [String: String]) async throws -> Data {
        var fields = fields
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        if basic {
            let credentials = "\(FormEncoding.escape(clientId)):\(FormEncoding.escape(secret))"
            request.headers.add(name: "Authorization", value: "Basic " + Data(credentials.utf8).base64EncodedString())
        } else {
            fields["client_id"] = clientId
            fields["client_secret"] = secret
        }
        request.body = .bytes(ByteBuffer(bytes: FormEncoding.encode(fields)))
        let (status, body) = try await send(request)
        if status != 200 {
            if let error = try? JSONDecoder().decode(OAuthErrorResponse.self, from: body) { throw error }
            throw Failure(message: "POST \(url) answered \(status).")
        }
        return body
    }

    private func send(_ request: HTTPClientRequest) async throws -> (UInt, Data) {
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 1 << 20)
            return (response.status.code, Data(body.readableBytesView))
        } catch let error as OAuthErrorResponse {
            throw error
        } catch {
            throw Failure(message: "Cannot reach \(request.url): \(error)")
        }
    }
}

/// The notification endpoint of a ping or push client: accepts POSTs bearing the request's notification token,
/// answers 204, and hands the bodies over.
final class CallbackReceiver: Sendable {
    private let bodies: AsyncStream<Data>
    private let task: Task<Void, any Error>

    private init(bodies: AsyncStream<Data>, task: Task<Void, any Error>) {
        self.bodies = bodies
        self.task = task
    }

    static func start(listen: String, token: String) async throws -> CallbackReceiver {
        let parts = listen.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]) else {
            throw RelyingParty.Failure(message: "--listen is HOST:PORT, e.g. 127.0.0.1:9090.")
        }
        let (bodies, continuation) = AsyncStream<Data>.makeStream()
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let router = Router()
        router.post("**") { request, _ -> Response in
            guard request.headers[.authorization] == "Bearer \(token)" else { return Response(status: .unauthorized) }
            continuation.yield(Data(try await request.body.collect(upTo: 1 << 20).readableBytesView))
            return Response(status: .noContent)
        }
        let app = Application(
            router: router, configuration: .init(address: .hostname(String(parts[0]), port: port)),
            onServerRunning: { _ in startedContinuation.finish() })
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        for await _ in started {}
        return CallbackReceiver(bodies: bodies, task: task)
    }

    /// The next callback body, or a failure after `seconds`.
    func next(seconds: Int) async throws -> Data {
        let bodies = bodies
        return try await withThrowingTaskGroup(of: Data?.self) { group in
            group.addTask {
                for await body in bodies { return body }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            guard let first else { throw RelyingParty.Failure(message: "No callback arrived in \(seconds) s.") }
            return first
        }
    }

    func stop() { task.cancel() }
}
