import AssentCrypto
import AssentModel
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SQLKit

/// How an application's hosted pages look: its accent colour and logo (its name is the application's own).
public struct ApplicationBrandingRecord: Sendable, Equatable {
    public var applicationId: String
    /// `#rrggbb`.
    public var accentColor: String?
    public var logo: Data?
    /// `image/png` or `image/jpeg`.
    public var logoType: String?
    /// The pages' default language (``Languages/supported``).
    public var language: String?
    public var updatedAt: Millis
}

/// Applications' branding.
public protocol ApplicationBrandingStore: Sendable {
    func putApplicationBranding(_ branding: ApplicationBrandingRecord) async throws
    func applicationBranding(applicationId: String) async throws -> ApplicationBrandingRecord?
    /// Removes it; returns whether there was any.
    func deleteApplicationBranding(applicationId: String) async throws -> Bool
}

extension Migrations {
    /// Version 29: each application's accent colour and logo on the hosted pages.
    static func applicationBrandingV29(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS application_branding (
                application_id TEXT PRIMARY KEY REFERENCES applications(id),
                accent_color TEXT,
                logo \(dialect.blob),
                logo_type TEXT,
                updated_at \(dialect.bigint) NOT NULL
            )
            """
        ]
    }
}

extension SQLStore {
    public func putApplicationBranding(_ b: ApplicationBrandingRecord) async throws {
        try await database.raw(
            """
            INSERT INTO application_branding (application_id, accent_color, logo, logo_type, language, updated_at)
            VALUES (\(bind: b.applicationId), \(bind: b.accentColor), \(bind: b.logo), \(bind: b.logoType), \
            \(bind: b.language), \(bind: b.updatedAt))
            ON CONFLICT (application_id) DO UPDATE SET accent_color = excluded.accent_color, logo = excluded.logo, \
            logo_type = excluded.logo_type, language = excluded.language, updated_at = excluded.updated_at
            """
        ).run()
    }

    public func applicationBranding(applicationId: String) async throws -> ApplicationBrandingRecord? {
        try await database.raw(
            "SELECT * FROM application_branding WHERE application_id = \(bind: applicationId)"
        ).first().map { row in
            ApplicationBrandingRecord(
                applicationId: applicationId, accentColor: try row.decode(column: "accent_color", as: String?.self),
                logo: try row.decode(column: "logo", as: Data?.self),
                logoType: try row.decode(column: "logo_type", as: String?.self),
                language: try row.decode(column: "language", as: String?.self),
                updatedAt: try row.decode(column: "updated_at", as: Int64.self))
        }
    }

    public func deleteApplicationBranding(applicationId: String) async throws -> Bool {
        !(try await database.raw(
            """
            DELETE FROM application_branding WHERE application_id = \(bind: applicationId) RETURNING application_id
            """
        ).all()).isEmpty
    }
}

/// An application's branding on the hosted pages (sign-in, account, approval): an accent colour for buttons and
/// links, and a logo above the page's title. Both are checked when set: a colour white text stays readable on
/// (WCAG contrast 4.5:1 or more), a PNG or JPEG image of at most 100 KB. The pages link them as
/// `/web/brand/{applicationId}/style.css` and `…/logo` (same origin: the pages' Content-Security-Policy stays as
/// strict as it is).
public struct ApplicationBrandingService: Sendable {
    /// The part of the store this sees.
    let store: any ApplicationBrandingStore
    let clock: WallClock
    let audit: Auditor

    static let logoLimit = 100 * 1024

    /// The application's branding as the operator API shows it (the logo as Base64).
    public func info(_ application: ApplicationRecord) async throws -> ApplicationBrandingInfo {
        let branding = try await store.applicationBranding(applicationId: application.id)
        return ApplicationBrandingInfo(
            applicationId: application.id, name: application.name, accentColor: branding?.accentColor,
            logo: branding?.logo?.base64EncodedString(), logoType: branding?.logoType, language: branding?.language,
            updatedAt: branding.map { Date(millis: $0.updatedAt) })
    }

    /// Sets the accent colour and the logo; an absent field keeps what was set, an empty one removes it.
    /// - Throws: `ERR_REQUEST` naming what is wrong with the colour or the image.
    public func update(_ request: UpdateApplicationBrandingRequest, for application: ApplicationRecord, actor: String)
        async throws -> ApplicationBrandingInfo
    {
        var branding =
            try await store.applicationBranding(applicationId: application.id)
            ?? ApplicationBrandingRecord(applicationId: application.id, updatedAt: 0)
        if let color = request.accentColor {
            branding.accentColor = color.isEmpty ? nil : try Self.accent(color)
        }
        if let text = request.logo {
            if text.isEmpty {
                (branding.logo, branding.logoType) = (nil, nil)
            } else {
                guard let data = Data(base64Encoded: text) else {
                    throw AssentServerError.invalidRequest("The logo is Base64 of a PNG or JPEG image.")
                }
                (branding.logo, branding.logoType) = (data, try Self.imageType(data))
            }
        }
        if let language = request.language {
            branding.language = language.isEmpty ? nil : try Self.language(language)
        }
        branding.updatedAt = clock.millis
        try await store.putApplicationBranding(branding)
        await audit(
            .applicationBrandingChanged, application: application.id, actor: actor,
            "Application \(application.name) (\(application.id)) looks new: accent "
                + "\(branding.accentColor ?? "the default"), \(branding.logo == nil ? "no logo" : "a logo"), "
                + "language \(branding.language ?? "en").")
        return try await info(application)
    }

    /// The branding the pages of `applicationId` link, if it has any.
    func branding(_ applicationId: String) async throws -> ApplicationBrandingRecord? {
        try await store.applicationBranding(applicationId: applicationId)
    }

    /// `#rrggbb` in lower case, if white text is readable on it.
    static func accent(_ text: String) throws -> String {
        let hex = text.lowercased()
        guard hex.count == 7, hex.first == "#", let value = UInt32(hex.dropFirst(), radix: 16) else {
            throw AssentServerError.invalidRequest("The accent colour is written #rrggbb, e.g. #0a6e4f.")
        }
        func channel(_ shift: UInt32) -> Double {
            let c = Double((value >> shift) & 0xff) / 255
            return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4)
        }
        let luminance = 0.2126 * channel(16) + 0.7152 * channel(8) + 0.0722 * channel(0)
        let contrast = 1.05 / (luminance + 0.05)
        guard contrast >= 4.5 else {
            throw AssentServerError.invalidRequest(
                "White text on \(hex) has a contrast of \(String(format: "%.1f", contrast)):1; buttons need 4.5:1 or "
                    + "more: choose a darker colour.")
        }
        return hex
    }

    /// A language the pages are written in, by its code.
    static func language(_ text: String) throws -> String {
        guard Languages.supported.contains(text) else {
            throw AssentServerError.invalidRequest(
                "The pages are written in \(Languages.supported.joined(separator: ", ")); \"\(text.prefix(20))\" is none "
                    + "of them.")
        }
        return text
    }

    /// The image's type by its first bytes.
    static func imageType(_ data: Data) throws -> String {
        guard data.count <= logoLimit else {
            throw AssentServerError.invalidRequest("The logo is larger than 100 KB.")
        }
        if data.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if data.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        throw AssentServerError.invalidRequest("The logo is a PNG or JPEG image.")
    }
}

/// What a hosted page links of its application's branding (``LayoutFrame/brand``).
struct PageBrand: Sendable {
    var id: String
    /// Changes with every change of the branding: the links' cache key.
    var version: String
    var logo: Bool
    /// The application's default language (``Languages/choose(uiLocales:account:acceptLanguage:application:)``).
    var language: String?
}

extension ApplicationBrandingService {
    /// The links a page of `applicationId` carries; `nil` when it has no branding.
    func pageBrand(_ applicationId: String) async throws -> PageBrand? {
        guard let branding = try await branding(applicationId) else { return nil }
        return PageBrand(
            id: applicationId, version: String(branding.updatedAt), logo: branding.logo != nil,
            language: branding.language)
    }

}

/// `GET /web/brand/{applicationId}/style.css` (the accent colour for the page's buttons and links) and
/// `GET /web/brand/{applicationId}/logo`: what the hosted pages link of their application's branding.
struct BrandAssetController: Sendable {
    let branding: ApplicationBrandingService

    func addRoutes(to router: Router<AssentRequestContext>) {
        router.get("web/brand/{id}/style.css", use: style)
        router.get("web/brand/{id}/logo", use: logo)
    }

    @Sendable func style(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let record = try await branding.branding(try context.parameters.require("id"))
        let css = record?.accentColor.map { ":root { --accent: \($0); }\n" } ?? ""
        return Self.answer(Data(css.utf8), type: "text/css; charset=utf-8")
    }

    @Sendable func logo(_ request: Request, context: AssentRequestContext) async throws -> Response {
        guard let record = try await branding.branding(try context.parameters.require("id")),
            let logo = record.logo, let type = record.logoType
        else { throw AssentServerError.notFound("This application has no logo.") }
        return Self.answer(logo, type: type)
    }

    /// An asset answer: cached for five minutes (pages link it with the branding's version), never sniffed.
    private static func answer(_ body: Data, type: String) -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: type, .cacheControl: "public, max-age=300",
                HTTPField.Name("X-Content-Type-Options")!: "nosniff",
                .contentSecurityPolicy: "default-src 'none'",
            ],
            body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
