// swift-tools-version: 6.1
import PackageDescription

// Microbenchmarks of the crypto core and the HTTP load generator, kept apart from the main package so that
// building and testing Assent does not build them. Run: `swift package --package-path Benchmarks benchmark`.
let package = Package(
    name: "assent-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "assent", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.0", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.25.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.0"),
    ],
    targets: [
        .executableTarget(
            name: "CryptoBenchmarks",
            dependencies: [
                .product(name: "AssentCrypto", package: "assent"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CryptoBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Load generator for a running server: `swift run -c release --package-path Benchmarks assent-load --help`.
        .executableTarget(
            name: "assent-load",
            dependencies: [
                .product(name: "AssentCrypto", package: "assent"),
                .product(name: "AssentModel", package: "assent"),
                .product(name: "AssentTesting", package: "assent"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/LoadGenerator"
        ),
        // Live delivery: `swift run -c release --package-path Benchmarks assent-push-bench --help`.
        .executableTarget(
            name: "assent-push-bench",
            dependencies: [
                .product(name: "AssentCrypto", package: "assent"),
                .product(name: "AssentModel", package: "assent"),
                .product(name: "AssentSDK", package: "assent"),
                .product(name: "AssentTesting", package: "assent"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            path: "Sources/PushBenchmark"
        ),
    ]
)
