#!/usr/bin/env bash
# Crash test (not in CI): runs authorize and validate load against `assent serve`, kills the server with SIGKILL
# in the middle, restarts it on the same data, and checks that every approval the clients saw acknowledged is
# APPROVED and that no activation's counter went back (each activation's last accepted request, sent again, must
# be refused as a replay). SQLite and PostgreSQL. Then, on PostgreSQL, two servers share one database with a webhook:
# the one under load is killed, the other must keep serving and deliver the webhook event of every acknowledged
# approval (the killed process's claimed outbox messages come back to it when their lease ends).
#   ROUNDS=3 DATABASES="sqlite postgres" Benchmarks/crash.sh
set -euo pipefail
cd "$(dirname "$0")/.."

. Benchmarks/common.sh
build_load

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

# Two processes, one killed: a webhook receiver that appends "operationId status" per delivery.
other_pid="" receiver_pid=""
cleanup_both() { kill "$other_pid" "$receiver_pid" 2>/dev/null || true; cleanup; }
trap cleanup_both EXIT
pg_port=${pg_url##*:}; pg_port=${pg_port%%/*}
"$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U assent assent_failover
failover_url=${pg_url/assent_crash/assent_failover}
receiver_port=$(free_port)
python3 - "$receiver_port" "$work/webhook.log" <<'PY' &
import http.server, json, sys
port, log = int(sys.argv[1]), sys.argv[2]
class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        event = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with open(log, "a") as out:
            out.write(f"{event['operationId']} {event['status']}\n")
        self.send_response(200); self.end_headers()
    def log_message(self, *args): pass
http.server.HTTPServer(("127.0.0.1", port), Receiver).serve_forever()
PY
receiver_pid=$!
export ASSENT_WEBHOOK_SECRET=crash-test-webhook-secret-0123456789
webhook=(--database "$failover_url" --webhook-url "http://127.0.0.1:$receiver_port/hook" --egress-allow 127.0.0.0/8)
start_server failover-a "${webhook[@]}"
failover_key=$key killed_pid=$server_pid killed_port=$port
other_port=$(free_port)
# The same data directory: the second process needs the same key-encryption key (the kek file).
"$ASSENT" serve --port "$other_port" --data-dir "$work/failover-a" --log-level warning "${webhook[@]}" \
    >"$work/failover-b.out" 2>"$work/failover-b.err" &
other_pid=$!
for _ in $(seq 100); do grep -q "listening" "$work/failover-b.out" 2>/dev/null && break; sleep 0.2; done
grep -q "listening" "$work/failover-b.out" || { cat "$work/failover-b.err"; exit 1; }
record="$work/failover.json" out="$work/failover.load"
"$LOAD" --url "http://127.0.0.1:$killed_port" --api-key "$failover_key" --label failover --scenario authorize \
    --activations 200 --concurrency 32 --duration 30 --operations-per-activation 40 --record "$record" >"$out" 2>&1 &
load_pid=$!
for _ in $(seq 600); do grep -q "Load started" "$out" 2>/dev/null && break; sleep 0.1; done
sleep "$(python3 -c 'import random; print(round(random.uniform(1, 4), 2))')"
kill -9 "$killed_pid"; wait "$killed_pid" 2>/dev/null || true; server_pid=""
wait "$load_pid" || { cat "$out"; exit 1; }
grep "acknowledged" "$out"
kill -0 "$other_pid" 2>/dev/null || { echo "the other process died"; cat "$work/failover-b.err"; exit 1; }
# The survivor serves: the acknowledged approvals are APPROVED there and no counter went back.
"$LOAD" --url "http://127.0.0.1:$other_port" --api-key "$failover_key" --label "postgres, other process" \
    --verify "$record"
# And it delivers every acknowledged approval's webhook event (the killed one's leases end after 60 s).
python3 - "$record" "$work/webhook.log" <<'PY'
import json, os, sys, time
approved = set(json.load(open(sys.argv[1]))["approved"])
start = time.time()
while True:
    seen = set()
    if os.path.exists(sys.argv[2]):
        seen = {line.split()[0] for line in open(sys.argv[2]) if line.split()[1:] == ["APPROVED"]}
    missing = approved - seen
    if not missing or time.time() - start > 150:
        break
    time.sleep(1)
print(f"[postgres, other process] webhook: {len(approved) - len(missing)} of {len(approved)} acknowledged approvals "
      f"delivered as APPROVED events within {time.time() - start:.0f} s")
sys.exit(1 if missing else 0)
PY
