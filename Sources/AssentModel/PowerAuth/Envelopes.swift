/// The body of a PowerAuth standard request: `{"requestObject": …}`.
public struct RequestEnvelope<Payload: Codable & Sendable>: Codable, Sendable {
    /// The request payload.
    public var requestObject: Payload

    /// Wraps a payload.
    public init(_ requestObject: Payload) {
        self.requestObject = requestObject
    }
}

/// The status field of a PowerAuth response envelope.
public enum ResponseStatus: String, Codable, Sendable {
    case ok = "OK"
    case error = "ERROR"
}

/// The body of a successful PowerAuth response: `{"status":"OK","responseObject": …}`.
public struct ResponseEnvelope<Payload: Codable & Sendable>: Codable, Sendable {
    /// Always ``ResponseStatus/ok``.
    public var status: ResponseStatus
    /// The server's clock (`yyyy-MM-dd'T'HH:mm:ss+0000`), sent by the Mobile Token API's list, detail and claim so
    /// a client can compute the server time; absent elsewhere.
    public var currentTimestamp: String?
    /// The response payload.
    public var responseObject: Payload

    /// Wraps a payload in a successful envelope.
    public init(_ responseObject: Payload, currentTimestamp: String? = nil) {
        self.status = .ok
        self.currentTimestamp = currentTimestamp
        self.responseObject = responseObject
    }
}

/// The payload of a failed PowerAuth response: `{"status":"ERROR","responseObject":{"code","message"}}`.
public struct ErrorPayload: Codable, Sendable, Equatable {
    /// A stable error code, e.g. `POWERAUTH_AUTH_FAIL`.
    public var code: String
    /// A sentence saying what happened and what to do.
    public var message: String

    /// Creates an error payload.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}

/// The body of a failed PowerAuth response.
public struct ErrorEnvelope: Codable, Sendable, Equatable {
    /// Always ``ResponseStatus/error``.
    public var status: ResponseStatus
    /// The error.
    public var responseObject: ErrorPayload

    /// Wraps an error.
    public init(code: String, message: String) {
        self.status = .error
        self.responseObject = ErrorPayload(code: code, message: message)
    }
}
