#!/usr/bin/env python3
"""Prints the side by side table of bench/qwen3_8b_side_by_side.sh from its JSON files:
samebits results (samebits run --json, both modes; optionally a second, profiled run for the
per-op breakdown) and bench/hf_generate.py's figures. Ratios are of run times (same workload)."""
import json
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"side_by_side_table.py: {path}: {e}", file=sys.stderr)
        return None


def main() -> int:
    if len(sys.argv) not in (3, 4):
        print("usage: side_by_side_table.py SAMEBITS.json HF.json [PROFILED_SAMEBITS.json]", file=sys.stderr)
        return 2
    sb, hf = load(sys.argv[1]), load(sys.argv[2])
    prof = load(sys.argv[3]) if len(sys.argv) == 4 else None
    modes = {m["mode"]: m for m in (sb or {}).get("modes", [])}
    hf_s = hf["run_seconds"] if hf else None
    print(f"\n{'engine':<22}{'run s':>8}{'tok/s':>9}{'/ HF time':>11}{'set-up s (weights + KV)':>26}"
          f"{'host RSS GB (+model)':>22}{'waits/step':>11}{'host ms/step':>13}{'pre/post ms/step':>20}  check")
    for name in ("invariant", "default"):
        m = modes.get(name)
        if not m:
            continue
        t = m.get("timing", {})
        steps = max(m["engine_steps"], 1)
        ratio = f"{m['wall_seconds'] / hf_s:.2f}" if hf_s else "-"
        rss = (t.get("host_peak_rss_bytes", 0) - t.get("host_rss_baseline_bytes", 0)) / 1e9
        check = "1 completion" if m["unique_completions"] == 1 and m["unique_logit_streams"] == 1 else \
            f"{m['unique_completions']} completions"
        print(f"{'samebits ' + name:<22}{m['wall_seconds']:>8.2f}{m['tokens_per_second']:>9.0f}{ratio:>11}"
              f"{t.get('setup_weights_seconds', 0) + t.get('setup_kv_cache_seconds', 0):>8.2f} "
              f"({t.get('setup_weights_seconds', 0):.2f} + {t.get('setup_kv_cache_seconds', 0):.2f})".ljust(18) +
              f"{rss:>12.2f}{t.get('host_waits', 0) / steps:>21.1f}"
              f"{1e3 * (t.get('step_seconds', 0) - t.get('host_wait_seconds', 0)) / steps:>13.2f}"
              f"{1e3 * t.get('host_idle_device_seconds', 0) / steps:>20.2f}  {check}"
              f" ({steps} steps, {t.get('graph_replays', 0)} from graphs, {t.get('overlapped_steps', 0)} overlapped,"
              f" {t.get('scheduled_ahead_steps', 0)} scheduled ahead; host ms/step schedule"
              f" {1e3 * t.get('host_schedule_seconds', 0) / steps:.2f}, issue {1e3 * t.get('host_issue_seconds', 0) / steps:.2f},"
              f" book {1e3 * t.get('host_book_seconds', 0) / steps:.2f})")
    if hf:
        print(f"{'HF eager generate':<22}{hf_s:>8.2f}{hf['tokens_per_second']:>9.0f}{'1.00':>11}{hf['setup_seconds']:>8.2f}"
              f"   (transformers {hf['transformers']}, torch {hf['torch']})")
    if "invariant" in modes and "default" in modes:
        print(f"invariant/default throughput: "
              f"{modes['invariant']['tokens_per_second'] / modes['default']['tokens_per_second']:.3f}")
    if prof:
        pm = {m["mode"]: m for m in prof.get("modes", [])}
        names = [n for n in ("invariant", "default") if n in pm]
        ops = {}
        for n in names:
            for op in pm[n].get("timing", {}).get("ops", []):
                ops.setdefault(op["kind"], {})[n] = op
        order = sorted(ops, key=lambda k: -max(o["seconds"] for o in ops[k].values()))
        print(f"\nper op kind (profiled run): GPU s | host s issuing it (calls)"
              f"{''.join(f'{n:>30}' for n in names)}")
        for k in order:
            cells = "".join(f"{ops[k][n]['seconds']:>11.3f} | {ops[k][n].get('host_seconds', 0):>6.3f} ({ops[k][n]['calls']:>6})"
                            if n in ops[k] else f"{'-':>30}" for n in names)
            print(f"  {k:<44}{cells}")
        print(f"  {'run s (profiled)':<44}" + "".join(f"{pm[n]['wall_seconds']:>30.2f}" for n in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
