#!/usr/bin/env bash
# Memory of `assent serve` on SQLite (not in CI), read from /proc/PID/status (VmRSS).
#   Benchmarks/memory.sh scale [ACTIVATIONS] [PENDING]
#                                              RSS after ACTIVATIONS (default 100,000) devices were activated
#                                              through the API, each with a MAC token, PENDING (default 10,000) of
#                                              them with a pending operation, and 30 s of operation-list load over
#                                              all of them
#   Benchmarks/memory.sh soak [MINUTES]        RSS every 30 s while two load generators run for MINUTES (default
#                                              30): operation lists and signature validations, 1,000 devices each
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-scale}

. Benchmarks/common.sh
build_load

rss_mb() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$server_pid/status"; }

start_server sqlite
echo "RSS after start: $(rss_mb) MB"
case "$mode" in
scale)
    activations=${2:-100000}
    pending=${3:-10000}
    started=$(date +%s)
    "$LOAD" --url "http://127.0.0.1:$port" --api-key "$key" --label sqlite --scenario list \
        --activations "$activations" --pending-operations "$pending" --concurrency 64 --duration 30
    echo "Set-up and load took $(( $(date +%s) - started )) s."
    echo "RSS after the load: $(rss_mb) MB (${activations} activations, ${pending} pending operations)"
    sleep 10
    echo "RSS 10 s later, idle: $(rss_mb) MB"
    echo "Database: $(du -sh "$work/sqlite" | cut -f1)"
    ;;
soak)
    minutes=${2:-30}
    seconds=$(( minutes * 60 ))
    generators=()
    for scenario in list validate; do
        "$LOAD" --url "http://127.0.0.1:$port" --api-key "$key" --label "soak" --scenario "$scenario" \
            --activations 1000 --concurrency 32 --duration "$seconds" >"$work/$scenario.log" 2>&1 &
        generators+=($!)
    done
    # The generators first activate their devices; sample from the moment both load.
    until [ "$(grep -l "Load started" "$work"/list.log "$work"/validate.log 2>/dev/null | wc -l)" = 2 ]; do sleep 1; done
    samples=()
    for (( t = 0; t <= seconds; t += 30 )); do
        samples+=("$(rss_mb)")
        echo "t=${t}s RSS $(rss_mb) MB"
        [ "$t" -lt "$seconds" ] && sleep 30
    done
    wait "${generators[@]}"
    cat "$work/list.log" "$work/validate.log" | grep '^\[soak\]'
    python3 - "${samples[@]}" <<'EOF'
import statistics, sys
values = [float(v) for v in sys.argv[1:]]
tail = values[len(values) // 6:]  # after the first sixth (warm-up: caches fill)
half = len(tail) // 2
print(f"RSS min {min(values):.1f} MB, max {max(values):.1f} MB; after warm-up: median of the first half "
      f"{statistics.median(tail[:half]):.1f} MB, of the second half {statistics.median(tail[half:]):.1f} MB, "
      f"last {values[-1]:.1f} MB")
EOF
    ;;
*)
    echo "usage: Benchmarks/memory.sh scale [ACTIVATIONS] | soak [MINUTES]" >&2
    exit 2
    ;;
esac
stop_server
