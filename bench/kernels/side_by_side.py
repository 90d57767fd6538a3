#!/usr/bin/env python3
"""Old and new kernel_bench binaries side by side in one run: each binary is run ROUNDS times,
alternating (old, new, old, new, ...), one thread pinned to one core, and the best CPU time of each
benchmark is kept (CPU time: on a machine shared with other work it is the cost that does not
depend on the others; the best of several rounds discards rounds that lost their cache to them).
Prints per case and mode the throughput per core of both binaries and new/old.

usage: side_by_side.py OLD_KERNEL_BENCH NEW_KERNEL_BENCH [--filter REGEX] [--rounds N]
                       [--core C] [--isa portable|avx2|avx512] [--min-time S]
linear benchmarks are given in GMAC/s (multiply-adds), the others in calls/s.
--isa sets SAMEBITS_CPU_ISA for the NEW binary only (the old one has no such choice).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

LINEAR_SHAPES = {  # name: (N, K), as in bench_linear.cpp
    "tiny_qkv": (512, 256), "tiny_o": (256, 256), "tiny_gate_up": (1536, 256), "tiny_down": (256, 768),
    "tiny_lm_head": (258, 256), "qwen06_qkv": (4096, 1024), "qwen06_o": (1024, 2048),
    "qwen06_gate_up": (6144, 1024), "qwen06_down": (1024, 3072), "qwen06_lm_head": (151936, 1024),
}


def run(binary, args, isa):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if isa:
        env["SAMEBITS_CPU_ISA"] = isa
    with tempfile.NamedTemporaryFile(suffix=".json") as out_file:
        cmd = ["taskset", "-c", str(args.core), binary, f"--benchmark_filter={args.filter}",
               f"--benchmark_min_time={args.min_time}", f"--benchmark_out={out_file.name}",
               "--benchmark_out_format=json"]
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out = out_file.read().decode()
    return {b["name"].replace("/real_time", ""): b["cpu_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
            for b in json.loads(out)["benchmarks"] if b.get("run_type", "iteration") == "iteration"}


def rate(name, seconds):
    m = re.match(r"linear/(\w+)/(\w+)/M:(\d+)", name)
    if m and m.group(2) in LINEAR_SHAPES:
        n, k = LINEAR_SHAPES[m.group(2)]
        return int(m.group(3)) * n * k / seconds / 1e9, "GMAC/s"
    return 1.0 / seconds, "calls/s"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--filter", default="linear/")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--core", type=int, default=0)
    p.add_argument("--isa", default="")
    p.add_argument("--min-time", default="0.1")
    args = p.parse_args()
    best = {"old": {}, "new": {}}
    for _ in range(args.rounds):
        for which, binary in (("old", args.old), ("new", args.new)):
            for name, t in run(binary, args, args.isa if which == "new" else "").items():
                best[which][name] = min(t, best[which].get(name, float("inf")))
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    isa = args.isa or "best available"
    print(f"one thread on core {args.core}, best CPU time of {args.rounds} alternating rounds; new path: {isa}; "
          f"load average {' '.join(load)}")
    print(f"{'case':<46}{'old':>10}{'new':>10}{'new/old':>9}  unit")
    ratios = []
    for name, t_new in best["new"].items():
        t_old = best["old"].get(name)
        if t_old is None:
            continue
        r_old, unit = rate(name, t_old)
        r_new, _ = rate(name, t_new)
        ratios.append(r_new / r_old)
        print(f"{name:<46}{r_old:>10.2f}{r_new:>10.2f}{r_new / r_old:>9.2f}  {unit}")
    if ratios:
        print(f"new/old: min {min(ratios):.2f}, max {max(ratios):.2f} over {len(ratios)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
