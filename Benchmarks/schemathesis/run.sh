#!/usr/bin/env bash
# Schemathesis against the OpenAPI document of a fresh server on SQLite (PyPI, not in CI): every phase (examples,
# coverage, fuzzing, stateful), every check.
#   Benchmarks/schemathesis/run.sh [MAX_EXAMPLES] [extra `st run` options…]     (default 40 examples per operation)
# The virtual environment is kept in $ST_VENV (default /tmp/assent-schemathesis) and reused. The operator-key
# failure limit is raised so the tester's deliberate wrong keys do not lock it out; hooks.py teaches it the
# `operation-data` format (valid IBAN check digits and real dates, which a pattern cannot state) and the two body
# rules the document states in words (a default language among the forms, JWKs that are real keys). SEED=N
# repeats a run (schemathesis prints the seed it used).
set -euo pipefail
cd "$(dirname "$0")/../.."
max_examples=${1:-40}
shift || true
venv=${ST_VENV:-/tmp/assent-schemathesis}
version=4.32.5

if [ ! -x "$venv/bin/st" ] || ! "$venv/bin/st" --version | grep -q "$version"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "schemathesis==$version"
fi
# ASSENT_BINARY (e.g. .build/debug/assent) tests that build instead of a release one.
[ -n "${ASSENT_BINARY:-}" ] || swift build -c release --product assent
. Benchmarks/common.sh
start_server schemathesis --rate-limit operator-key-failures=100000/1
SCHEMATHESIS_HOOKS="$PWD/Benchmarks/schemathesis/hooks.py" "$venv/bin/st" run \
    "http://127.0.0.1:$port/api/v1/openapi.json" -H "Authorization: Bearer $key" \
    --checks all --max-examples "$max_examples" ${SEED:+--seed "$SEED"} "$@"
