#!/usr/bin/env bash
# An A/B of two builds of the server in one run, on this machine (loopback only): the two alternate on the same
# scenarios — BASE HEAD, then HEAD BASE, … — so that a slow minute of the shared machine falls on both, and the
# table gives each side's median and spread over the rounds. The same binary varies ±20 % between runs here: one
# run is no evidence, a median over alternated rounds is.
#   Benchmarks/compare.sh BASE HEAD [load.sh options: --duration 15 --concurrency 64 --activations 1000]
# BASE and HEAD are commits (each built here in release, in .build/compare/<commit>, once) or paths of `assent`
# binaries. ROUNDS (default 3) alternations; SCENARIOS, DATABASES, GENERATOR and PIN as for Benchmarks/load.sh,
# which runs each side. Prints, per database and scenario, the server's CPU per request (µs, from /proc/PID/stat),
# its ratio to GET /health in the same run, throughput and p99: each side's median [min–max], and HEAD ÷ BASE of the
# medians. The raw lines of every run are kept in .build/compare/last/.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
base_ref=$1 head_ref=$2
shift 2
rounds=${ROUNDS:-3}

# binary REF: an executable path as it is, or the release build of the commit REF names (built once).
binary() {
    if [ -x "$1" ] && [ ! -d "$1" ]; then
        realpath "$1"
        return
    fi
    local commit dir
    commit=$(git rev-parse --verify --quiet "$1^{commit}") || {
        echo "$1 is neither an executable nor a commit." >&2
        exit 2
    }
    dir="$PWD/.build/compare/$commit"
    if [ ! -x "$dir/.build/release/assent" ]; then
        rm -rf "$dir/src"
        mkdir -p "$dir/src"
        git archive "$commit" | tar -x -C "$dir/src"
        echo "Building $commit (release)…" >&2
        swift build -c release --package-path "$dir/src" --scratch-path "$dir/.build" --product assent >&2
    fi
    echo "$dir/.build/release/assent"
}

base_binary=$(binary "$base_ref")
head_binary=$(binary "$head_ref")
out="$PWD/.build/compare/last"
rm -rf "$out"
mkdir -p "$out"
echo "BASE $base_ref: $base_binary" | tee "$out/sides.txt"
echo "HEAD $head_ref: $head_binary" | tee -a "$out/sides.txt"

for round in $(seq "$rounds"); do
    order="base head"
    [ $((round % 2)) = 0 ] && order="head base"
    for side in $order; do
        bin=$base_binary
        [ "$side" = head ] && bin=$head_binary
        echo "== round $round of $rounds: $side" >&2
        ASSENT_BINARY="$bin" Benchmarks/load.sh "$@" | tee "$out/$side-$round.txt" >&2
    done
done

python3 Benchmarks/table.py "$out" "$rounds" base head
