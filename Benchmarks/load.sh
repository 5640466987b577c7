#!/usr/bin/env bash
# Load test against SQLite and PostgreSQL on this machine (loopback only): GET /health (the HTTP floor), the Mobile
# Token API's operation list (MAC tokens) and authorize (2FA signatures), and /pa/v3/signature/validate.
#   SCENARIOS="list authorize validate" DATABASES="sqlite postgres" Benchmarks/load.sh [--activations 1000] [--concurrency 64] [--duration 15]
# Every run starts with health. Each scenario prints its rate and latencies, then the server's CPU time per request
# over the measured window (from /proc/PID/stat) and its ratio to health's in the same run: the figure that stays
# put on a shared machine.
#   GENERATOR=wrk    health and list are sent by wrk (a fraction of assent-load's cost per request); list's MAC-token
#                    headers are prepared by assent-load first (each nonce is single use). Others use assent-load.
#   PIN=1            the server on core 0, the generator on core 1 (taskset), so neither steals the other's core.
# Builds release binaries, starts `assent serve` on each database, prints lines per database and scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
args=("$@")
duration=15 concurrency=64
for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[$i]}" in
    --duration) duration=${args[$((i + 1))]} ;;
    --concurrency) concurrency=${args[$((i + 1))]} ;;
    esac
done

. Benchmarks/common.sh
build_load
generator_prefix=()
if [ "${PIN:-0}" = 1 ]; then
    SERVER_PREFIX="taskset -c 0"
    generator_prefix=(taskset -c 1)
fi
if [ "${GENERATOR:-assent-load}" = wrk ] && ! command -v wrk >/dev/null; then
    echo "GENERATOR=wrk needs wrk (apt-get install wrk)." >&2
    exit 1
fi

# report LABEL SCENARIO MICROSECONDS: the CPU line, with the ratio to this run's health.
report() {
    local ratio=""
    [ -n "${health_us:-}" ] && ratio=$(awk -v a="$3" -v b="$health_us" 'BEGIN { printf ", %.2f× health", a / b }')
    echo "[$1] $2: server CPU $3 µs/request$ratio"
    [ "$2" = health ] && health_us=$3
    return 0
}

# with_wrk LABEL SCENARIO: wrk for the measured window, the server's CPU read around it.
with_wrk() {
    local label=$1 scenario=$2 lua=() path=/health
    if [ "$scenario" = list ]; then
        # Enough single-use requests for 40,000/s over the window.
        "${generator_prefix[@]}" "$LOAD" --url "http://127.0.0.1:$port" --api-key "$key" --label "$label" \
            --scenario list --wrk-requests "$(awk -v d="$duration" 'BEGIN { printf "%d", d * 40000 }')" \
            --wrk-file "$work/wrk-list.txt" "${args[@]}" | tail -1
        lua=(-s Benchmarks/wrk/requests.lua)
        path=/api/auth/token/app/operation/list
    fi
    local threads=2 before after output requests
    before=$(cpu_seconds "$server_pid")
    if [ ${#lua[@]} -gt 0 ]; then
        output=$("${generator_prefix[@]}" wrk -t"$threads" -c"$concurrency" -d"${duration}s" --latency "${lua[@]}" \
            "http://127.0.0.1:$port$path" -- "$work/wrk-list.txt" "$threads" "$path")
    else
        output=$("${generator_prefix[@]}" wrk -t"$threads" -c"$concurrency" -d"${duration}s" --latency \
            "http://127.0.0.1:$port$path")
    fi
    after=$(cpu_seconds "$server_pid")
    requests=$(awk '/requests in/ { print $1 }' <<<"$output")
    local errors; errors=$(awk '/Non-2xx/ { print $5 }' <<<"$output")
    echo "[$label] $scenario (wrk): $requests requests, $(awk '/Requests\/sec/ { print $2 }' <<<"$output") req/s," \
        "p50 $(awk '$1 == "50%" { print $2 }' <<<"$output"), p99 $(awk '$1 == "99%" { print $2 }' <<<"$output")," \
        "errors ${errors:-0}"
    report "$label" "$scenario" "$(awk -v a="$before" -v b="$after" -v n="$requests" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')"
    [ "${errors:-0}" = 0 ]
}

run_load() {
    local label=$1; shift
    start_server "$label" "$@"
    health_us=""
    local scenarios=" ${SCENARIOS:-list authorize validate} "
    scenarios="health ${scenarios// health / }"
    for scenario in $scenarios; do
        if [ "${GENERATOR:-assent-load}" = wrk ] && [[ "$scenario" == health || "$scenario" == list ]]; then
            with_wrk "$label" "$scenario"
            continue
        fi
        local output
        output=$("${generator_prefix[@]}" "$LOAD" --url "http://127.0.0.1:$port" --api-key "$key" --label "$label" \
            --scenario "$scenario" --server-pid "$server_pid" "${args[@]}")
        grep -v "server CPU" <<<"$output"
        report "$label" "$scenario" "$(sed -n 's/.*server CPU \([0-9.]*\) µs.*/\1/p' <<<"$output")"
    done
    stop_server
}

databases=" ${DATABASES:-sqlite postgres} "
[[ "$databases" == *" sqlite "* ]] && run_load sqlite
[[ "$databases" == *" postgres "* ]] || exit 0
start_postgres assent_load
run_load postgres --database "$pg_url"
