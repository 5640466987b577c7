#!/usr/bin/env bash
# Builds the libFuzzer targets with swiftc (a SwiftPM executable cannot link libFuzzer's main) and runs each for
# FUZZ_SECONDS (default 60) on its corpus. Usage: Fuzz/run.sh [operation-data|mobile-json|qr|oauth-form|headers ...]
# Seeds and regression inputs live in Fuzz/corpus/<target>/ (checked in; `swift test` replays them through the same
# checks); inputs libFuzzer finds go to .build/fuzz/corpus-<target>/; a crash or broken property is saved to
# Fuzz/crashers/<target>/ — move it into Fuzz/corpus/<target>/ once fixed, so it is replayed for ever.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
out=.build/fuzz
mkdir -p "$out"
model=Sources/AssentModel/Operations
declare -A sources=(
  [operation-data]="$model/OperationData.swift Sources/AssentTesting/FuzzChecks+OperationData.swift"
  [mobile-json]="$model/MobileOperation.swift $model/MobileTokenMessages.swift $model/OperationTemplate.swift $model/OperationData.swift Sources/AssentTesting/FuzzChecks+JSON.swift"
  [qr]="$(ls Sources/AssentQR/*.swift | tr '\n' ' ') Sources/AssentTesting/FuzzChecks+QR.swift"
  [oauth-form]="Sources/AssentModel/OpenID/FormEncoding.swift Sources/AssentTesting/FuzzChecks+Form.swift"
  [headers]="$(printf "Sources/AssentCrypto/%s " AssentCryptoError.swift Support/Bytes.swift Support/PowerAuthHeaderFields.swift \
    Signature/AuthorizationHeader.swift Signature/SignatureType.swift Signature/SignatureFormat.swift \
    Token/TokenHeader.swift ECIES/EncryptionHeader.swift ActivationCode/ActivationCode.swift Support/Base32.swift) \
    Sources/AssentTesting/FuzzChecks+Headers.swift"
)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(operation-data mobile-json qr oauth-form headers)
for name in "${targets[@]}"; do
  [ -n "${sources[$name]:-}" ] || { echo "unknown target $name" >&2; exit 2; }
  echo "== $name: building"
  # shellcheck disable=SC2086
  swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name AssentFuzz \
    Sources/AssentTesting/FuzzChecks.swift ${sources[$name]} Fuzz/Harness.swift "Fuzz/Target-$name.swift" \
    -o "$out/$name"
  mkdir -p "Fuzz/corpus/$name" "Fuzz/crashers/$name" "$out/corpus-$name"
  echo "== $name: fuzzing for $seconds s"
  SWIFT_BACKTRACE=enable=no "$out/$name" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="Fuzz/crashers/$name/" "$out/corpus-$name" "Fuzz/corpus/$name"
done
