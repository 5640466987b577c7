#!/usr/bin/env bash
# Builds the libFuzzer targets with swiftc (a SwiftPM executable cannot link libFuzzer's main) and runs each for
# FUZZ_SECONDS (default 60) on its corpus.
#   Fuzz/run.sh [operation-data|mobile-json|qr|oauth-form|headers|request-json ...]
# A target is its check (Sources/AssentTesting/FuzzChecks+*.swift) and the source files of AssentCrypto,
# AssentModel and AssentQR the check reaches, built as modules of those names with fuzzer instrumentation and
# without the package's dependencies: only files that need no crypto library can take part (parsers are kept in
# such files for this reason).
# Seeds and regression inputs live in Fuzz/corpus/<target>/ (checked in; `swift test` replays them through the same
# checks); inputs libFuzzer finds go to .build/fuzz/corpus-<target>/; a crash or broken property is saved to
# Fuzz/crashers/<target>/ — move it into Fuzz/corpus/<target>/ once fixed, so it is replayed for ever.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
out=.build/fuzz
mkdir -p "$out"

files() { local dir=$1; shift; printf "$dir/%s " "$@"; }
declare -A crypto model qr check
check=(
  [operation-data]=OperationData [mobile-json]=JSON [qr]=QR [oauth-form]=Form [headers]=Headers
  [request-json]=Requests
)
model[operation-data]=$(files Sources/AssentModel Operations/OperationData.swift)
model[mobile-json]=$(files Sources/AssentModel Operations/MobileOperation.swift Operations/MobileTokenMessages.swift \
  Operations/OperationTemplate.swift Operations/OperationData.swift)
qr[qr]=$(ls Sources/AssentQR/*.swift | tr '\n' ' ')
model[oauth-form]=$(files Sources/AssentModel OpenID/FormEncoding.swift)
crypto[headers]=$(files Sources/AssentCrypto AssentCryptoError.swift Support/Bytes.swift Support/Base32.swift \
  Support/PowerAuthHeaderFields.swift Signature/AuthorizationHeader.swift Signature/SignatureType.swift \
  Signature/SignatureFormat.swift Token/TokenHeader.swift ECIES/EncryptionHeader.swift ActivationCode/ActivationCode.swift)
crypto[request-json]=$(files Sources/AssentCrypto AssentCryptoError.swift Support/Bytes.swift ECIES/ECIESCryptogram.swift)
model[request-json]="$(ls Sources/AssentModel/PowerAuth/*.swift Sources/AssentModel/Push/*.swift \
  Sources/AssentModel/Operator/*.swift | tr '\n' ' ') $(files Sources/AssentModel TFA/TFAMessages.swift \
  Operations/MobileTokenMessages.swift Operations/MobileOperation.swift Operations/OperationTemplate.swift \
  Operations/OperationData.swift DeviceConfiguration.swift)"

flags=(-sanitize=fuzzer,address -parse-as-library -O)
# module NAME DIR FILES…: a static library and its module interface in DIR.
module() {
  local name=$1 dir=$2; shift 2
  swiftc "${flags[@]}" -module-name "$name" -I "$dir" -emit-module -emit-module-path "$dir/$name.swiftmodule" \
    -emit-library -static -o "$dir/lib$name.a" "$@"
}

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(operation-data mobile-json qr oauth-form headers request-json)
for name in "${targets[@]}"; do
  [ -n "${check[$name]:-}" ] || { echo "unknown target $name" >&2; exit 2; }
  echo "== $name: building"
  modules="$out/modules-$name"
  rm -rf "$modules" && mkdir -p "$modules"
  libraries=()
  # shellcheck disable=SC2086
  if [ -n "${crypto[$name]:-}" ]; then module AssentCrypto "$modules" ${crypto[$name]}; libraries+=(-lAssentCrypto); fi
  # shellcheck disable=SC2086
  if [ -n "${model[$name]:-}" ]; then module AssentModel "$modules" ${model[$name]}; libraries=(-lAssentModel "${libraries[@]}"); fi
  # shellcheck disable=SC2086
  if [ -n "${qr[$name]:-}" ]; then module AssentQR "$modules" ${qr[$name]}; libraries+=(-lAssentQR); fi
  swiftc "${flags[@]}" -module-name AssentFuzz -I "$modules" -L "$modules" "${libraries[@]}" \
    Sources/AssentTesting/FuzzChecks.swift "Sources/AssentTesting/FuzzChecks+${check[$name]}.swift" \
    Fuzz/Harness.swift "Fuzz/Target-$name.swift" -o "$out/$name"
  mkdir -p "Fuzz/corpus/$name" "Fuzz/crashers/$name" "$out/corpus-$name"
  echo "== $name: fuzzing for $seconds s"
  SWIFT_BACKTRACE=enable=no "$out/$name" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="Fuzz/crashers/$name/" "$out/corpus-$name" "Fuzz/corpus/$name"
done
