#!/usr/bin/env bash
# What authorize writes (not in CI): runs authorize load on SQLite (c=64, 1,000 devices, 20 s) and, mid-run,
#  1. counts the server's page writes and syncs for 5 s with the kernel's syscall tracepoints (`perf record`; unlike
#     strace it hardly slows the server): pages into the log, into the database file (checkpoints), into temporary
#     files (SQLite's statement journal), and the `fdatasync`s of the log and the database file;
#  2. copies the write-ahead log five times and reads its frame headers: pages per commit, and which table or index
#     each page belongs to (SQLite's `dbstat`, on the database after the run).
#   Benchmarks/pages.sh            (needs perf, sqlite3 and python3; run as root or with perf_event_paranoid <= 1)
set -euo pipefail
cd "$(dirname "$0")/.."

. Benchmarks/common.sh
build_load

start_server sqlite
"$LOAD" --url "http://127.0.0.1:$port" --api-key "$key" --label sqlite --scenario authorize --activations 1000 \
    --concurrency 64 --duration 20 --operations-per-activation 60 >"$work/load.out" 2>&1 &
load_pid=$!
for _ in $(seq 600); do grep -q "Load started" "$work/load.out" 2>/dev/null && break; sleep 0.1; done
sleep 6
for fd in /proc/"$server_pid"/fd/*; do echo "${fd##*/} $(readlink "$fd")"; done >"$work/fds"
for i in 1 2 3 4 5; do cp "$work/sqlite/assent.sqlite-wal" "$work/wal$i"; sleep 0.05; done
perf record -q -e syscalls:sys_enter_pwrite64 -e syscalls:sys_enter_fdatasync -p "$server_pid" \
    -o "$work/perf.data" -- sleep 5 >/dev/null 2>&1
wait "$load_pid" || true
tail -1 "$work/load.out"
stop_server
sqlite3 "$work/sqlite/assent.sqlite" "SELECT pageno, name FROM dbstat" >"$work/pages"
perf script -i "$work/perf.data" 2>/dev/null >"$work/trace"

python3 - "$work" <<'PY'
import collections, re, struct, sys
work = sys.argv[1]
files = {}
for line in open(f"{work}/fds"):
    fd, _, target = line.strip().partition(" ")
    name = target.split("/")[-1]
    files[fd] = "temporary file" if "etilqs" in name else name
writes, syncs = collections.Counter(), collections.Counter()
for line in open(f"{work}/trace"):
    m = re.search(r"sys_enter_(pwrite64|fdatasync): fd: (0x[0-9a-f]+)(?:, buf: \S+, count: (0x[0-9a-f]+))?", line)
    if not m:
        continue
    name = files.get(str(int(m.group(2), 16)), "fd " + str(int(m.group(2), 16)))
    if m.group(1) == "fdatasync":
        syncs[name] += 1
    elif int(m.group(3), 16) == 4096:
        writes[name] += 1
print("In 5 s mid-run:")
for name, count in writes.most_common():
    print(f"  pages written into {name}: {count:,}")
for name, count in syncs.most_common():
    print(f"  fdatasync of {name}: {count:,}")

owner = {}
for line in open(f"{work}/pages"):
    page, _, name = line.strip().partition("|")
    owner[int(page)] = name
best = []
for i in range(1, 6):
    data = open(f"{work}/wal{i}", "rb").read()
    salts = struct.unpack(">2I", data[16:24])
    commits, current, offset, size = [], [], 32, struct.unpack(">I", data[8:12])[0]
    while offset + 24 + size <= len(data):
        page, end, salt1, salt2 = struct.unpack(">4I", data[offset:offset + 16])
        if (salt1, salt2) != salts:
            break
        current.append(page)
        if end:
            commits.append(current)
            current = []
        offset += 24 + size
    if len(commits) > len(best):
        best = commits
if not best:
    sys.exit("No whole commit in the copies of the log.")
per = collections.Counter(owner.get(page, "(new page)") for commit in best for page in commit)
frames = sum(len(commit) for commit in best)
approvals = per["operations"] / len(best)
print(f"Log frames: {len(best)} commits, {frames / len(best):.1f} pages per commit, "
      f"~{approvals:.1f} approvals per commit (operation pages), {frames / len(best) / approvals:.1f} pages per approval")
for name, count in per.most_common():
    print(f"  {name:34s} {count / len(best):5.1f} per commit")
PY
