#!/usr/bin/env bash
# Load test against SQLite and PostgreSQL on this machine (loopback only): GET /health (the HTTP floor), the Mobile
# Token API's operation list (MAC tokens) and authorize (2FA signatures), and /pa/v3/signature/validate.
#   SCENARIOS="list authorize validate" DATABASES="sqlite postgres" Benchmarks/load.sh [--activations 1000] [--concurrency 64] [--duration 15]
# Every run starts with health. Each scenario prints its rate and latencies, then the server's CPU time per request
# over the measured window (from /proc/PID/stat) and its ratio to health's in the same run: the figure that stays
# put on a shared machine. On PostgreSQL each scenario also prints the statements the server sent per request over
# the window (pg_stat_statements, top-level statements: one round trip each) and the most frequent ones.
#   GENERATOR=wrk    health and list are sent by wrk (a fraction of assent-load's cost per request); list's MAC-token
#                    headers are prepared by assent-load first (each nonce is single use). Others use assent-load.
#   PIN=1            the server on core 0, the generator on core 1 (taskset), so neither steals the other's core.
# Builds release binaries, starts `assent serve` on each database, prints lines per database and scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/common.sh
load_setup "$@"

run_load() {
    local label=$1; shift
    start_server "$label" "$@"
    run_scenarios "$label"
    stop_server
}

databases=" ${DATABASES:-sqlite postgres} "
[[ "$databases" == *" sqlite "* ]] && run_load sqlite
[[ "$databases" == *" postgres "* ]] || exit 0
start_postgres assent_load
statements_url=$pg_url run_load postgres --database "$pg_url"
