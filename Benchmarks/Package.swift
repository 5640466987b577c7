// swift-tools-version: 6.1
import PackageDescription

// Microbenchmarks of the crypto core, kept apart from the main package so that building and testing Assent
// does not build the benchmark harness. Run: `swift package --package-path Benchmarks benchmark`.
let package = Package(
    name: "assent-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "assent", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.0", traits: ["MallocInterposer"]),
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
        )
    ]
)
