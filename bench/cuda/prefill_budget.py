#!/usr/bin/env python3
"""What a prefill call of the bench's shapes asks of the wgmma prefill kernel's visit, by arithmetic
(no GPU): the call's work (visible query-key pairs in FLOP), its items and visits as the kernel cuts
them (kernels/cuda/attention_worklist.cuh: tiles of 128 rows, query-major rows of a GQA group, a
sequence's longest tile first; a visit is one 64-key sub-block of both consumer warpgroups), the
busiest SM's visits under list scheduling (each item to the SM that frees first: the hardware's
block dispatch with one block per SM), and the time a visit may take for the call to reach a
fraction of the dense bf16 tensor-core rate.

  prefill_budget.py [--chunk N] [--cached N] [--target F] [--fixed-us T] [--head-dim D]
                    [--q-heads H] [--kv-heads H] [--sms N] [--peak TFLOPS]

Defaults: the bench's `prefill/MODE/chunk=1024` (Qwen3-8B heads, head_dim 128) on an H200 (132
SMs, 989 TFLOP/s), target 0.5, 5 us of fixed time (launch, set-up, tail). Visits are counted by key
range only: invariant mode's segment ends add none (a segment is whole sub-blocks); default mode's
split between cached and new keys adds one where --cached is not a multiple of 64.
"""
import argparse
import heapq
import sys

TILE_ROWS, SUB_BLOCK, WARPGROUP_ROWS = 128, 64, 64


def items(chunk, cached, group):
    """Visits of each work item of one kv head, longest first (the kernel's order)."""
    rows = chunk * group
    tiles = (rows + TILE_ROWS - 1) // TILE_ROWS
    out = []
    for tile in reversed(range(tiles)):
        last_row = min(rows, (tile + 1) * TILE_ROWS) - 1
        keys = cached + last_row // group + 1  # the tile's last query sees these keys
        out.append((keys + SUB_BLOCK - 1) // SUB_BLOCK)
    return out


def busiest(work, sms):
    """The most visits any SM runs when each item goes to the SM that frees first, in order."""
    free = [0] * sms
    for w in work:
        heapq.heappush(free, heapq.heappop(free) + w)
    return max(free)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chunk", type=int, default=1024)
    p.add_argument("--cached", type=int, default=0)
    p.add_argument("--target", type=float, default=0.5)
    p.add_argument("--fixed-us", type=float, default=5.0)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--q-heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--sms", type=int, default=132)
    p.add_argument("--peak", type=float, default=989.0, help="dense bf16 TFLOP/s")
    a = p.parse_args()
    for name in ("chunk", "head_dim", "q_heads", "kv_heads", "sms"):
        if getattr(a, name) <= 0:
            sys.exit(f"prefill_budget: --{name.replace('_', '-')} {getattr(a, name)}: must be above 0")
    if a.cached < 0 or not 0 < a.target <= 1 or a.fixed_us < 0 or a.peak <= 0:
        sys.exit("prefill_budget: --cached and --fixed-us must be >= 0, --target in (0, 1], --peak above 0")
    if a.q_heads % a.kv_heads:
        sys.exit(f"prefill_budget: --q-heads {a.q_heads} is not a multiple of --kv-heads {a.kv_heads}")
    group = a.q_heads // a.kv_heads
    pairs = a.chunk * a.cached + a.chunk * (a.chunk + 1) / 2
    flops = 4.0 * a.q_heads * a.head_dim * pairs
    call_us = flops / (a.target * a.peak * 1e12) * 1e6
    per_head = items(a.chunk, a.cached, group)
    work = [v for v in per_head for _ in range(a.kv_heads)]
    most = busiest(work, a.sms)
    visit_flop = 2 * (2.0 * 2 * WARPGROUP_ROWS * SUB_BLOCK * a.head_dim)  # QK^T and PV, two warpgroups
    peak_visit_us = visit_flop / (a.peak * 1e12 / a.sms) * 1e6
    print(f"chunk {a.chunk} over {a.cached} cached keys, head_dim {a.head_dim}, {a.q_heads} q / {a.kv_heads} kv "
          f"heads, {a.sms} SMs, {a.peak:g} TFLOP/s")
    print(f"work: {flops / 1e9:.3f} GFLOP; at {a.target:g} of the peak: {call_us:.2f} us")
    print(f"items: {len(work)} ({len(per_head)} per kv head), visits {sum(work)}, per SM mean "
          f"{sum(work) / a.sms:.2f}, busiest {most} ({most / (sum(work) / a.sms):.2f}x the mean)")
    print(f"a visit: {visit_flop / 1e6:.3f} MFLOP, {peak_visit_us:.3f} us at one SM's share of the peak")
    for fixed in sorted({0.0, a.fixed_us}):
        left = call_us - fixed
        if left <= 0:
            print(f"budget with {fixed:g} us fixed: none (the fixed time alone exceeds the call's)")
            continue
        per_visit = left / most
        print(f"budget with {fixed:g} us fixed: {per_visit:.3f} us a visit "
              f"({peak_visit_us / per_visit:.2f} of the SM's peak while visiting)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
