#!/usr/bin/env bash
# Load test against SQLite and PostgreSQL on this machine (loopback only): the Mobile Token API's operation list
# (MAC tokens) and authorize (2FA signatures), and /pa/v3/signature/validate.
#   SCENARIOS="list authorize validate" DATABASES="sqlite postgres" Benchmarks/load.sh [--activations 1000] [--concurrency 64] [--duration 15]
# Builds release binaries, starts `assent serve` on each database, runs assent-load once per scenario, prints one
# line per database and scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
args=("$@")

swift build -c release --product assent
swift build -c release --package-path Benchmarks --product assent-load
ASSENT="$PWD/.build/release/assent"
LOAD="$PWD/Benchmarks/.build/release/assent-load"

work=$(mktemp -d /tmp/assent-load-XXXXXX)
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

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

run_load() {
    local label=$1; shift
    local port; port=$(free_port)
    "$ASSENT" serve --port "$port" --data-dir "$work/$label" --log-level warning "$@" >"$work/$label.out" 2>"$work/$label.err" &
    server_pid=$!
    for _ in $(seq 100); do grep -q "listening" "$work/$label.out" 2>/dev/null && break; sleep 0.2; done
    local key; key=$(sed -n 's/^Operator API key.*: //p' "$work/$label.out")
    for scenario in ${SCENARIOS:-list authorize validate}; do
        "$LOAD" --url "http://127.0.0.1:$port" --api-key "$key" --label "$label" --scenario "$scenario" "${args[@]}"
    done
    kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
}

databases=" ${DATABASES:-sqlite postgres} "
[[ "$databases" == *" sqlite "* ]] && run_load sqlite
[[ "$databases" == *" postgres "* ]] || exit 0

pg_bin=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | tail -1)
pg_port=$(free_port)
as_pg "$pg_bin/initdb" -D "$work/pg" -U assent --auth=trust >/dev/null
as_pg "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w -o "-p $pg_port -k $work -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
"$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U assent assent_load
run_load postgres --database "postgres://assent@127.0.0.1:$pg_port/assent_load?sslmode=disable"
