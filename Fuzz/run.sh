#!/usr/bin/env bash
# Builds the libFuzzer targets with swiftc (a SwiftPM executable cannot link libFuzzer's main) and runs each for
# FUZZ_SECONDS (default 60) on its corpus.
#   Fuzz/run.sh [operation-data|mobile-json|qr|oauth-form|headers|request-json|device-texts|jws|webauthn|webpush-audit ...]
# A target is its check (Sources/AssentTesting/FuzzChecks+*.swift) over the modules AssentCrypto, AssentModel and
# AssentQR, compiled whole with fuzzer and address-sanitizer instrumentation. swift-crypto (and swift-certificates, which
# AssentCrypto's WebAuthn attestation uses) come uninstrumented from
# the package's release build (`swift build -c release --product assent`, run first): its modules, and the object
# files that build linked into `assent`.
# Seeds and regression inputs live in Fuzz/corpus/<target>/ (checked in; `swift test` replays them through the same
# checks); inputs libFuzzer finds go to .build/fuzz/corpus-<target>/; a crash or broken property is saved to
# Fuzz/crashers/<target>/ — move it into Fuzz/corpus/<target>/ once fixed, so it is replayed for ever.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
out=.build/fuzz
modules="$out/modules"
declare -A check=(
  [operation-data]=OperationData [mobile-json]=JSON [qr]=QR [oauth-form]=Form [headers]=Headers
  [request-json]=Requests [device-texts]=DeviceTexts [jws]=JWS [webauthn]=WebAuthn [webpush-audit]=WebPush
)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(operation-data mobile-json qr oauth-form headers request-json device-texts jws webauthn webpush-audit)
for name in "${targets[@]}"; do [ -n "${check[$name]:-}" ] || { echo "unknown target $name" >&2; exit 2; }; done

echo "== swift-crypto (release build)"
swift build -c release --product assent >/dev/null
release=$(swift build -c release --show-bin-path)
rm -rf "$modules" && mkdir -p "$modules"
# The objects themselves, not an archive of them: a linker takes from an archive only the members a symbol needs,
# and would leave out those that hold nothing but Swift metadata and conformance records (a crash at run time).
grep -E "/(Crypto|CryptoBoringWrapper|CryptoExtras|_CryptoExtras|CCryptoBoringSSL|CCryptoBoringSSLShims|CXKCP|CXKCPShims|SwiftASN1|X509|_CertificateInternals)\.build/" \
  "$release/assent.product/Objects.LinkFileList" > "$modules/crypto-objects"

flags=(-sanitize=fuzzer,address -parse-as-library -O -I "$modules" -I "$release/Modules")
# module NAME: a static library (one object: whole-module) and its module interface from Sources/NAME.
module() {
  echo "== $1: building"
  find "Sources/$1" -name "*.swift" -print0 | xargs -0 swiftc "${flags[@]}" -wmo -module-name "$1" -emit-module \
    -emit-module-path "$modules/$1.swiftmodule" -emit-library -static -o "$modules/lib$1.a"
}
module AssentCrypto
module AssentModel
module AssentQR

for name in "${targets[@]}"; do
  echo "== $name: building"
  swiftc "${flags[@]}" -module-name AssentFuzz -L "$modules" -lAssentModel -lAssentQR -lAssentCrypto "@$modules/crypto-objects" \
    Sources/AssentTesting/FuzzChecks.swift "Sources/AssentTesting/FuzzChecks+${check[$name]}.swift" \
    Fuzz/Harness.swift "Fuzz/Target-$name.swift" -o "$out/$name" 2> >(grep -v "Cannot export local symbol '__asan" >&2)
  mkdir -p "Fuzz/corpus/$name" "Fuzz/crashers/$name" "$out/corpus-$name"
  echo "== $name: fuzzing for $seconds s"
  SWIFT_BACKTRACE=enable=no "$out/$name" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="Fuzz/crashers/$name/" "$out/corpus-$name" "Fuzz/corpus/$name"
done
