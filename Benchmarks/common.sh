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
    key=$(sed -n 's/^Operator API key.*: //p' "$work/$label.out")
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
    as_pg "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
        -o "-p $pg_port -k $work -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
    "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U assent "$1"
    pg_url="postgres://assent@127.0.0.1:$pg_port/$1?sslmode=disable"
}
