// swift-tools-version: 6.2
import PackageDescription

/// Settings shared by every target we own: Swift 6 language mode comes from the tools version;
/// warnings in our code fail the build, warnings in dependencies do not.
let strictSettings: [SwiftSetting] = [
    .treatAllWarnings(as: .error),
    .enableUpcomingFeature("ExistentialAny"),
]

/// What the server's tests and their shared support target (a server on real databases and HTTP, fixtures, an
/// SMTP server, a relying party) build on.
let serverTestingDependencies: [Target.Dependency] = [
    "AssentServer",
    "AssentCrypto",
    "AssentModel",
    "AssentTesting",
    "AssentSDK",
    .product(name: "HummingbirdTesting", package: "hummingbird"),
    .product(name: "HummingbirdHTTP2", package: "hummingbird"),
    .product(name: "X509", package: "swift-certificates"),
    .product(name: "NIOHTTP2", package: "swift-nio-http2"),
    .product(name: "NIOSSL", package: "swift-nio-ssl"),
    .product(name: "CryptoExtras", package: "swift-crypto"),
    .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
    .product(name: "JWTKit", package: "jwt-kit"),
    .product(name: "AsyncHTTPClient", package: "async-http-client"),
]

let package = Package(
    name: "assent",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "AssentCrypto", targets: ["AssentCrypto"]),
        .library(name: "AssentModel", targets: ["AssentModel"]),
        .library(name: "AssentQR", targets: ["AssentQR"]),
        .library(name: "AssentServer", targets: ["AssentServer"]),
        .library(name: "AssentSDK", targets: ["AssentSDK"]),
        .library(name: "AssentTesting", targets: ["AssentTesting"]),
        .executable(name: "assent", targets: ["assent"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.1.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.90.0"),
        .package(url: "https://github.com/vapor/sql-kit.git", from: "3.32.0"),
        .package(url: "https://github.com/vapor/postgres-kit.git", from: "2.14.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.25.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.45.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.0"),
        // The configuration file `assent serve --config` reads (YAML, every key checked against the flags).
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.0.0"),
        // Spans for each request, transaction and delivery (Hummingbird's middleware, swift-distributed-tracing),
        // exported over OTLP/HTTP when `serve --otlp-endpoint` is set; gRPC is left out (its build costs minutes).
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.1.0"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        .target(
            name: "AssentCrypto",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                // WebAuthn attestation statements carry X.509 chains and ASN.1 extensions.
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "AssentModel",
            dependencies: ["AssentCrypto"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "AssentQR",
            swiftSettings: strictSettings
        ),
        // The system's SQLite library, driven directly by the server's SQLite store (prepared statements kept
        // per connection, run on the calling thread).
        .systemLibrary(
            name: "CSQLite3", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .target(
            name: "AssentServer",
            dependencies: [
                "AssentCrypto",
                "AssentModel",
                "AssentQR",
                "CSQLite3",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "PostgresKit", package: "postgres-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            resources: [.copy("Resources/openapi.json"), .copy("Resources/web"), .copy("Resources/locales")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "AssentSDK",
            dependencies: ["AssentCrypto", "AssentModel", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "AssentTesting",
            dependencies: [
                "AssentCrypto", "AssentModel", "AssentQR",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "assent",
            dependencies: [
                "AssentServer",
                "AssentCrypto",
                "AssentSDK",
                "AssentModel",
                "AssentQR",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "OTel", package: "swift-otel"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AssentCryptoTests",
            dependencies: [
                "AssentCrypto", .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AssentQRTests",
            dependencies: ["AssentQR", "AssentTesting", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AssentModelTests",
            dependencies: ["AssentModel"],
            swiftSettings: strictSettings
        ),
        // What the server's and the SDK's tests share: a server on a real database and real HTTP (TestServer,
        // RunningServer, a throwaway PostgreSQL cluster), operation fixtures, an SMTP server, a relying party.
        .target(
            name: "AssentServerTesting",
            dependencies: serverTestingDependencies,
            path: "Tests/AssentServerTesting",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AssentServerTests",
            dependencies: ["AssentServerTesting", "assent"] + serverTestingDependencies,
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AssentSDKTests",
            dependencies: [
                "AssentServerTesting",
                "AssentSDK",
                "AssentServer",
                "AssentCrypto",
                "AssentModel",
                "AssentTesting",
            ],
            swiftSettings: strictSettings
        ),
    ]
)
