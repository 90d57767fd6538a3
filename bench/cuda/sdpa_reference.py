#!/usr/bin/env python3
"""torch's scaled_dot_product_attention on the prefill rows' shapes, as the reference that issue 9's
prefill target is read against: what the library kernels installed on the GPU machine (FlashAttention
2, cuDNN's fused attention, memory-efficient attention) reach on the same work as
bench_cuda_attention's `prefill/MODE/chunk=C` and `prefill-cached/MODE/[hd=64/]chunk=C/cached=K` rows:
one sequence, C queries over K cached keys and themselves (causal, aligned to the last key), 32 q
heads over 8 kv heads (grouped-query attention), bf16. The FLOP count is the bench's: 4 x head_dim
x q heads per visible (query, key) pair, C x K + C x (C + 1) / 2 pairs; fraction of 989 TFLOP/s.

  sdpa_reference.py [--chunks LIST] [--cached LIST] [--head-dims LIST] [--backends LIST]
                    [--iters N] [--json FILE] [--dry-run]

The library kernels differ from the bench's in what they are given: K and V contiguous, not paged
through a block table; no fixed split and no bits to keep. Each row is timed by CUDA events around
each of --iters replays of a CUDA graph of 10 calls (eager calls where a backend cannot be
captured: the row says "eager"), after three warm-up calls; best and median per row. A backend
without grouped-query support gets K and V expanded to the q heads (the same FLOP, more bytes: the
row says "expanded"); one that refuses a shape says why on its row. --dry-run prints the rows'
shapes and FLOP counts without torch. Exit status: 0 at least one row ran (the others print their
refusal), 1 no row ran, 2 bad arguments.
"""
import argparse
import json
import os
import statistics
import sys
import warnings

TOOL = "sdpa_reference"
Q_HEADS, KV_HEADS, PEAK = 32, 8, 989e12
REPLAY_CALLS = 10
BACKENDS = ("flash", "cudnn", "efficient")


def fail(message, code=2):
    print(f"{TOOL}: {message}", file=sys.stderr)
    sys.exit(code)


def int_list(flag, text, minimum):
    values = []
    for part in text.split(","):
        try:
            v = int(part)
        except ValueError:
            fail(f"{flag} {text}: '{part}' is not an integer")
        if v < minimum:
            fail(f"{flag} {text}: {v} is below {minimum}")
        values.append(v)
    return values


def flops(chunk, cached, head_dim):
    pairs = chunk * cached + chunk * (chunk + 1) // 2
    return 4.0 * head_dim * Q_HEADS * pairs


def row_name(backend, head_dim, chunk, cached):
    hd = "" if head_dim == 128 else f"hd={head_dim}/"
    return f"sdpa/{backend}/{hd}chunk={chunk}/cached={cached}"


def time_row(torch, backend, head_dim, chunk, cached, iters):
    """(times in us, note) for one row, or (None, reason) where the backend refuses it."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right
    import torch.nn.functional as F

    kind = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}[backend]
    keys = cached + chunk
    gen = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(1, Q_HEADS, chunk, head_dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    k = torch.randn(1, KV_HEADS, keys, head_dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    v = torch.randn(1, KV_HEADS, keys, head_dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    # Causal aligned to the last key: is_causal where the queries are all the keys, else the
    # lower-right bias (is_causal aligns to the first key).
    mask = {"is_causal": True} if cached == 0 else {"attn_mask": causal_lower_right(chunk, keys)}
    note = "gqa"
    call = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **mask)
    with sdpa_kernel([kind]):
        try:
            call()
        except (RuntimeError, TypeError, ValueError, NotImplementedError):
            # The backend without grouped-query support: K and V expanded to the q heads (more
            # bytes read, the same FLOP).
            ke = k.repeat_interleave(Q_HEADS // KV_HEADS, dim=1)
            ve = v.repeat_interleave(Q_HEADS // KV_HEADS, dim=1)
            call = lambda: F.scaled_dot_product_attention(q, ke, ve, **mask)
            note = "expanded"
            try:
                call()
            except (RuntimeError, TypeError, ValueError, NotImplementedError) as e:
                return None, str(e).strip().splitlines()[0][:120] if str(e).strip() else type(e).__name__
        for _ in range(3):
            call()
        # Timed as replays of a CUDA graph of REPLAY_CALLS calls, as the bench's graph rows are, so
        # that Python's dispatch (tens of us a call) is not in the time of the short rows; eagerly
        # where a backend's call cannot be captured (the row says "eager").
        torch.cuda.synchronize()
        try:
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                call()
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(REPLAY_CALLS):
                    call()
            run, calls = graph.replay, REPLAY_CALLS
            run()
        except RuntimeError:
            torch.cuda.synchronize()
            run, calls, note = call, 1, note + ", eager"
        times = []
        for _ in range(iters):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) * 1e3 / calls)
    return times, note


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chunks", default="256,1024,4096")
    p.add_argument("--cached", default="0,2048")
    p.add_argument("--head-dims", default="128,64")
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--json")
    p.add_argument("--dry-run", action="store_true")
    a = p.parse_args()
    chunks = int_list("--chunks", a.chunks, 1)
    cached = int_list("--cached", a.cached, 0)
    head_dims = int_list("--head-dims", a.head_dims, 1)
    for d in head_dims:
        if d not in (64, 128):
            fail(f"--head-dims {a.head_dims}: {d} is not 64 or 128 (the bench's head dims)")
    backends = a.backends.split(",")
    for b in backends:
        if b not in BACKENDS:
            fail(f"--backends {a.backends}: '{b}' is not one of {', '.join(BACKENDS)}")
    if a.iters < 1:
        fail(f"--iters {a.iters}: must be at least 1")
    # The bench's rows: head_dim 64 only over cached keys.
    shapes = [(d, c, k) for d in head_dims for k in cached for c in chunks if d == 128 or k > 0]
    if not shapes:
        fail("no row: head_dim 64 rows are over cached keys only (the bench's), give --cached above 0")

    rows = []
    if a.dry_run:
        for d, c, k in shapes:
            f = flops(c, k, d)
            print(f"{row_name('-', d, c, k)}: {f / 1e9:.3f} GFLOP, {f / (0.5 * PEAK) * 1e6:.2f} us at 0.5 of the peak")
        return 0
    warnings.filterwarnings("ignore")  # the backends' reasons for a refusal: the row's own words
    try:
        import torch
    except ImportError:
        fail("torch is not installed here (--dry-run prints the rows without it)", 1)
    if not torch.cuda.is_available():
        fail("no CUDA device", 1)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    print(f"{'row':48s} {'best us':>9s} {'median':>9s} {'TFLOP/s':>8s} {'frac':>6s}  note")
    ran = 0
    for d, c, k in shapes:
        for b in backends:
            name = row_name(b, d, c, k)
            times, note = time_row(torch, b, d, c, k, a.iters)
            if times is None:
                print(f"{name:48s} refused: {note}")
                rows.append({"row": name, "refused": note})
                continue
            ran += 1
            best, median = min(times), statistics.median(times)
            tf = flops(c, k, d) / (best * 1e-6)
            print(f"{name:48s} {best:9.1f} {median:9.1f} {tf / 1e12:8.1f} {tf / PEAK:6.3f}  {note}")
            rows.append({"row": name, "best_us": best, "median_us": median, "tflops": tf / 1e12,
                         "frac": tf / PEAK, "note": note})
    if a.json:  # whole or not at all: written beside, then renamed
        try:
            with open(a.json + ".tmp", "w") as f:
                json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)
            os.replace(a.json + ".tmp", a.json)
        except OSError as e:
            fail(f"--json {a.json}: {e.strerror}", 1)
    return 0 if ran else 1


if __name__ == "__main__":
    sys.exit(main())
