#!/usr/bin/env bash
# Live delivery on this machine (loopback only), against SQLite and PostgreSQL:
#   DATABASES="sqlite postgres" Benchmarks/push.sh [--count 1000] [--connections 10000] [--users 100]
# 1. round trip: operator creates an operation → the device sees it on its live event stream → approves it with a
#    2FA signature → the webhook receives APPROVED (p50/p99);
# 2. held streams: --connections live streams on one server, its resident memory, and the fan-out of one event.
# 3. push services: operator creates an operation → the outbox sends it → a receiver this machine runs has it,
#    through Web Push (VAPID checked, RFC 8291 decrypted) and through an APNs stand-in (HTTP/2 over TLS) (p50/p99).
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
    start_server "$label" --webhook-url "http://127.0.0.1:$hook/hook" --egress-allow 127.0.0.0/8 "$@"
    "$BENCH" --url "http://127.0.0.1:$port" --api-key "$key" --label "$label" --mode roundtrip --count "$count" \
        --webhook-port "$hook"
    "$BENCH" --url "http://127.0.0.1:$port" --api-key "$key" --label "$label" --mode connections \
        --connections "$connections" --users "$users" --server-pid "$server_pid"
    stop_server
    # Web Push to a receiver on loopback.
    local push_port; push_port=$(free_port)
    start_server "$label-webpush" --vapid-subject mailto:bench@assent.example --egress-allow 127.0.0.0/8 "$@"
    "$BENCH" --url "http://127.0.0.1:$port" --api-key "$key" --label "$label" --mode webpush --count "$count" \
        --push-port "$push_port"
    stop_server
    # APNs to a stand-in with a certificate of a CA made here, and an APNs key made here.
    push_port=$(free_port)
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "/CN=bench CA" \
        -keyout "$work/ca.key" -out "$work/ca.pem" -addext basicConstraints=critical,CA:TRUE >/dev/null 2>&1
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=127.0.0.1" \
        -keyout "$work/tls.key" -out "$work/tls.csr" >/dev/null 2>&1
    openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -days 1 \
        -extfile <(printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth') -out "$work/tls.pem" \
        >/dev/null 2>&1
    openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out "$work/apns.p8"
    start_server "$label-apns" --apns-key-file "$work/apns.p8" --apns-key-id BENCHKEY01 --apns-team-id BENCHTEAM1 \
        --apns-topic com.example.bench --apns-url "https://127.0.0.1:$push_port" --push-ca-file "$work/ca.pem" "$@"
    "$BENCH" --url "http://127.0.0.1:$port" --api-key "$key" --label "$label" --mode apns --count "$count" \
        --push-port "$push_port" --tls-certificate "$work/tls.pem" --tls-key "$work/tls.key"
    stop_server
}

databases=" ${DATABASES:-sqlite postgres} "
[[ "$databases" == *" sqlite "* ]] && run_bench sqlite
[[ "$databases" == *" postgres "* ]] || exit 0
start_postgres assent_push
run_bench postgres --database "$pg_url"
