#!/usr/bin/env bash
# The hot paths on large tables, against the same paths on an empty database, in one run (loopback only): each
# database is prepared twice — empty, and holding a history of HISTORY_ACTIVATIONS (default 1,000,000) activations and
# HISTORY_OPERATIONS (default 10,000,000) operations of other users, all finished — and the two alternate over ROUNDS
# (default 2) runs of health, list, authorize and validate, as compare.sh alternates two builds. The history also
# holds HISTORY_AUDIT (default two per operation) sealed audit rows over the year; their hashes are random bytes, so
# the chain's state reports them (the sealer only goes on from the newest), and on PostgreSQL they fill twelve ranges
# of the chain as a year of service would have.
#   DATABASES="sqlite postgres" Benchmarks/large.sh [load.sh options: --duration 15 --concurrency 64 --activations 1000]
# SCENARIOS, GENERATOR and PIN as for Benchmarks/load.sh. Prints the seeding's time and size, the query plans of the
# hot statements on the large database, then per database and scenario each side's median [min–max] of the server's
# CPU per request, its ratio to health's, throughput and p99, and LARGE ÷ EMPTY of the medians. Raw lines are kept in
# .build/large/last/. Needs sqlite3 (the command-line shell) for SQLite, and about 8 GB free for each database.
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/common.sh
load_setup "$@"
rounds=${ROUNDS:-2}
activations=${HISTORY_ACTIVATIONS:-1000000}
operations=${HISTORY_OPERATIONS:-10000000}
audit=${HISTORY_AUDIT:-$((2 * operations))}
out="$PWD/.build/large/last"
rm -rf "$out"
mkdir -p "$out"

# The history, as SQL for DIALECT (sqlite or postgres): the activations of users history-1…N of the first
# application, ten operations each on average, one a second back from now (ten million span 116 days) within the
# last year, every one finished, with ids that carry their
# creation time as the server's do (on PostgreSQL each in its month's partition). Their server keys are a copy of
# a real activation's sealed key (history-template's), so the key ring's keeper finds every value under the current
# key, as on a real database, and settles.
history_sql() {
    local dialect=$1 uuid
    if [ "$dialect" = sqlite ]; then
        series() { echo "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)"; }
        bytes() { echo "randomblob($1)"; }
        uuid="lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-a' || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))"
        hex12="printf('%012x', t)"
        random_hex="lower(hex(randomblob(10)))"
        # Loaded without a journal's copy of every page; the server's WAL mode comes back at the end.
        echo "PRAGMA journal_mode = DELETE; PRAGMA synchronous = OFF; PRAGMA cache_size = -1000000; BEGIN;"
    else
        series() { echo "WITH n(i) AS (SELECT generate_series(1::bigint, $1))"; }
        bytes() { echo "decode(substr(md5(random()::text) || md5(random()::text), 1, $(($1 * 2))), 'hex')"; }
        uuid="gen_random_uuid()::text"
        hex12="lpad(to_hex(t), 12, '0')"
        random_hex="md5(random()::text)"
        echo "SET synchronous_commit = off; SET maintenance_work_mem = '1GB'; BEGIN;"
    fi
    local now; now=$(date +%s)000
    if [ "$dialect" = postgres ]; then
        # A partition for each month of the year's history, as a year of service would have made them (the first
        # partition, which holds everything before next month, goes first).
        echo "DROP TABLE operations_before_partitions;"
        for months in 12 9 6 3 0; do
            echo "SELECT assent_operation_partitions($now - $months * 2629800000, NULL);"
        done
    fi
    cat <<SQL
$(series "$activations")
INSERT INTO activations (id, application_id, user_id, state, code_expires_at, commit_mode, activation_name, platform,
    server_private_key, counter_data, counter, failed_attempts, max_failed_attempts, version, created_at, updated_at,
    last_used_at)
SELECT $uuid, (SELECT id FROM applications ORDER BY created_at LIMIT 1), 'history-' || i, 3, $now, 'auto',
    'Phone ' || i, 'ios', (SELECT server_private_key FROM activations WHERE user_id = 'history-template'),
    $(bytes 16), i % 1000, 0, 5, 1, $now - (i % 31536000) * 1000, $now,
    $now - (i % 86400) * 1000
FROM n;
$(series "$operations")
INSERT INTO operations (id, application_id, user_id, name, data, status, content, signature_type, failed_attempts,
    max_failed_attempts, created_at, expires_at, updated_at, finished_at, version)
SELECT substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || substr(r, 1, 3) || '-a' || substr(r, 4, 3) || '-'
        || substr(r, 7, 12),
    (SELECT id FROM applications ORDER BY created_at LIMIT 1), 'history-' || (1 + i % $activations),
    'payment', 'A1*A' || (i % 10000) || '.00CZK*ICZ5508000000001234567890*Q' || i,
    CASE i % 20 WHEN 0 THEN 'REJECTED' WHEN 1 THEN 'EXPIRED' WHEN 2 THEN 'CANCELED' ELSE 'APPROVED' END,
    '{"title":"Payment","message":"Pay ' || (i % 10000) || '.00 CZK to CZ5508000000001234567890","attributes":[{"type":"AMOUNT","id":"operation.amount","label":"Amount","amount":' || (i % 10000) || ',"currency":"CZK"}]}',
    'possession_knowledge', 0, 5, t, t + 300000, t + 30000, t + 30000, 2
FROM (SELECT i, t, $hex12 AS h, $random_hex AS r FROM (SELECT i, $now - (i % 31536000) * 1000 AS t FROM n) times) ids;
SQL
    # The audit rows, after the ones the server's first start wrote (on PostgreSQL after their range, in twelve ranges
    # of a month each, made here as the server's upkeep would have made them).
    if [ "$dialect" = sqlite ]; then
        echo "CREATE TEMP TABLE audit_base AS SELECT coalesce(max(seq), 0) + 1 AS base FROM audit_events;"
    else
        cat <<SQL
CREATE TEMP TABLE audit_base AS SELECT max(part_high) AS base FROM assent_audit_partition_bounds();
SELECT format('CREATE TABLE audit_events_from_%s PARTITION OF audit_events FOR VALUES FROM (%s) TO (%s)',
    base + k * ($audit / 12), base + k * ($audit / 12), base + (k + 1) * ($audit / 12) + CASE k WHEN 11 THEN 12 ELSE 0 END)
FROM audit_base, generate_series(0, 11) k \gexec
SQL
    fi
    cat <<SQL
$(series "$audit")
INSERT INTO audit_events (at, type, activation_id, user_id, actor, detail, application_id, seq, content_hash,
    prev_hash, chain_hash)
SELECT $now - 31536000000 + i * (31536000000 / $audit), CASE i % 2 WHEN 0 THEN 'operation.pending' ELSE 'operation.approved' END,
    NULL, 'history-' || (1 + (i / 2) % $activations), 'system', 'Operation ' || i || ' of the history.',
    (SELECT id FROM applications ORDER BY created_at LIMIT 1), base + i - 1, $(bytes 32), $(bytes 32), $(bytes 32)
FROM n, audit_base;
COMMIT;
SQL
    [ "$dialect" = sqlite ] && echo "ANALYZE; PRAGMA journal_mode = WAL;" \
        || echo "VACUUM ANALYZE activations; VACUUM ANALYZE operations; VACUUM ANALYZE audit_events;"
}

# The hot statements' plans on the large database: the list, an operation (by id alone, and by id and its time as the
# server asks for one) and an activation by id, the expiry sweep.
plans_sql() {
    local explain=$1
    cat <<SQL
$explain SELECT * FROM operations WHERE user_id = 'history-42' AND status = 'PENDING' ORDER BY created_at DESC LIMIT 100;
$explain SELECT * FROM operations WHERE id = (SELECT id FROM operations LIMIT 1);
$explain SELECT * FROM operations WHERE id = '0190cafe-0000-7000-a000-000000000000' AND created_at = $(date +%s)000;
$explain SELECT * FROM activations WHERE id = (SELECT id FROM activations LIMIT 1);
$explain SELECT * FROM activations WHERE user_id = 'history-42';
$explain SELECT id FROM operations WHERE status = 'PENDING' AND expires_at < 0 LIMIT 100;
$explain SELECT seq, chain_hash FROM audit_events WHERE seq IS NOT NULL ORDER BY seq DESC LIMIT 1;
$explain SELECT * FROM audit_events WHERE seq IS NULL ORDER BY id LIMIT 200;
$explain SELECT seq FROM audit_events WHERE seq IS NOT NULL AND at < $(date +%s)000 - 2592000000 ORDER BY at DESC, seq DESC LIMIT 1;
SQL
}

# prepare DATABASE SIDE: a server's first start on a new database (the schema and the operator key), then for the
# large side the history; sets the side's key and connection options.
declare -A keys options
prepare() {
    local database=$1 side=$2 label="$1-$2" started elapsed
    options[$label]=""
    if [ "$database" = postgres ]; then
        "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U assent "assent_$side"
        options[$label]="--database postgres://assent@127.0.0.1:$pg_port/assent_$side?sslmode=disable"
    fi
    # shellcheck disable=SC2086
    start_server "$label" ${options[$label]}
    keys[$label]=$key
    if [ "$side" = large ]; then
        curl -sf -o /dev/null -X POST -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
            -d '{"userId":"history-template"}' "http://127.0.0.1:$port/api/v1/activations"
    fi
    stop_server
    [ "$side" = large ] || return 0
    started=$(date +%s)
    if [ "$database" = sqlite ]; then
        history_sql sqlite | sqlite3 -bail "$work/$label/assent.sqlite" >/dev/null
        elapsed=$(($(date +%s) - started))
        echo "[$database] history: $activations activations, $operations operations, $audit audit rows in ${elapsed} s;" \
            "$(du -h "$work/$label/assent.sqlite" | cut -f1) on disk" | tee -a "$out/history.txt"
        plans_sql "EXPLAIN QUERY PLAN" | sqlite3 "$work/$label/assent.sqlite" | tee -a "$out/plans-$database.txt"
    else
        history_sql postgres | "$pg_bin/psql" -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pg_port" -U assent -d "assent_$side" >/dev/null
        elapsed=$(($(date +%s) - started))
        echo "[$database] history: $activations activations, $operations operations, $audit audit rows in ${elapsed} s;" \
            "$("$pg_bin/psql" -Atq -h 127.0.0.1 -p "$pg_port" -U assent -d "assent_$side" \
                -c "SELECT pg_size_pretty(pg_database_size(current_database()))") on disk" | tee -a "$out/history.txt"
        plans_sql "EXPLAIN (COSTS OFF)" | "$pg_bin/psql" -Atq -h 127.0.0.1 -p "$pg_port" -U assent -d "assent_$side" \
            | tee -a "$out/plans-$database.txt"
    fi
}

# wait_idle: until the server spends under a tenth of a core for a second (its start-up passes over the tables done).
wait_idle() {
    local before after
    for _ in $(seq 600); do
        before=$(cpu_seconds "$server_pid")
        sleep 1
        after=$(cpu_seconds "$server_pid")
        awk -v a="$before" -v b="$after" 'BEGIN { exit !(b - a < 0.1) }' && return 0
    done
    echo "The server was still busy after ten minutes." >&2
}

databases=" ${DATABASES:-sqlite postgres} "
command -v sqlite3 >/dev/null || [[ "$databases" != *" sqlite "* ]] || {
    echo "The SQLite side needs sqlite3 (apt-get install sqlite3)." >&2
    exit 1
}
for database in sqlite postgres; do
    [[ "$databases" == *" $database "* ]] || continue
    if [ "$database" = postgres ]; then
        start_postgres assent_setup
        pg_port=$(sed -n 's|.*@127.0.0.1:\([0-9]*\)/.*|\1|p' <<<"$pg_url")
    fi
    prepare "$database" empty
    prepare "$database" large
    for round in $(seq "$rounds"); do
        order="empty large"
        [ $((round % 2)) = 0 ] && order="large empty"
        for side in $order; do
            echo "== $database, round $round of $rounds: $side" >&2
            # shellcheck disable=SC2086
            start_server "$database-$side" ${options[$database-$side]}
            key=${keys[$database-$side]}
            wait_idle
            run_scenarios "$database" | tee -a "$out/$side-$round.txt" >&2
            stop_server
        done
    done
done
python3 Benchmarks/table.py "$out" "$rounds" empty large
