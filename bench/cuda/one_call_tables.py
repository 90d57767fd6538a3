#!/usr/bin/env python3
"""Issue 9's tables from one device call's logs, as bench/cuda/notes/calls.md gives them: prefill,
decode (graph replays) and mixed fractions in both modes, invariant time over default's, the
library reference beside them, the matmul's ratio to cuBLASLt, and each target read off the rows;
where the logs hold them, the rows of other invariant split sizes (prefill-split=N, decode-split=N)
beside the plan's: the contract's one free choice, which moves the decode-small and invariance
targets in opposite directions (bench/cuda/notes/decode.md).

  one_call_tables.py [--sdpa JSON] [--matmul LOG] [--gpu TXT] [--gpu-tests LOG] [--sanitizers MD]
                     [--json OUT] ATTENTION_LOG...

ATTENTION_LOG: bench_cuda_attention's output; with several logs (the bench run twice in a call)
each row's best time is kept, as attention_side_by_side.py keeps it. Each log's fractions are of
the copy bandwidth that its own process measured ("device copy bandwidth: X TB/s"), so a log that
ran beside another process on the device has slow rows and wrong fractions: one whose bandwidth is
below 0.9x the call's best is left out, and the tables say so (a left-over sanitizer shard had
halved one, H100, 2026-12-06). --sdpa: the JSON that
sdpa_reference.py --json wrote in the same call (cuDNN and FlashAttention 2 columns). --matmul:
bench_cuda_matmul's output (its "geometric-mean throughput ratio" lines). The checks of the same
call, for the closing note's one-call evidence: --gpu, the card (nvidia-smi's CSV line, name
first; the targets are the H200's, so the tables say when another card ran them); --gpu-tests
(once or more), gpu_tests' output (tests passed and failed, and each log that was cut short
before its summary line); --sanitizers, ci/gpu_sanitizers.sh's sanitizers.md (each tool's "N of M test cases
clean"). --json: the tables, checks and verdicts as JSON too, written whole or not at all.
Markdown goes to stdout.

The targets, as this tool reads them (bench/cuda/notes/README.md states the issue's words):
  decode-large   every decode-graph row at batch >= 16 and context >= 2048, both modes: >= 0.7
  decode-small   every decode-graph row at batch 1-4 and context >= 2048, both modes: >= 0.4
  prefill        every head_dim 128 prefill row (fresh or over cached keys) at chunks >= 1024,
                 both modes: >= 0.5 of the dense bf16 rate
  invariance     every prefill row at chunks >= 1024 (both head dims): invariant time / default
                 time <= 1.10
  mixed          every mixed row, both modes: >= 0.5 of its larger floor (prefill's fraction)
  matmul         geometric mean over the 60 cases >= 0.9 and the worst >= 0.75
A target without rows in the logs is "not measured", never met. The fractions are the bench's own
(its floors are the device's: the H100's copy floor is 3.0 TB/s, the H200's 4.3), so a verdict
holds for the card that ran the call. Exit status: 0 tables printed, 1 an input is unreadable,
malformed or has no rows, 2 bad arguments.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention_side_by_side import keep_best, parse_copy_bandwidth, parse_table, shared_device_logs  # noqa: E402
from whole_file import write_whole  # noqa: E402

TOOL = "one_call_tables"
MODES = ("invariant", "default")
PREFILL = re.compile(r"^prefill(-cached)?/(invariant|default)/(?:hd=(\d+)/)?chunk=(\d+)(?:/cached=(\d+))?$")
DECODE = re.compile(r"^decode-graph/(invariant|default)/batch=(\d+)/context=(\d+)$")
MIXED = re.compile(r"^mixed/(invariant|default)/chunk=(\d+)/decodes=(\d+)/context=(\d+)$")
# The rows that put invariant mode's fixed split size in place of the plan's (bench_attention.cpp:
# prefill-split=N, decode-split=N, calls), and the plan's own decode calls beside them.
PREFILL_SPLIT = re.compile(r"^prefill(-cached)?-split=(\d+)/invariant/(?:hd=(\d+)/)?chunk=(\d+)(?:/cached=(\d+))?$")
DECODE_SPLIT = re.compile(r"^decode-split=(\d+)/invariant/batch=(\d+)/context=(\d+)$")
DECODE_CALL = re.compile(r"^decode/(invariant|default)/batch=(\d+)/context=(\d+)$")
MATMUL = re.compile(r"^geometric-mean throughput ratio invariant/cuBLAS over (\d+) (shapes|burst rows): "
                    r"([0-9.]+); worst ([0-9.]+)$")
GTEST_OK = re.compile(r"^\[       OK \] (\S+)")
GTEST_FAILED = re.compile(r"^\[  FAILED  \] ([^ ,]+).*\(\d+ ms\)$")  # (not the summary's list)
GTEST_SUMMARY = re.compile(r"^\[  PASSED  \] (\d+) tests?\.")
SANITIZER_TOTAL = re.compile(r"^\s*(memcheck|racecheck): (\d+) of (\d+) test cases clean$")


def fail(message, code=1):
    print(f"{TOOL}: {message}", file=sys.stderr)
    sys.exit(code)


def read_lines(path, what):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except OSError as e:
        fail(f"{path}: cannot read the {what} ({e.strerror})")


def best_rows(paths):
    """({row: (us, frac)}: each row's best time over the logs kept, [lines naming the logs left out])."""
    logs = []
    for path in paths:
        lines = read_lines(path, "log")
        rows = parse_table(lines)
        if not rows:
            fail(f"{path}: no result rows (bench_cuda_attention's last table)")
        bandwidth = parse_copy_bandwidth(lines)
        if bandwidth is None:
            fail(f"{path}: no 'device copy bandwidth: X TB/s' line (a bench_cuda_attention log cut short?)")
        logs.append((path, bandwidth, rows))
    shared = shared_device_logs({path: bandwidth for path, bandwidth, _ in logs})
    best = {}
    for path, _, rows in logs:
        if path not in shared:
            keep_best(best, rows)
    return best, [f"{path}: {why}" for path, why in shared.items()]


def read_sdpa(path):
    """{row: frac} of sdpa_reference.py's JSON; a row the library refused (its "refused" reason in
    place of a figure: cuDNN refuses some masks) has none, and its cell is "-"."""
    text = "\n".join(read_lines(path, "library reference"))
    try:
        data = json.loads(text)
        rows = data["rows"]
        return {r["row"]: float(r["frac"]) for r in rows if "refused" not in r}
    except json.JSONDecodeError as e:
        fail(f"{path}: not JSON (line {e.lineno}: {e.msg})")
    except (KeyError, TypeError, ValueError) as e:
        fail(f"{path}: rows: each needs 'row' and a numeric 'frac' or a 'refused' reason ({type(e).__name__}: {e})")


def read_matmul(path):
    """{"shapes": (n, geomean, worst), "burst rows": ...} of bench_cuda_matmul's summary lines."""
    found = {}
    for line in read_lines(path, "matmul log"):
        m = MATMUL.match(line.strip())
        if m and m.group(2) not in found:  # (the first: the automatic choice, not "previous ...")
            found[m.group(2)] = (int(m.group(1)), float(m.group(3)), float(m.group(4)))
    if "shapes" not in found:
        fail(f"{path}: no 'geometric-mean throughput ratio invariant/cuBLAS over N shapes' line")
    return found


def read_card(path):
    """The card's name (nvidia-smi's CSV line, name first), flagged where it is not an H200."""
    lines = [line for line in read_lines(path, "card line") if line.strip()]
    if not lines:
        fail(f"{path}: empty (nvidia-smi --query-gpu=name,... --format=csv,noheader)")
    name = lines[0].split(",")[0].strip()
    return name + ("" if "H200" in name else " (not an H200: the targets are the H200's)")


def read_gpu_tests(paths):
    """Tests passed and failed over gpu_tests' logs (the suites may run one by one), and the logs
    cut short before gtest's summary line."""
    passed, failed, cut = 0, [], []
    for path in paths:
        results, summary = 0, False
        for line in read_lines(path, "gpu tests' log"):
            ok, bad = GTEST_OK.match(line), GTEST_FAILED.match(line)
            if ok or bad:
                results += 1
                if ok:
                    passed += 1
                else:
                    failed.append(bad.group(1))
            elif GTEST_SUMMARY.match(line):
                summary = True
        if not results:
            fail(f"{path}: no test results ('[       OK ]' or '[  FAILED  ]' lines)")
        if not summary:
            cut.append(path)
    text = f"{passed} passed, " + (f"{len(failed)} failed ({', '.join(failed)})" if failed else "none failed")
    return text + (f"; cut short before gtest's summary line: {', '.join(cut)}" if cut else "")


def read_sanitizers(path):
    """{tool: "N of M test cases clean"} of ci/gpu_sanitizers.sh's sanitizers.md."""
    found = {}
    for line in read_lines(path, "sanitizers' summary"):
        m = SANITIZER_TOTAL.match(line)
        if m:
            found[m.group(1)] = f"{m.group(2)} of {m.group(3)} test cases clean"
    if not found:
        fail(f"{path}: no 'TOOL: N of M test cases clean' line (ci/gpu_sanitizers.sh's sanitizers.md)")
    return found


def cell(values, fmt="{:.3f}"):
    return " / ".join("-" if v is None else fmt.format(v) for v in values)


def time_ratio(by_mode):
    """Invariant time over default's for one row's {mode: (us, frac)}; None without both modes."""
    return by_mode["invariant"][0] / by_mode["default"][0] if len(by_mode) == 2 else None


def prefill_tables(rows, sdpa):
    """Lines of the prefill table and the rows the targets read:
    {(head_dim, cached keys or None): {chunk: {mode: (us, frac)}}}."""
    kinds = {}  # (hd, cached or None) -> chunk -> mode -> (us, frac)
    for row, value in rows.items():
        m = PREFILL.match(row)
        if not m:
            continue
        cached = int(m.group(5)) if m.group(1) else None
        kinds.setdefault((int(m.group(3) or 128), cached), {}).setdefault(int(m.group(4)), {})[m.group(2)] = value
    lines = ["| rows | invariant | default | inv / def time | cuDNN | FlashAttention 2 |", "|---|---|---|---|---|---|"]
    for (hd, cached), chunks in sorted(kinds.items(), key=lambda k: (-k[0][0], k[0][1] or 0)):
        order = sorted(chunks)
        label = prefill_label(hd, cached) + "chunk " + " / ".join(map(str, order))
        frac = {mode: [chunks[c][mode][1] if mode in chunks[c] else None for c in order] for mode in MODES}
        ratio = [time_ratio(chunks[c]) for c in order]
        hd_part = f"hd={hd}/" if hd != 128 else ""
        lib = {name: [sdpa.get(f"sdpa/{name}/{hd_part}chunk={c}/cached={cached or 0}") for c in order]
               for name in ("cudnn", "flash")}
        lines.append(f"| {label} | {cell(frac['invariant'])} | {cell(frac['default'])} | {cell(ratio, '{:.2f}')} | "
                     f"{cell(lib['cudnn'])} | {cell(lib['flash'])} |")
    return lines, kinds


def decode_table(rows, sdpa):
    cells = {}  # (batch, context) -> mode -> frac
    for row, (_, frac) in rows.items():
        m = DECODE.match(row)
        if m:
            cells.setdefault((int(m.group(2)), int(m.group(3))), {})[m.group(1)] = frac
    batches = sorted({b for b, _ in cells})
    contexts = sorted({c for _, c in cells})
    lines = ["| batch | " + " | ".join(f"context {c}" for c in contexts) + " | cuDNN |",
             "|---" * (len(contexts) + 2) + "|"]  # (cuDNN: fraction (context))
    for b in batches:
        row = [cell([cells.get((b, c), {}).get(mode) for mode in MODES]) if (b, c) in cells else "-" for c in contexts]
        lib = [(c, sdpa.get(f"sdpa/cudnn/decode/batch={b}/context={c}")) for c in contexts]
        lib_text = ", ".join(f"{v:.3f} ({c})" for c, v in lib if v is not None) or "-"
        lines.append(f"| {b} | " + " | ".join(row) + f" | {lib_text} |")
    return lines, cells


def mixed_table(rows):
    cells = {}
    for row, (_, frac) in rows.items():
        m = MIXED.match(row)
        if m:
            cells.setdefault(tuple(int(g) for g in m.groups()[1:]), {})[m.group(1)] = frac
    lines = ["| chunk + decodes x context | invariant / default |", "|---|---|"]
    for (chunk, decodes, context), by in sorted(cells.items()):
        lines.append(f"| {chunk} + {decodes} x {context} | {cell([by.get(mode) for mode in MODES])} |")
    return lines, cells


def prefill_label(hd, cached):
    """A prefill kind's words in the tables: "head_dim 64 over 2048 cached, " and the like."""
    return (f"head_dim {hd} " if hd != 128 else "") + (f"over {cached} cached, " if cached else "")


def split_table(rows, prefill):
    """Lines of the split-size table (none where the logs have no split rows) and its values:
    {split label: {"prefill": {(head_dim, cached keys or None, chunk): invariant time / default time},
    "decode": {(batch, context): frac}}}. Each size's invariant prefill over the plan's default row of
    the same kind and chunk, its invariant decode calls beside the plan's and default mode's: what
    another kInvariantAttentionSplit (kernels/plan.h) would give and cost, the issue's decode-small
    and invariance targets pulling opposite ways."""
    sizes = {}  # split -> {"prefill": {(hd, cached, chunk): us}, "decode": {(batch, context): frac}}

    def entry(table, key):
        return table.setdefault(key, {"prefill": {}, "decode": {}})
    for row, (us, frac) in rows.items():
        m = PREFILL_SPLIT.match(row)
        if m:
            cached = int(m.group(5)) if m.group(1) else None
            entry(sizes, int(m.group(2)))["prefill"][(int(m.group(3) or 128), cached, int(m.group(4)))] = us
        m = DECODE_SPLIT.match(row)
        if m:
            entry(sizes, int(m.group(1)))["decode"][(int(m.group(2)), int(m.group(3)))] = frac
    if not sizes:
        return [], {}
    plan = {mode: {(hd, cached, c): by[mode][0] for (hd, cached), chunks in prefill.items()
                   for c, by in chunks.items() if mode in by} for mode in MODES}
    labels = {"the plan's": {"prefill": plan["invariant"], "decode": {}}}
    labels.update((str(n), sizes[n]) for n in sorted(sizes))
    entry(labels, "default mode")
    for row, (_, frac) in rows.items():
        m = DECODE_CALL.match(row)
        if m:
            label = "the plan's" if m.group(1) == "invariant" else "default mode"
            labels[label]["decode"][(int(m.group(2)), int(m.group(3)))] = frac
    keys = {k for v in sizes.values() for k in v["prefill"]}
    kinds = sorted({(hd, cached) for hd, cached, _ in keys}, key=lambda k: (-k[0], k[1] or 0))
    chunks = {kind: sorted(c for hd, cached, c in keys if (hd, cached) == kind) for kind in kinds}
    batches = sorted({b for v in sizes.values() for b, _ in v["decode"]})
    contexts = sorted({x for v in sizes.values() for _, x in v["decode"]})
    values = {}
    lines = ["| invariant split | " + " | ".join(f"prefill inv / def time, {prefill_label(*kind)}chunk " +
                                               " / ".join(map(str, chunks[kind])) for kind in kinds) +
             "".join(" | decode, batch " + " / ".join(map(str, batches)) + f" x {x}" for x in contexts) + " |",
             "|---" * (1 + len(kinds) + len(contexts)) + "|"]
    for label, v in labels.items():
        ratio = {kind: [v["prefill"][(*kind, c)] / plan["default"][(*kind, c)]
                        if (*kind, c) in v["prefill"] and (*kind, c) in plan["default"] else None
                        for c in chunks[kind]] for kind in kinds}
        decode = {key: f for key, f in v["decode"].items() if key[0] in batches and key[1] in contexts}
        values[label] = {"prefill": {(*kind, c): r for kind in kinds for c, r in zip(chunks[kind], ratio[kind])
                                     if r is not None}, "decode": decode}
        cells = ["-" if label == "default mode" else cell(ratio[kind], "{:.2f}") for kind in kinds]
        cells += [cell([decode.get((b, x)) for b in batches]) for x in contexts]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines, values


def split_json(values):
    """split_table's values with the bench's row words as keys ("hd=64/chunk=1024/cached=2048")."""
    def prefill_key(hd, cached, chunk):
        return ("" if hd == 128 else f"hd={hd}/") + f"chunk={chunk}" + (f"/cached={cached}" if cached else "")
    return {label: {"prefill_time_ratio": {prefill_key(*key): r for key, r in v["prefill"].items()},
                    "decode": {f"batch={b}/context={x}": f for (b, x), f in v["decode"].items()}}
            for label, v in values.items()}


def verdict(values, ok):
    """(range text, "yes" / "no" / "not measured") of a target's values."""
    if not values:
        return "-", "not measured"
    return f"{min(values):.3f}-{max(values):.3f}", "yes" if all(ok(v) for v in values) else "no"


def targets(prefill, decode, mixed, matmul):
    def decode_values(small):
        return [f for (b, c), by in decode.items() if c >= 2048 and ((1 <= b <= 4) if small else b >= 16)
                for f in by.values()]
    prefill_values = [v[1] for (hd, _), chunks in prefill.items() if hd == 128
                      for c, by in chunks.items() if c >= 1024 for v in by.values()]
    ratios = [time_ratio(by) for chunks in prefill.values() for c, by in chunks.items()
              if c >= 1024 and len(by) == 2]
    out = [
        ("decode-large", "decode >= 0.7 of the copy floor, batch >= 16, context >= 2048",
         verdict(decode_values(False), lambda v: v >= 0.7)),
        ("decode-small", "decode >= 0.4, batch 1-4, context >= 2048", verdict(decode_values(True), lambda v: v >= 0.4)),
        ("prefill", "prefill >= 0.5 of the dense bf16 rate at chunks >= 1024 (head_dim 128)",
         verdict(prefill_values, lambda v: v >= 0.5)),
        ("invariance", "invariant prefill time within 10% of default's (chunks >= 1024)",
         verdict(ratios, lambda v: v <= 1.10)),
        ("mixed", "mixed steps >= 0.5 of their larger floor", verdict([f for by in mixed.values() for f in by.values()],
                                                                      lambda v: v >= 0.5)),
    ]
    if matmul:
        n, geo, worst = matmul["shapes"]
        met = "yes" if geo >= 0.9 and worst >= 0.75 else "no"
        out.append(("matmul", f"matmul >= 0.9 geometric mean of cuBLASLt over the {n} cases, none below 0.75",
                    (f"{geo:.3f}, worst {worst:.3f}", met)))
    else:
        out.append(("matmul", "matmul >= 0.9 geometric mean of cuBLASLt, none below 0.75", ("-", "not measured")))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sdpa", metavar="JSON")
    ap.add_argument("--matmul", metavar="LOG")
    ap.add_argument("--gpu", metavar="TXT")
    ap.add_argument("--gpu-tests", metavar="LOG", action="append")
    ap.add_argument("--sanitizers", metavar="MD")
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("logs", nargs="+", metavar="ATTENTION_LOG")
    args = ap.parse_args()
    rows, left_out = best_rows(args.logs)
    for line in left_out:
        print(f"{TOOL}: left out {line}", file=sys.stderr)
    sdpa = read_sdpa(args.sdpa) if args.sdpa else {}
    matmul = read_matmul(args.matmul) if args.matmul else None
    checks = {}  # (the card, then the checks in the order the tables list them)
    if args.gpu:
        checks["device"] = read_card(args.gpu)
    if args.gpu_tests:
        checks["gpu tests"] = read_gpu_tests(args.gpu_tests)
    if args.sanitizers:
        checks.update(read_sanitizers(args.sanitizers))
    prefill_lines, prefill = prefill_tables(rows, sdpa)
    decode_lines, decode = decode_table(rows, sdpa)
    mixed_lines, mixed = mixed_table(rows)
    split_lines, splits = split_table(rows, prefill)
    verdicts = targets(prefill, decode, mixed, matmul)
    text = [f"Device: {checks['device']}", ""] if "device" in checks else []
    text += ["Prefill, fraction of the dense bf16 rate (invariant / default by chunk):", *prefill_lines, "",
            "Decode graph replays, fraction of the copy floor (invariant / default):", *decode_lines, "",
            "Mixed steps, fraction of the larger floor:", *mixed_lines, ""]
    if split_lines:
        text += ["Invariant split sizes (calls; decode as fractions of the copy floor):", *split_lines, ""]
    if left_out:
        text += ["Logs left out:", *[f"- {line}" for line in left_out], ""]
    if matmul:
        n, geo, worst = matmul["shapes"]
        text.append(f"Matmul: invariant / cuBLASLt geometric mean over the {n} cases {geo:.3f}, worst {worst:.3f}"
                    + (f"; the {matmul['burst rows'][0]} burst rows {matmul['burst rows'][1]:.3f} (worst "
                       f"{matmul['burst rows'][2]:.3f})" if "burst rows" in matmul else "") + ".")
        text.append("")
    text += ["| target | values | met |", "|---|---|---|"]
    text += [f"| {words} | {values} | {met} |" for _, words, (values, met) in verdicts]
    checked = [(key, value) for key, value in checks.items() if key != "device"]
    if checked:
        text += ["", "Checks in the same call:", *[f"- {key}: {value}" for key, value in checked]]
    print("\n".join(text))
    if args.json:
        data = {"rows": {r: {"us": us, "frac": f} for r, (us, f) in rows.items()}, "left_out": left_out,
                "checks": checks,
                "split_sizes": split_json(splits),
                "targets": {key: {"target": words, "values": values, "met": met}
                            for key, words, (values, met) in verdicts}}
        try:
            write_whole(args.json, json.dumps(data, indent=1) + "\n")
        except OSError as e:
            fail(f"{args.json}: cannot write ({e.strerror})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
