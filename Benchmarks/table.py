# The table of an alternated comparison (compare.sh, large.sh): OUT holds SIDE-N.txt, the lines load.sh prints, for
# each of the two sides and rounds 1…ROUNDS. Prints per database and scenario each side's median [min–max] of the
# server's CPU per request, its ratio to health's, requests per second and p99, and the second ÷ the first medians.
#   python3 Benchmarks/table.py OUT ROUNDS [FIRST SECOND]   (sides: base head by default)
import re, statistics, sys
from pathlib import Path

out, rounds = Path(sys.argv[1]), int(sys.argv[2])
sides = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else ("base", "head")
first, second = (side.upper() for side in sides)
cpu = re.compile(r"^\[(\w+)\] (\w+): server CPU ([0-9.]+) µs/request(?:, ([0-9.]+)× health)?")
rate = re.compile(r"^\[(\w+)\] (\w+)(?: \(wrk\))?: .*?([0-9.]+) req/s.*?p99 ([0-9.]+) ?(us|ms|s)\b")
statements = re.compile(r"^\[(\w+)\] (\w+): ([0-9.]+) statements/request")
scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}
values = {}  # (database, scenario, metric, side) -> [values]
for side in sides:
    for n in range(1, rounds + 1):
        for line in (out / f"{side}-{n}.txt").read_text().splitlines():
            if m := cpu.match(line):
                values.setdefault((m[1], m[2], "cpu", side), []).append(float(m[3]))
                if m[4]:
                    values.setdefault((m[1], m[2], "health×", side), []).append(float(m[4]))
            elif m := statements.match(line):
                values.setdefault((m[1], m[2], "statements", side), []).append(float(m[3]))
            elif m := rate.match(line):
                values.setdefault((m[1], m[2], "req/s", side), []).append(float(m[3]))
                values.setdefault((m[1], m[2], "p99 ms", side), []).append(float(m[4]) * scale[m[5]])

def cell(xs):
    if not xs:
        return "—"
    fmt = "{:,.0f}" if max(xs) >= 100 else "{:.2f}"
    return f"{fmt.format(statistics.median(xs))} [{fmt.format(min(xs))}–{fmt.format(max(xs))}]"

rows = sorted({(d, s) for (d, s, _, _) in values}, key=lambda k: (k[0], k[1] != "health", k[1]))
print(f"\n{rounds} rounds, alternated; median [min–max] of each side, {second} ÷ {first} of the medians\n")
print(f"| database | scenario | measure | {first} | {second} | {second} ÷ {first} |")
print("|---|---|---|---|---|---|")
for database, scenario in rows:
    for metric in ("cpu", "health×", "req/s", "p99 ms", "statements"):
        b, h = values.get((database, scenario, metric, sides[0]), []), values.get((database, scenario, metric, sides[1]), [])
        if not b and not h:
            continue
        ratio = f"{statistics.median(h) / statistics.median(b):.2f}" if b and h and statistics.median(b) else "—"
        name = {"cpu": "server CPU µs/request", "health×": "CPU ÷ health's", "statements": "statements/request"}.get(
            metric, metric)
        print(f"| {database} | {scenario} | {name} | {cell(b)} | {cell(h)} | {ratio} |")
