#!/usr/bin/env python3
"""Invariant matmul vs cuBLASLt: an older build's bench_cuda_matmul log ("old binary") and this
build's ("new") side by side, both run in the same call. The new log also carries, per case, the
previous automatic choice timed in the same process, interleaved with cuBLASLt and the new choice
("prev"). Each ratio is against the cuBLASLt timing of its own run. Prints one row per case, then
the geometric mean and the worst ratio of each, overall and by M range (the 60 cases), and apart
for the burst rows (M = 1000, the Qwen3-8B burst's decode steps; older logs may lack them).

  matmul_side_by_side.py OLD_LOG NEW_LOG
"""
import math
import re
import sys

NUM = r"\s+([\d.]+)"
ROW = re.compile(r"^(\d+)\s+(\d+)\s+(\d+)\s+\|" + NUM + NUM + r"\s+\|" + NUM + NUM + r"\s+(-?\d+)\s+\|" + NUM +
                 r"(?:\s+\|" + NUM + NUM + r"\s+(-?\d+)\s+\|" + NUM + ")?")
BURST_M = {1000}
RANGES = [("M <= 64", 1, 64), ("M 128-512", 128, 512), ("M >= 1024", 1024, 1 << 30), ("all 60", 1, 1 << 30),
          ("burst", 1000, 1000)]


def read(path):
    rows = {}
    with open(path) as f:
        for line in f:
            m = ROW.match(line)
            if m:
                rows[(int(m[1]), int(m[2]), int(m[3]))] = {
                    "cublas_tf": float(m[5]), "tf": float(m[7]), "cfg": int(m[8]), "ratio": float(m[9]),
                    "prev_ratio": float(m[13]) if m[13] else None}
    return rows


def summary(values):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"{math.exp(sum(map(math.log, values)) / len(values)):.3f} / {min(values):.3f}"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: matmul_side_by_side.py OLD_LOG NEW_LOG")
    old, new = read(sys.argv[1]), read(sys.argv[2])
    if not new:
        sys.exit(f"matmul_side_by_side: no result rows in {sys.argv[2]}")
    print(f"{'N':>7} {'K':>6} {'M':>5} | {'old bin':>7} {'prev':>6} {'new':>6} | {'cuBLAS TF':>9} {'new TF':>7} {'cfg':>4}")
    for key, n in new.items():  # the bench's order
        o = old.get(key)
        prev = n["prev_ratio"]
        print(f"{key[0]:>7} {key[1]:>6} {key[2]:>5} | {o['ratio'] if o else float('nan'):7.3f} "
              f"{prev if prev is not None else float('nan'):6.3f} {n['ratio']:6.3f} | {n['cublas_tf']:9.1f} "
              f"{n['tf']:7.1f} {n['cfg']:>4}")
    print("geometric mean / worst ratio to cuBLASLt")
    for name, lo, hi in RANGES:
        def within(k):
            return lo <= k[2] <= hi and (k[2] in BURST_M) == (name == "burst")
        o = [v["ratio"] for k, v in old.items() if within(k)]
        p = [v["prev_ratio"] for k, v in new.items() if within(k)]
        n = [v["ratio"] for k, v in new.items() if within(k)]
        print(f"{name:>10}: old binary {summary(o)} | prev {summary(p)} | new {summary(n)}")


if __name__ == "__main__":
    main()
