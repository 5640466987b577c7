# Shared by the benchmark scripts (sourced): a scratch directory cleaned up on exit, free loopback ports, a
# server started on one of them, and a throwaway PostgreSQL cluster.
# ASSENT_BINARY runs another build of the server (e.g. an earlier commit's, for a back-to-back comparison).
ASSENT="${ASSENT_BINARY:-$PWD/.build/release/assent}"
work=$(mktemp -d /tmp/assent-bench-XXXXXX)
chmod 777 "$work"
server_pid=""
pg_bin=""
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    [ -n "$pg_bin" ] && as_pg "$pg_bin/pg_ctl" -D "$work/pg" -m fast stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# build_load: release builds of the server (unless ASSENT_BINARY names one: then the working tree is not built, so
# an A/B is not disturbed by edits or builds meanwhile) and the load generator; sets LOAD.
build_load() {
    [ -n "${ASSENT_BINARY:-}" ] || swift build -c release --product assent
    swift build -c release --package-path Benchmarks --product assent-load
    LOAD="$PWD/Benchmarks/.build/release/assent-load"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_server LABEL [serve options…]: sets port, key (the operator API key) and server_pid.
start_server() {
    local label=$1; shift
    port=$(free_port)
    ${SERVER_PREFIX:-} "$ASSENT" serve --port "$port" --data-dir "$work/$label" --log-level warning "$@" \
        >"$work/$label.out" 2>"$work/$label.err" &
    server_pid=$!
    for _ in $(seq 100); do grep -q "listening" "$work/$label.out" 2>/dev/null && break; sleep 0.2; done
    # The key is printed when the data directory is new; a server started again on it keeps the one set before.
    local printed; printed=$(sed -n 's/^Operator API key.*: //p' "$work/$label.out")
    [ -z "$printed" ] || key=$printed
}

stop_server() { kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""; }

# cpu_seconds PID: the process's user and system CPU time so far (/proc/PID/stat fields 14 and 15).
cpu_seconds() {
    awk -v tck="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.3f\n", ($12 + $13) / tck }' "/proc/$1/stat"
}

# start_postgres DATABASE: a cluster on a free port; sets pg_url.
start_postgres() {
    pg_bin=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | tail -1)
    local pg_port; pg_port=$(free_port)
    as_pg "$pg_bin/initdb" -D "$work/pg" -U assent --auth=trust >/dev/null
    # pg_stat_statements counts the statements the server sends (top level: each one a round trip).
    as_pg "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
        -o "-p $pg_port -k $work -c listen_addresses=127.0.0.1 -c max_connections=200 \
            -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=top" start >/dev/null
    "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U assent "$1"
    pg_url="postgres://assent@127.0.0.1:$pg_port/$1?sslmode=disable"
    psql -q "$pg_url" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
}

# statements_reset: forgets the statements counted so far (when statements_url names the server's PostgreSQL).
statements_reset() {
    [ -n "${statements_url:-}" ] || return 0
    psql -qAt "$statements_url" -c "SELECT pg_stat_statements_reset()" >/dev/null
}

# statements LABEL SCENARIO REQUESTS: the statements the server sent since statements_reset, per request — each
# statement is one round trip to PostgreSQL (BEGIN and COMMIT included) —, and the most frequent of them.
statements() {
    [ -n "${statements_url:-}" ] && [ "${3:-0}" -gt 0 ] || return 0
    psql -qAt -F ' ' "$statements_url" -v requests="$3" <<'SQL' | sed "s/^/[$1] $2: /"
SELECT to_char(sum(calls)::numeric / :requests, 'FM990.00') || ' statements/request (round trips to PostgreSQL)'
FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%';
SELECT '  ' || to_char(calls::numeric / :requests, 'FM990.00') || ' × ' ||
    left(regexp_replace(query, '\s+', ' ', 'g'), 110)
FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' AND calls::numeric / :requests >= 0.01
ORDER BY calls DESC LIMIT 12;
SQL
}

# load_setup ARGUMENTS…: the options of a load run (--duration, --concurrency; all of them go on to assent-load as
# `args`), the release builds, and PIN and GENERATOR (load.sh's header says what they do).
load_setup() {
    args=("$@")
    duration=15 concurrency=64
    for ((i = 0; i < ${#args[@]}; i++)); do
        case "${args[$i]}" in
        --duration) duration=${args[$((i + 1))]} ;;
        --concurrency) concurrency=${args[$((i + 1))]} ;;
        esac
    done
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
}

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
    statements_reset
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
    statements "$label" "$scenario" "$requests"
    [ "${errors:-0}" = 0 ]
}

# run_scenarios LABEL: health, then SCENARIOS (default "list authorize validate") against the running server, each
# with its CPU line.
run_scenarios() {
    local label=$1
    health_us=""
    local scenarios=" ${SCENARIOS:-list authorize validate} "
    scenarios="health ${scenarios// health / }"
    for scenario in $scenarios; do
        if [ "${GENERATOR:-assent-load}" = wrk ] && [[ "$scenario" == health || "$scenario" == list ]]; then
            with_wrk "$label" "$scenario"
            continue
        fi
        local output log="$work/$label-$scenario.log" generator
        "${generator_prefix[@]}" "$LOAD" --url "http://127.0.0.1:$port" --api-key "$key" --label "$label" \
            --scenario "$scenario" --server-pid "$server_pid" "${args[@]}" >"$log" &
        generator=$!
        # The statements are counted from the measured window's start (the generator's set-up sends its own).
        if [ -n "${statements_url:-}" ]; then
            until grep -q "Load started" "$log" 2>/dev/null || ! kill -0 "$generator" 2>/dev/null; do sleep 0.02; done
            statements_reset
        fi
        wait "$generator"
        output=$(cat "$log")
        grep -v "server CPU" <<<"$output"
        report "$label" "$scenario" "$(sed -n 's/.*server CPU \([0-9.]*\) µs.*/\1/p' <<<"$output")"
        statements "$label" "$scenario" "$(sed -n "s/^\[$label\] $scenario: \([0-9]*\) requests in.*/\1/p" <<<"$output")"
    done
}
