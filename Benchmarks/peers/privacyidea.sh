#!/usr/bin/env bash
# Side by side with a peer (not in CI; needs PyPI): privacyIDEA 3.14 on SQLite behind gunicorn against Assent on
# SQLite, each at 8 concurrent connections on this machine.
#   Benchmarks/peers/privacyidea.sh [--duration 15] [--workers 2] [--cheap-pin-hash]
# privacyIDEA: /validate/check with HOTP values (one user and token per connection, each value used once) and
# /validate/polltransaction of an open challenge. Assent: /pa/v3/signature/validate (2FA signatures) and the Mobile
# Token operation list. Prints requests per second of each and the ratios.
# privacyIDEA hashes token PINs with Argon2id, 9 rounds over 64 MiB by default (~0.3 s a verification here), and
# every /validate/check verifies one; --cheap-pin-hash sets 1 round over 64 KiB (PI_HASH_ALGO_PARAMS), so that what
# remains is its request handling.
set -euo pipefail
cd "$(dirname "$0")/../.."
duration=15
workers=2
cheap_pin_hash=0
while [ $# -gt 0 ]; do
    case "$1" in
    --duration) duration=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --cheap-pin-hash) cheap_pin_hash=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done

. Benchmarks/common.sh
build_load
pi_pid=""
stop_pi() { [ -n "$pi_pid" ] && kill "$pi_pid" 2>/dev/null && wait "$pi_pid" 2>/dev/null || true; pi_pid=""; }
trap 'stop_pi; cleanup' EXIT

# privacyIDEA in a venv of its own, configured on SQLite in the scratch directory.
venv="${PI_VENV:-$PWD/.build/peers/privacyidea-venv}"
if [ ! -x "$venv/bin/pi-manage" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "privacyidea==3.14" gunicorn
fi
pi="$work/privacyidea"
mkdir -p "$pi"
cat >"$pi/pi.cfg" <<EOF
SQLALCHEMY_DATABASE_URI = 'sqlite:///$pi/pi.sqlite'
SECRET_KEY = '$(python3 -c 'import secrets; print(secrets.token_hex(24))')'
PI_PEPPER = '$(python3 -c 'import secrets; print(secrets.token_hex(24))')'
PI_ENCFILE = '$pi/enckey'
PI_AUDIT_KEY_PRIVATE = '$pi/private.pem'
PI_AUDIT_KEY_PUBLIC = '$pi/public.pem'
PI_LOGFILE = '$pi/privacyidea.log'
PI_LOGLEVEL = 30
EOF
if [ "$cheap_pin_hash" = 1 ]; then
    echo "PI_HASH_ALGO_PARAMS = {'argon2__rounds': 1, 'argon2__memory_cost': 64}" >>"$pi/pi.cfg"
fi
export PRIVACYIDEA_CONFIGFILE="$pi/pi.cfg" PI_CONFIG_NAME=production
manage() { "$venv/bin/pi-manage" "$@" >>"$pi/setup.log" 2>&1; }
manage setup create_enckey
manage setup create_audit_keys
manage setup create_tables
admin_password=$(python3 -c 'import secrets; print(secrets.token_hex(12))')
manage admin add admin -p "$admin_password"
for i in $(seq 1 8); do echo "user$i:x:$((1000 + i)):$((1000 + i)):User $i,,,:/home/user$i:/bin/sh"; done >"$pi/users"

pi_port=$(free_port)
"$venv/bin/gunicorn" --workers "$workers" --bind "127.0.0.1:$pi_port" \
    'privacyidea.app:create_app(config_name="production", silent=True)' >"$pi/gunicorn.log" 2>&1 &
pi_pid=$!
for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$pi_port/" && break
    sleep 0.3
done

python3 - "$pi_port" "$admin_password" "$pi/users" "$duration" >"$work/pi.result" <<'EOF'
import hashlib, hmac, http.client, json, struct, sys, threading, time, urllib.parse

port, password, users_file, duration = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])

def call(connection, method, path, fields=None, token=None):
    body = urllib.parse.urlencode(fields) if fields is not None and method != "GET" else None
    if fields is not None and method == "GET":
        path += "?" + urllib.parse.urlencode(fields)
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if token:
        headers["Authorization"] = token
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    answer = json.loads(response.read())
    if response.status != 200 or not answer.get("result", {}).get("status"):
        raise SystemExit(f"{method} {path}: {response.status} {answer}")
    return answer

def hotp(key, counter):
    digest = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    return "%06d" % ((struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF) % 1_000_000)

admin = http.client.HTTPConnection("127.0.0.1", port)
token = call(admin, "POST", "/auth", {"username": "admin", "password": password})["result"]["value"]["token"]
call(admin, "POST", "/resolver/users", {"type": "passwdresolver", "fileName": users_file}, token)
call(admin, "POST", "/realm/bench", {"resolvers": "users"}, token)
call(admin, "POST", "/defaultrealm/bench", {}, token)
call(admin, "POST", "/policy/challenge", {"scope": "authentication", "action": "challenge_response=hotp",
                                           "active": "true"}, token)
keys = {}
for i in range(1, 9):
    key = hashlib.sha1(b"bench-%d" % i).digest()
    keys[i] = key
    call(admin, "POST", "/token/init", {"type": "hotp", "otpkey": key.hex(), "user": f"user{i}", "realm": "bench",
                                         "genkey": "0", "pin": ""}, token)
# An open challenge to poll (the HOTP token of user 1 answers challenges by policy).
transaction = call(admin, "POST", "/validate/triggerchallenge", {"user": "user1"},
                   token)["detail"]["transaction_id"]

def run(name, request):
    counts = [0] * 8
    failures = []
    stop = time.monotonic() + duration
    def worker(index):
        connection = http.client.HTTPConnection("127.0.0.1", port)
        state = {"counter": 0}
        try:
            while time.monotonic() < stop:
                request(connection, index, state)
                counts[index] += 1
        except BaseException as error:  # report, do not hide
            failures.append(repr(error))
    started = time.monotonic()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads: thread.start()
    for thread in threads: thread.join()
    elapsed = time.monotonic() - started
    if failures:
        raise SystemExit(f"{name}: {failures[0]}")
    print(f"{name} {sum(counts) / elapsed:.1f}")

def check(connection, index, state):
    user = index + 1
    otp = hotp(keys[user], state["counter"])
    state["counter"] += 1
    answer = call(connection, "POST", "/validate/check", {"user": f"user{user}", "pass": otp})
    if answer["result"]["value"] is not True:
        raise RuntimeError(f"user{user} rejected: {answer}")

def poll(connection, index, state):
    call(connection, "GET", "/validate/polltransaction", {"transaction_id": transaction})

run("check", check)
run("poll", poll)
EOF

start_server sqlite
assent() {
    "$LOAD" --url "http://127.0.0.1:$port" --api-key "$key" --label sqlite --scenario "$1" --activations 100 \
        --concurrency 8 --duration "$duration" | tail -1
}
validate_line=$(assent validate)
list_line=$(assent list)
stop_server
rate() { sed -n 's/.*= \([0-9.]*\) req\/s.*/\1/p' <<<"$1"; }
check=$(awk '$1 == "check" { print $2 }' "$work/pi.result")
poll=$(awk '$1 == "poll" { print $2 }' "$work/pi.result")
validate=$(rate "$validate_line")
list=$(rate "$list_line")
pin_hash="default PIN hashing: Argon2id, 9 rounds, 64 MiB"
[ "$cheap_pin_hash" = 1 ] && pin_hash="cheapened PIN hashing: Argon2id, 1 round, 64 KiB"
echo "privacyIDEA 3.14 (gunicorn, $workers workers, SQLite, $pin_hash), 8 connections, ${duration} s each:"
echo "  /validate/check (HOTP)        $check req/s"
echo "  /validate/polltransaction     $poll req/s"
echo "Assent (SQLite, group commit), 8 connections, ${duration} s each:"
echo "  $validate_line"
echo "  $list_line"
python3 -c "print(f'Ratios: signature validate / validate/check = {$validate / $check:.0f}x; operation list / polltransaction = {$list / $poll:.0f}x')"
