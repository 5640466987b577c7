import AssentCrypto
import AssentModel
import AssentTesting
import Foundation
import Testing

@testable import AssentServer

/// Every field a request body's type reads is in the OpenAPI document, and the document lists no field the server
/// ignores. The type's fields are found by decoding it with a decoder that answers every question and writes down
/// each key asked for.
@Suite("OpenAPI request bodies: the fields the server reads are the fields the document states")
struct OpenAPIFieldTests {
    /// Each request schema of the document with the type the server decodes it as.
    static let bodies: [(schema: String, type: any (Decodable & Sendable).Type)] = [
        ("UpdateApplicationRequest", UpdateApplicationRequest.self),
        ("CreateActivationRequest", CreateActivationRequest.self),
        ("BlockActivationRequest", BlockActivationRequest.self), ("CreateAPIKeyRequest", CreateAPIKeyRequest.self),
        ("CreateOperationRequest", CreateOperationRequest.self),
        ("CancelOperationRequest", CancelOperationRequest.self), ("OfflineQRRequest", OfflineQRRequest.self),
        ("ApprovalLinkRequest", ApprovalLinkRequest.self), ("OfflineVerifyRequest", OfflineVerifyRequest.self),
        ("CreateClientRequest", CreateClientRequest.self), ("CreateTFAAccountRequest", CreateTFAAccountRequest.self),
        ("UpdateTFAAccountRequest", UpdateTFAAccountRequest.self), ("TFAPolicy", TFAPolicy.self),
        ("StartTFALoginRequest", StartTFALoginRequest.self), ("AddTFAEmailRequest", AddTFAEmailRequest.self),
        ("CreateApplicationRequest", CreateApplicationRequest.self),
        ("CreateApplicationVersionRequest", CreateApplicationVersionRequest.self),
        ("CreateOperatorRequest", CreateOperatorRequest.self), ("APNsCredentialsRequest", APNsCredentialsRequest.self),
        ("FCMCredentialsRequest", FCMCredentialsRequest.self), ("HMSCredentialsRequest", HMSCredentialsRequest.self),
        ("UpdateApplicationBrandingRequest", UpdateApplicationBrandingRequest.self),
        ("SetApplicationWebhookRequest", SetApplicationWebhookRequest.self),
        ("UpdateApplicationRateLimitsRequest", UpdateApplicationRateLimitsRequest.self),
        ("EncryptedRequest", EncryptedRequest.self), ("PushRegistrationRequest", PushRegistrationRequest.self),
        ("OperationAuthorizeRequest", OperationAuthorizeRequest.self),
        ("OperationRejectRequest", OperationRejectRequest.self),
        ("ActivationStatusRequest", ActivationStatusRequest.self),
        ("HostAccessRequest", HostAccessRequest.self),
    ]

    static func schemas() throws -> [String: [String: Any]] {
        let document = try JSONSerialization.jsonObject(with: OpenAPIDocument.json) as? [String: Any]
        guard let schemas = (document?["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]] else {
            throw TestFailure("the document has no schemas")
        }
        return schemas
    }

    @Test("Each request type reads exactly the properties its schema lists")
    func fields() throws {
        let schemas = try Self.schemas()
        for (name, type) in Self.bodies {
            let schema = try #require(schemas[name], "\(name) is not in the document")
            let documented = Set((schema["properties"] as? [String: Any] ?? [:]).keys)
            let recorder = KeyRecorder()
            do {
                _ = try type.init(from: RecordingDecoder(recorder: recorder, schema: schema))
            } catch {
                Issue.record(
                    "\(name): the type could not be walked past \(recorder.keys.last ?? "its start"): \(error)")
                continue
            }
            let read = Set(recorder.keys)
            #expect(
                read.subtracting(documented).isEmpty,
                "\(name): read but not documented: \(read.subtracting(documented).sorted())")
            #expect(
                documented.subtracting(read).isEmpty,
                "\(name): documented but not read: \(documented.subtracting(read).sorted())")
        }
    }

    @Test("Every request schema of the document is in the table above")
    func everySchema() throws {
        let named = Set(Self.bodies.map(\.schema))
        for name in try Self.schemas().keys where name.hasSuffix("Request") {
            #expect(named.contains(name), "\(name) has no type in OpenAPIFieldTests.bodies")
        }
    }
}

/// The keys a decoding asked for, in order.
final class KeyRecorder: @unchecked Sendable {
    var keys: [String] = []
}

/// A decoder that answers every question — a value from the property's schema (its first `enum` value, `const` or
/// `example`) or a plain one — and records the keys of the top level.
struct RecordingDecoder: Decoder {
    let recorder: KeyRecorder?
    let schema: [String: Any]?
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Keyed<Key>(recorder: recorder, properties: schema?["properties"] as? [String: Any]))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Unkeyed() }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(schema: schema) }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let recorder: KeyRecorder?
        let properties: [String: Any]?
        var codingPath: [any CodingKey] = []
        var allKeys: [Key] { [] }

        func record(_ key: Key) { recorder?.keys.append(key.stringValue) }

        /// Optional fields ask this first: recorded, and absent.
        func contains(_ key: Key) -> Bool {
            record(key)
            return false
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            record(key)
            return true
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            record(key)
            return try T(from: RecordingDecoder(recorder: nil, schema: properties?[key.stringValue] as? [String: Any]))
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            record(key)
            return KeyedDecodingContainer(Keyed<NestedKey>(recorder: nil, properties: nil))
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            record(key)
            return Unkeyed()
        }

        func superDecoder() throws -> any Decoder { RecordingDecoder(recorder: nil, schema: nil) }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            record(key)
            return RecordingDecoder(recorder: nil, schema: nil)
        }
    }

    struct Unkeyed: UnkeyedDecodingContainer {
        var codingPath: [any CodingKey] = []
        var count: Int? { 0 }
        var isAtEnd: Bool { true }
        var currentIndex: Int { 0 }

        mutating func decodeNil() throws -> Bool { true }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            throw DecodingError.valueNotFound(type, .init(codingPath: [], debugDescription: "empty"))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            KeyedDecodingContainer(Keyed<NestedKey>(recorder: nil, properties: nil))
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { Unkeyed() }

        mutating func superDecoder() throws -> any Decoder { RecordingDecoder(recorder: nil, schema: nil) }
    }

    struct Single: SingleValueDecodingContainer {
        let schema: [String: Any]?
        var codingPath: [any CodingKey] = []

        /// A value the schema names, else `fallback`.
        func value<T>(_ fallback: T) -> T {
            if let values = schema?["enum"] as? [Any], let first = values.first(where: { $0 is T }) as? T {
                return first
            }
            return schema?["const"] as? T ?? schema?["example"] as? T ?? fallback
        }

        func decodeNil() -> Bool { false }
        func decode(_ type: Bool.Type) throws -> Bool { value(false) }
        func decode(_ type: String.Type) throws -> String { value("x") }
        func decode(_ type: Double.Type) throws -> Double { value(1) }
        func decode(_ type: Float.Type) throws -> Float { 1 }
        func decode(_ type: Int.Type) throws -> Int { value(1) }
        func decode(_ type: Int8.Type) throws -> Int8 { 1 }
        func decode(_ type: Int16.Type) throws -> Int16 { 1 }
        func decode(_ type: Int32.Type) throws -> Int32 { 1 }
        func decode(_ type: Int64.Type) throws -> Int64 { 1 }
        func decode(_ type: UInt.Type) throws -> UInt { 1 }
        func decode(_ type: UInt8.Type) throws -> UInt8 { 1 }
        func decode(_ type: UInt16.Type) throws -> UInt16 { 1 }
        func decode(_ type: UInt32.Type) throws -> UInt32 { 1 }
        func decode(_ type: UInt64.Type) throws -> UInt64 { 1 }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try T(from: RecordingDecoder(recorder: nil, schema: schema))
        }
    }
}

extension RecordingDecoder.Keyed {
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try primitive(key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try primitive(key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try primitive(key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try primitive(key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try primitive(key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try primitive(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try primitive(key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try primitive(key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try primitive(key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try primitive(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try primitive(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try primitive(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try primitive(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try primitive(key) }

    private func primitive<T: Decodable>(_ key: Key) throws -> T {
        record(key)
        return try RecordingDecoder.Single(schema: properties?[key.stringValue] as? [String: Any]).decode(T.self)
    }
}
