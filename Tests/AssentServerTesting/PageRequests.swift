import AssentModel
import AssentTesting
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore

/// A page as a test of the web pages sees it, request by request against the router.
struct PageAnswer {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: String
    var location: String? { headers[.location] }

    /// One request: the cookie header, a form or a JSON body, other headers.
    static func fetch(
        _ client: some TestClientProtocol, _ method: HTTPRequest.Method, _ uri: String, cookie: String? = nil,
        form: [String: String]? = nil, json: Data? = nil, headers extra: HTTPFields = [:]
    ) async throws -> PageAnswer {
        var headers = extra
        if let cookie { headers[.cookie] = cookie }
        var body: ByteBuffer?
        if let form {
            headers[.contentType] = "application/x-www-form-urlencoded"
            body = ByteBuffer(bytes: FormEncoding.encode(form))
        } else if let json {
            headers[.contentType] = "application/json"
            body = ByteBuffer(bytes: json)
        }
        return try await client.execute(uri: uri, method: method, headers: headers, body: body) {
            PageAnswer(status: $0.status, headers: $0.headers, body: String(buffer: $0.body))
        }
    }

    /// The value of the form field `name` in the page (`name="…" value="…"`).
    func field(_ name: String) -> String? {
        guard let start = body.range(of: "name=\"\(name)\" value=\"") else { return nil }
        return String(body[start.upperBound...].prefix { $0 != "\"" })
    }
}

extension PageAnswer {
    /// Signs in to the console as a browser does — the form, then its fields with the form's token and its cookie
    /// (`fields`: the name, password and code, or an API key) — and answers what the sign-in answered.
    static func consoleSignIn(_ client: some TestClientProtocol, _ fields: [String: String]) async throws -> PageAnswer
    {
        let form = try await fetch(client, .get, "/console/sign-in")
        guard let token = form.field("csrf"), let cookie = form.headers[.setCookie] else {
            throw TestFailure("The console's sign-in form has no token: \(form.status)")
        }
        var posted = fields
        posted["csrf"] = token
        return try await fetch(
            client, .post, "/console/sign-in", cookie: String(cookie.prefix { $0 != ";" }), form: posted)
    }

    /// The console session's cookie (`name=value`) this answer set, if it set one.
    var consoleSession: String? {
        headers[values: .setCookie].first { $0.hasPrefix("__Host-assent-console=") }.map {
            String($0.prefix { $0 != ";" })
        }
    }
}
