#!/usr/bin/env python3
"""Executed instructions by opcode and by class, from ncu's text output, for kernels side by side.

sass_mix.py counts the instructions a stretch of machine code holds; this reads what ncu counted a
kernel executing, per opcode, and sums the opcodes into four classes (floating point, tensor,
memory and barriers, integer / uniform / control) so that two kernels doing the same work can be
compared where their instructions go (bench/cuda/notes/prefill-time.md: cuDNN's prefill kernel
beside main's). Each LOG is ncu's output for one or more profiled launches (NAME=LOG#N takes the
N-th of several, counting from 1):

    ncu --kernel-name regex:KERNEL --launch-count 1 --metrics \\
        sass__inst_executed_per_opcode,gpu__time_duration.sum --print-metric-instances details BINARY ...
    python3 bench/cuda/ncu_opcode_mix.py --per 266240 cudnn=cudnn.txt default=ours.txt

--per N divides every count by N (e.g. the consumer warps' visits of a call: per warp and visit);
without it counts are in millions. --top K: the K largest opcodes after the classes (default 12).
--json FILE: every count, written whole or not at all. Exit status: 0, or 2 with one line on
stderr for a bad argument, a log without the chosen kernel's whole per-opcode list, or a log of
several kernels named without #N.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from whole_file import write_whole  # noqa: E402

TOOL = "ncu_opcode_mix"
METRIC = "sass__inst_executed_per_opcode"
# Opcodes by class (SASS mnemonics without modifiers, as ncu names them); anything else is integer,
# uniform-datapath or control work.
CLASSES = [
    ("floating point", "FADD FMUL FFMA FMNMX MUFU F2FP FSEL FSETP FCHK F2F FRND FSWZADD HADD2 HMUL2 HFMA2 HMNMX2"),
    ("tensor", "HGMMA WARPGROUP HMMA IMMA DMMA BMMA"),
    ("memory and barriers", "LD LDG LDS LDC LDL LDSM LDGSTS LDGDEPBAR DEPBAR ST STG STS STL STSM ATOM ATOMS ATOMG RED "
                            "SYNCS BAR MEMBAR FENCE ERRBAR CCTL UTMALDG UTMASTG UTMAPF UTMACCTL UTMACMDFLUSH UBLKCP "
                            "UBLKRED UBLKPF ARRIVES"),
]
OTHER = "integer, uniform, control"
KERNEL = re.compile(r"^\s+(\S.*?) \((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\), Context \d+")
NUMBER = r"([\d,]+(?:\.\d+)?)"


def fail(message):
    print(f"{TOOL}: {message}", file=sys.stderr)
    sys.exit(2)


def count(text):
    return int(text.replace(",", ""))


def sections(text):
    """The log cut at ncu's kernel lines, the parts that hold the metric: [(kernel match or None,
    the text up to the next kernel line, the metric's match in it)]."""
    lines = text.splitlines(keepends=True)
    out, kernel, body = [], None, []
    for line in lines:
        m = KERNEL.match(line)
        if m:
            out.append((kernel, "".join(body)))
            kernel, body = m, []
        else:
            body.append(line)
    out.append((kernel, "".join(body)))
    found = [(k, t, re.search(rf"^\s*{METRIC}\b", t, re.M)) for k, t in out]
    return [(k, t, at) for k, t, at in found if at]


def parse_log(spec):
    """Kernel `#N` of the log (the only one if not given): name, grid, block, us (or None), total,
    {opcode: count}."""
    path, pick = spec
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        fail(f"{path}: cannot read ({e.strerror})")
    found = sections(text)
    if not found:
        fail(f"{path}: no {METRIC} (profile with --metrics {METRIC} --print-metric-instances details)")
    if pick is None and len(found) > 1:
        names = ", ".join(f"{i}: {(k.group(1) if k else '?')[:40]}" for i, (k, _, _) in enumerate(found, 1))
        fail(f"{path}: {len(found)} profiled kernels ({names}); pick one as NAME={path}#N")
    if pick is not None and not 1 <= pick <= len(found):
        fail(f"{path}#{pick}: the log has {len(found)} profiled kernel{'s' if len(found) > 1 else ''}")
    kernel, body, at = found[(pick or 1) - 1]
    listed = re.match(rf"\s+(?:inst\s+)?{NUMBER}\s*\(([^)]*)\)", body[at.end():])
    if not listed:
        fail(f"{path}: {METRIC} has no per-opcode list (add --print-metric-instances details)")
    total = count(listed.group(1))
    ops = {}
    for m in re.finditer(rf"([A-Z][A-Z0-9_]*)\s*:\s*{NUMBER}", re.sub(r"\s+", " ", listed.group(2))):
        ops[m.group(1)] = ops.get(m.group(1), 0) + count(m.group(2))
    if sum(ops.values()) != total:
        fail(f"{path}: the opcode counts add up to {sum(ops.values()):,}, not the total {total:,} (a truncated list?)")
    us = re.search(rf"gpu__time_duration\.sum\s+(\w+)\s+{NUMBER}", body)
    scale = {"ns": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "nsecond": 1e-3}
    return {
        "kernel": kernel.group(1) if kernel else None,
        "grid": [int(kernel.group(i)) for i in (2, 3, 4)] if kernel else None,
        "block": [int(kernel.group(i)) for i in (5, 6, 7)] if kernel else None,
        "us": float(us.group(2).replace(",", "")) * scale.get(us.group(1), float("nan")) if us else None,
        "total": total,
        "opcodes": ops,
    }


def classes_of(ops):
    out, left = {}, dict(ops)
    for name, members in CLASSES:
        out[name] = sum(left.pop(op, 0) for op in members.split())
    out[OTHER] = sum(left.values())
    return out


def named_log(text):
    """NAME=LOG or NAME=LOG#N: (name, (path, N or None))."""
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"'{text}' is not NAME=LOG")
    m = re.fullmatch(r"(.+)#(\d+)", path)
    return name, (m.group(1), int(m.group(2))) if m else (path, None)


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, as every other error here
        fail(f"{message} (usage: see the head of bench/cuda/{TOOL}.py)")


def main():
    ap = Parser(prog=TOOL, description=__doc__.splitlines()[0])
    ap.add_argument("--per", type=float, default=None, help="divide every count by this (e.g. warps x visits)")
    ap.add_argument("--top", type=int, default=12, help="the largest opcodes listed after the classes")
    ap.add_argument("--json", default=None, help="every count, as JSON")
    ap.add_argument("logs", nargs="+", type=named_log, metavar="NAME=LOG")
    args = ap.parse_args()
    if args.per is not None and not args.per > 0:
        fail(f"--per {args.per:g}: must be above 0")
    if args.top < 0:
        fail(f"--top {args.top}: must be 0 or more")
    names = [n for n, _ in args.logs]
    if len(set(names)) != len(names):
        fail(f"'{next(n for n in names if names.count(n) > 1)}' is named twice")
    runs = {name: parse_log(spec) for name, spec in args.logs}
    for r in runs.values():
        r["classes"] = classes_of(r["opcodes"])
    if args.json:  # before the table: a failure prints nothing else
        try:
            write_whole(args.json, json.dumps({"per": args.per, "kernels": runs}, indent=1))
        except OSError as e:
            fail(f"--json {args.json}: cannot write ({e.strerror})")

    unit = f"per {args.per:g}" if args.per else "millions"
    fmt = (lambda v: f"{v / args.per:.1f}") if args.per else (lambda v: f"{v / 1e6:.2f}")
    width = max(12, *(len(n) for n in names))
    print(f"{'instructions, ' + unit:28s}" + "".join(f" {n:>{width}s}" for n in names))
    for label in [c for c, _ in CLASSES] + [OTHER]:
        print(f"{label:28s}" + "".join(f" {fmt(runs[n]['classes'][label]):>{width}s}" for n in names))
    print(f"{'total':28s}" + "".join(f" {fmt(runs[n]['total']):>{width}s}" for n in names))
    if any(runs[n]["us"] is not None for n in names):
        us = [runs[n]["us"] for n in names]
        print(f"{'kernel us':28s}" + "".join(f" {('-' if u is None else f'{u:.1f}'):>{width}s}" for u in us))
    ops = sorted({op for n in names for op in runs[n]["opcodes"]},
                 key=lambda op: (-max(runs[n]["opcodes"].get(op, 0) for n in names), op))
    for op in ops[:args.top]:
        print(f"  {op:26s}" + "".join(f" {fmt(runs[n]['opcodes'].get(op, 0)):>{width}s}" for n in names))
    for n in names:
        k = runs[n]
        shape = f" {tuple(k['grid'])}x{tuple(k['block'])}" if k["grid"] else ""
        print(f"{n}: {k['kernel'] or 'kernel name not found'}{shape}")


if __name__ == "__main__":
    main()
