#!/usr/bin/env python3
"""bench_cuda_attention of several builds side by side, as every attention figure in
bench/cuda/notes/ is taken: the builds run in turn (A B C, A B C, ... so that a machine's drift
between runs falls on all of them alike), each row's best time over a build's runs kept, and every
build's times compared with the first build's (the baseline), row by row and as a geometric mean
per group of rows.

  attention_side_by_side.py run [--rounds N] [--filter RE] [--limit S] OUT NAME=BIN_DIR...
      runs BIN_DIR/bench_cuda_attention --benchmark_filter=RE (LD_LIBRARY_PATH: BIN_DIR/lib first,
      where ../shared/tools/bundle-libs puts a build's libraries) N rounds (default 2), each run
      stopped after S seconds (default 120); logs OUT/NAME.rK.log, then the summary to stdout,
      OUT/summary.txt and OUT/summary.json.
  attention_side_by_side.py summary [--json FILE] NAME=LOG...
      the summary of logs already taken (a NAME given several times: its runs).

A row's group is its name without the key=value parts after the first (hd= kept): prefill/
invariant/chunk=1024 is in prefill/invariant, prefill-cached/default/hd=64/chunk=256/cached=2048
in prefill-cached/default/hd=64. A run whose bench measured a copy bandwidth below 0.9x the best
run's of the same call was measured while something else ran on the device: its rows are left out
and its line in the summary says why (its fractions, taken against its own floor, would be wrong).
Exit status: 0 every run ended well and every build has rows,
1 a run failed (its status is in the summary, its rows missing or from its other runs) or a build
has no rows, 2 bad arguments.
"""
import argparse
import json
import math
import os
import re
import signal
import subprocess
import sys

TOOL = "attention_side_by_side"
BENCH = "bench_cuda_attention"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
SHARED_DEVICE = 0.9  # a log whose copy bandwidth is below this x the best log's of its call is left out


def fail(message, code=2):
    print(f"{TOOL}: {message}", file=sys.stderr)
    sys.exit(code)


def parse_table(lines):
    """The rows of the table the bench prints last (bench/cuda/bench_attention.cpp: a header line
    "attention us ...", then one row a line: name, us, GB/s or TFLOP/s, fraction of the floor, ...):
    {name: (us, frac)} in the log's order. one_call_tables.py reads logs through this too."""
    rows = {}
    in_table = False
    for line in lines:
        words = line.split()
        if words[:2] == ["attention", "us"]:
            in_table, rows = True, {}  # (a later table replaces an earlier one)
            continue
        if not in_table or len(words) < 4:
            continue
        try:
            rows[words[0]] = (float(words[1]), float(words[3]))
        except ValueError:
            continue
    return rows


def parse_copy_bandwidth(lines):
    """The copy bandwidth (TB/s) that the bench's process measured, the floor of its decode rows'
    fractions (bench_attention.cpp prints it after its table); None without the line."""
    for line in lines:
        words = line.split()
        if words[:3] == ["device", "copy", "bandwidth:"] and len(words) == 5 and words[4] == "TB/s":
            try:
                return float(words[3])
            except ValueError:
                return None
    return None


def shared_device_logs(bandwidths):
    """{log: why} for each log measured while the device was shared: its copy bandwidth below
    SHARED_DEVICE x the best log's of the same call (a left-over sanitizer shard once halved it, and
    the decode rows of that run read "1.870" of a floor it had measured too low). bandwidths:
    {log: TB/s, or None for a log without the line, which is not judged here}. one_call_tables.py
    leaves logs out through this too."""
    known = {log: b for log, b in bandwidths.items() if b is not None}
    if not known:
        return {}
    top_log = max(known, key=known.get)
    top = known[top_log]
    return {log: f"device copy bandwidth {b:.2f} TB/s, {b / top:.2f}x {top_log}'s {top:.2f} "
                 "(the device was shared while it ran)"
            for log, b in known.items() if b < SHARED_DEVICE * top}


def keep_best(best, table):
    """Each row of `table` into `best` ({name: (us, frac)}) where its time is lower (or new)."""
    for row, (us, frac) in table.items():
        if row not in best or us < best[row][0]:
            best[row] = (us, frac)


def read_log(path):
    """(rows, copy bandwidth or None) of one bench log."""
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
        return parse_table(lines), parse_copy_bandwidth(lines)
    except OSError as e:
        fail(f"{path}: cannot read the log ({e.strerror})")


def group_of(row):
    parts = row.split("/")
    return "/".join([parts[0]] + [p for p in parts[1:] if "=" not in p or p.startswith("hd=")])


def geomean(values):
    return math.exp(sum(map(math.log, values)) / len(values))


def summarise(builds):
    """builds: [(name, [{"log": path, "rc": int or None}])] in order, the first the baseline.
    Returns the summary as a dict (what summary.json holds) and as text."""
    tables = {}  # log -> its rows
    bandwidths = {}  # log -> its copy bandwidth
    for _, runs in builds:
        for run in runs:
            tables[run["log"]], bandwidths[run["log"]] = read_log(run["log"])
    shared = shared_device_logs(bandwidths)
    best = {}  # name -> row -> (us, frac)
    order = []  # rows in the order the logs first give them
    for name, runs in builds:
        rows = best.setdefault(name, {})
        for run in runs:
            table = tables[run["log"]]
            run["rows"] = len(table)
            if run["log"] in shared:
                run["left_out"] = shared[run["log"]]
                continue
            keep_best(rows, table)
            order += [row for row in table if row not in order]
    names = [n for n, _ in builds]
    base = names[0]
    groups = {}
    for row in order:
        g = groups.setdefault(group_of(row), {n: [] for n in names[1:]})
        for n in names[1:]:
            if row in best[base] and row in best[n] and best[base][row][0] > 0:
                g[n].append(best[n][row][0] / best[base][row][0])
    summary = {
        "baseline": base,
        "builds": [{"name": n, "runs": runs} for n, runs in builds],
        "rows": {row: {n: {"us": best[n][row][0], "frac": best[n][row][1]} for n in names if row in best[n]}
                 for row in order},
        "groups": {g: {n: {"time_ratio": geomean(v), "rows": len(v)} for n, v in by.items() if v}
                   for g, by in groups.items()},
    }
    lines = ["builds (each row's best time over a build's runs is kept):"]
    for n, runs in builds:
        status = ", ".join(f"{os.path.basename(r['log'])}: {describe(r['rc'])}, {r['rows']} rows"
                           + (f" left out: {r['left_out']}" if "left_out" in r else "") for r in runs)
        lines.append(f"  {n}: {status}")
    if len(names) > 1:
        lines.append(f"time / {base}'s time, geometric mean per group (rows):")
        lines.append(f"  {'group':40s}" + "".join(f" {n:>14s}" for n in names[1:]))
        for g, by in summary["groups"].items():
            cells = [f"{by[n]['time_ratio']:.3f} ({by[n]['rows']})" if n in by else "-" for n in names[1:]]
            lines.append(f"  {g:40s}" + "".join(f" {c:>14s}" for c in cells))
    lines.append("rows: us, fraction of the floor" + (f", time / {base}'s" if len(names) > 1 else "") + ":")
    lines.append(f"  {'row':56s}" + "".join(f" {n:>24s}" for n in names))
    for row in order:
        cells = []
        for n in names:
            if row not in best[n]:
                cells.append(f"{'-':>24s}")
                continue
            us, frac = best[n][row]
            ratio = ""
            if n != base and row in best[base] and best[base][row][0] > 0:
                ratio = f" ({us / best[base][row][0]:.3f})"
            cells.append(f"{us:10.1f} {frac:6.3f}{ratio:>8s}")
        lines.append(f"  {row:56s}" + "".join(f" {c}" for c in cells))
    return summary, "\n".join(lines) + "\n"


def write(path, text):
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        fail(f"{path}: cannot write ({e.strerror})")


def describe(rc):
    if rc is None:
        return "log given"
    if rc == 124:
        return "rc 124 (time limit)"
    return f"rc {rc}"


def name_value(arg, what):
    name, sep, value = arg.partition("=")
    if not sep or not value or not NAME.match(name):
        fail(f"{arg}: expected NAME={what} (NAME of letters, digits, '_', '.', '-')")
    return name, value


def run(args):
    if args.rounds < 1:
        fail(f"--rounds {args.rounds}: at least 1")
    if args.limit <= 0:
        fail(f"--limit {args.limit}: a number of seconds above 0")
    try:
        re.compile(args.filter)
    except re.error as e:
        fail(f"--filter {args.filter}: not a regular expression ({e})")
    builds = []
    for arg in args.builds:
        name, folder = name_value(arg, "BIN_DIR")
        if name in (n for n, _ in builds):
            fail(f"{arg}: the name {name} is given twice")
        bench = os.path.join(folder, BENCH)
        if not (os.path.isfile(bench) and os.access(bench, os.X_OK)):
            fail(f"{bench}: no executable {BENCH} (build {name})")
        builds.append((name, os.path.abspath(folder)))
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        fail(f"{args.out}: cannot make the output folder ({e.strerror})")
    runs = {n: [] for n, _ in builds}
    for k in range(1, args.rounds + 1):
        for name, folder in builds:
            log = os.path.join(args.out, f"{name}.r{k}.log")
            env = dict(os.environ)
            env["LD_LIBRARY_PATH"] = ":".join(p for p in (os.path.join(folder, "lib"), env.get("LD_LIBRARY_PATH")) if p)
            with open(log, "w") as out:
                # (a session of its own: a run past the limit is stopped with whatever it started)
                bench = subprocess.Popen([os.path.join(folder, BENCH), f"--benchmark_filter={args.filter}"], env=env,
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
                try:
                    rc = bench.wait(timeout=args.limit)
                except subprocess.TimeoutExpired:
                    os.killpg(bench.pid, signal.SIGKILL)
                    bench.wait()
                    rc = 124
            runs[name].append({"log": log, "rc": rc})
            print(f"{TOOL}: {name} round {k}: {describe(rc)}", file=sys.stderr)
    summary, text = summarise([(n, runs[n]) for n, _ in builds])
    write(os.path.join(args.out, "summary.json"), json.dumps(summary, indent=1))
    write(os.path.join(args.out, "summary.txt"), text)
    sys.stdout.write(text)
    return summary


def given(args):
    builds = []
    for arg in args.logs:
        name, log = name_value(arg, "LOG")
        for n, runs in builds:
            if n == name:
                runs.append({"log": log, "rc": None})
                break
        else:
            builds.append((name, [{"log": log, "rc": None}]))
    summary, text = summarise(builds)
    if args.json:
        write(args.json, json.dumps(summary, indent=1))
    sys.stdout.write(text)
    return summary


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, as every other error here
        fail(f"{message} (usage: see the head of bench/cuda/{TOOL}.py)")


def main():
    parser = Parser(prog=TOOL, description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    r = sub.add_parser("run")
    r.add_argument("--rounds", type=int, default=2)
    r.add_argument("--filter", default=".")
    r.add_argument("--limit", type=float, default=120)
    r.add_argument("out")
    r.add_argument("builds", nargs="+")
    s = sub.add_parser("summary")
    s.add_argument("--json")
    s.add_argument("logs", nargs="+")
    args = parser.parse_args()
    summary = run(args) if args.command == "run" else given(args)
    bad_run = any(r["rc"] not in (None, 0) for b in summary["builds"] for r in b["runs"])
    for r in (r for b in summary["builds"] for r in b["runs"] if "left_out" in r):
        print(f"{TOOL}: left out {r['log']}: {r['left_out']}", file=sys.stderr)
    empty = [b["name"] for b in summary["builds"] if not any(b["name"] in v for v in summary["rows"].values())]
    for name in empty:
        print(f"{TOOL}: build {name}: no result rows in its logs", file=sys.stderr)
    return 1 if bad_run or empty else 0


if __name__ == "__main__":
    sys.exit(main())
