#!/usr/bin/env bash
# Crash test (not in CI): runs authorize and validate load against `assent serve`, kills the server with SIGKILL
# in the middle, restarts it on the same data, and checks that every approval the clients saw acknowledged is
# APPROVED and that no activation's counter went back (each activation's last accepted request, sent again, must
# be refused as a replay). SQLite and PostgreSQL.
#   ROUNDS=3 DATABASES="sqlite postgres" Benchmarks/crash.sh
set -euo pipefail
cd "$(dirname "$0")/.."

swift build -c release --product assent
swift build -c release --package-path Benchmarks --product assent-load
LOAD="$PWD/Benchmarks/.build/release/assent-load"
. Benchmarks/common.sh

# crash_round LABEL SCENARIO [serve options…]
crash_round() {
    local label=$1 scenario=$2; shift 2
    start_server "$label" "$@"
    # A database that already has keys prints none: keep the first one.
    [ -n "$key" ] && saved_key=$key
    local first_key=$saved_key record="$work/$label-$scenario.json" out="$work/$label-$scenario.load"
    "$LOAD" --url "http://127.0.0.1:$port" --api-key "$first_key" --label "$label" --scenario "$scenario" \
        --activations 200 --concurrency 32 --duration 30 --operations-per-activation 40 --record "$record" \
        >"$out" 2>&1 &
    local load_pid=$!
    for _ in $(seq 600); do grep -q "Load started" "$out" 2>/dev/null && break; sleep 0.1; done
    # Somewhere between 1 and 4 seconds into the load.
    sleep "$(python3 -c 'import random; print(round(random.uniform(1, 4), 2))')"
    kill -9 "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
    wait "$load_pid" || { cat "$out"; return 1; }
    grep "acknowledged" "$out"
    start_server "$label" "$@"
    "$LOAD" --url "http://127.0.0.1:$port" --api-key "$first_key" --label "$label" --verify "$record"
    stop_server
}

saved_key=""
databases=" ${DATABASES:-sqlite postgres} "
for round in $(seq "${ROUNDS:-1}"); do
    for scenario in authorize validate; do
        if [[ "$databases" == *" sqlite "* ]]; then
            rm -rf "$work/sqlite"
            saved_key=""
            crash_round sqlite "$scenario"
        fi
    done
done
[[ "$databases" == *" postgres "* ]] || exit 0
start_postgres assent_crash
for round in $(seq "${ROUNDS:-1}"); do
    for scenario in authorize validate; do
        crash_round postgres "$scenario" --database "$pg_url"
    done
done
