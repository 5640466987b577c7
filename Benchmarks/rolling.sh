#!/usr/bin/env bash
# A rolling restart under load, longer than CI's: three `assent serve` processes on one throwaway PostgreSQL behind
# Debian's nginx with deploy/nginx/assent.conf (loopback only), phones approving operations, readers and held event
# streams going through nginx, while each server in turn gets SIGTERM and is started again — ROUNDS times over.
#   Benchmarks/rolling.sh [ROUNDS (default 5)] [PHONES (default 6)]
# It runs the CI test (Tests/AssentServerTests/RollingUpgradeTests.swift) with those figures and prints its tally:
# requests, approvals, failed requests (must be 0), and how often each phone's stream was cut and resumed. The test
# itself fails on any failed request, lost approval, operation made twice, or event a stream missed.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
phones=${2:-6}
swift build --build-tests >/dev/null
bundle=$(swift build --show-bin-path)/assentPackageTests.xctest
ASSENT_ROLLING_ROUNDS=$rounds ASSENT_ROLLING_PHONES=$phones SWIFT_BACKTRACE=enable=no \
    "$bundle" --testing-library swift-testing --filter RollingUpgradeTests 2>&1 \
    | grep -E '^rolling:|recorded an issue|passed after|failed after' | grep -v 'Suite '
