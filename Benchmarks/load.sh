#!/usr/bin/env bash
# Load test against SQLite and PostgreSQL on this machine (loopback only): the Mobile Token API's operation list
# (MAC tokens) and authorize (2FA signatures), /pa/v3/signature/validate, and (SCENARIOS=health) GET /health.
#   SCENARIOS="list authorize validate" DATABASES="sqlite postgres" Benchmarks/load.sh [--activations 1000] [--concurrency 64] [--duration 15]
# Builds release binaries, starts `assent serve` on each database, runs assent-load once per scenario, prints one
# line per database and scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
args=("$@")

. Benchmarks/common.sh
build_load

run_load() {
    local label=$1; shift
    start_server "$label" "$@"
    for scenario in ${SCENARIOS:-list authorize validate}; do
        "$LOAD" --url "http://127.0.0.1:$port" --api-key "$key" --label "$label" --scenario "$scenario" "${args[@]}"
    done
    stop_server
}

databases=" ${DATABASES:-sqlite postgres} "
[[ "$databases" == *" sqlite "* ]] && run_load sqlite
[[ "$databases" == *" postgres "* ]] || exit 0
start_postgres assent_load
run_load postgres --database "$pg_url"
