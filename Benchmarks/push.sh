#!/usr/bin/env bash
# Live delivery on this machine (loopback only), against SQLite and PostgreSQL:
#   DATABASES="sqlite postgres" Benchmarks/push.sh [--count 1000] [--connections 10000] [--users 100]
# 1. round trip: operator creates an operation → the device sees it on its live event stream → approves it with a
#    2FA signature → the webhook receives APPROVED (p50/p99);
# 2. held streams: --connections live streams on one server, its resident memory, and the fan-out of one event.
set -euo pipefail
cd "$(dirname "$0")/.."
count=1000 connections=10000 users=100
while [ $# -gt 0 ]; do
    case $1 in
        --count) count=$2; shift 2 ;;
        --connections) connections=$2; shift 2 ;;
        --users) users=$2; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
ulimit -n "$(ulimit -Hn)"
export ASSENT_WEBHOOK_SECRET=benchmark-webhook-secret

swift build -c release --product assent
swift build -c release --package-path Benchmarks --product assent-push-bench
BENCH="$PWD/Benchmarks/.build/release/assent-push-bench"
. Benchmarks/common.sh

run_bench() {
    local label=$1; shift
    local hook; hook=$(free_port)
    start_server "$label" --webhook-url "http://127.0.0.1:$hook/hook" "$@"
    "$BENCH" --url "http://127.0.0.1:$port" --api-key "$key" --label "$label" --mode roundtrip --count "$count" \
        --webhook-port "$hook"
    "$BENCH" --url "http://127.0.0.1:$port" --api-key "$key" --label "$label" --mode connections \
        --connections "$connections" --users "$users" --server-pid "$server_pid"
    stop_server
}

databases=" ${DATABASES:-sqlite postgres} "
[[ "$databases" == *" sqlite "* ]] && run_bench sqlite
[[ "$databases" == *" postgres "* ]] || exit 0
start_postgres assent_push
run_bench postgres --database "$pg_url"
