// swift-tools-version: 6.2
import PackageDescription

/// Settings shared by every target we own: Swift 6 language mode comes from the tools version;
/// warnings in our code fail the build, warnings in dependencies do not.
let strictSettings: [SwiftSetting] = [
    .treatAllWarnings(as: .error),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "assent",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "AssentCrypto", targets: ["AssentCrypto"]),
        .library(name: "AssentModel", targets: ["AssentModel"]),
        .library(name: "AssentServer", targets: ["AssentServer"]),
        .library(name: "AssentSDK", targets: ["AssentSDK"]),
        .executable(name: "assent", targets: ["assent"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "AssentCrypto",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "AssentModel",
            dependencies: ["AssentCrypto"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "AssentServer",
            dependencies: ["AssentCrypto", "AssentModel"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "AssentSDK",
            dependencies: ["AssentCrypto", "AssentModel"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "assent",
            dependencies: [
                "AssentServer",
                "AssentSDK",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AssentCryptoTests",
            dependencies: ["AssentCrypto"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AssentModelTests",
            dependencies: ["AssentModel"],
            swiftSettings: strictSettings
        ),
    ]
)
