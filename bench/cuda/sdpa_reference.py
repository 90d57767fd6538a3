#!/usr/bin/env python3
"""torch's scaled_dot_product_attention on the attention rows' shapes, as the reference that issue
9's targets are read against: what the library kernels installed on the GPU machine (FlashAttention
2, cuDNN's fused attention, memory-efficient attention) reach on the same work as
bench_cuda_attention's rows, 32 q heads over 8 kv heads (grouped-query attention), bf16:
- prefill rows, as `prefill/MODE/chunk=C` and `prefill-cached/MODE/[hd=64/]chunk=C/cached=K`: one
  sequence, C queries over K cached keys and themselves (causal, aligned to the last key); the
  bench's FLOP count (4 x head_dim x q heads per visible (query, key) pair, C x K + C x (C + 1) / 2
  pairs), fraction of 989 TFLOP/s;
- decode rows, as `decode/MODE/batch=B/context=C`: B sequences of one query over its C keys; the
  bench's copy floor (B x C x 4096 bytes of K and V at head_dim 128 over the device's copy
  bandwidth, measured here as the bench measures it: a 2 GiB device-to-device copy).

  sdpa_reference.py [--kinds prefill,decode] [--chunks LIST] [--cached LIST] [--decode-batches LIST]
                    [--decode-contexts LIST] [--head-dims LIST] [--backends LIST] [--iters N]
                    [--json FILE] [--dry-run]

The library kernels differ from the bench's in what they are given: K and V contiguous, not paged
through a block table; no fixed split and no bits to keep. Each row is timed by CUDA events around
each of --iters replays of a CUDA graph of 10 calls (eager calls where a backend cannot be
captured: the row says "eager"), after three warm-up calls; best and median per row. A backend
without grouped-query support gets K and V expanded to the q heads (the same work, more bytes: the
row says "expanded"); one that refuses a shape says why on its row. --dry-run prints the rows and
their FLOP or bytes without torch. --json is written whole or not at all. Exit status: 0 at least
one row ran (the others print their refusal), 1 no row ran (or no torch, no GPU, an unwritable
--json), 2 bad arguments.
"""
import argparse
import json
import os
import statistics
import sys
import warnings
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from whole_file import write_whole  # noqa: E402

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


@dataclass
class Row:
    """One timed call: q [batch, 32, q_len, head_dim] against K, V [batch, 8, keys, head_dim];
    prefill rows (one sequence, causal aligned to the last key) are read against the tensor-core
    peak, decode rows (sequences of one query over all of their keys, no mask) against the copy
    floor of their K and V bytes."""
    name: str
    batch: int
    q_len: int
    keys: int
    head_dim: int
    causal: bool

    def flops(self):  # visible (query, key) pairs x 4 x head_dim x q heads, the bench's count
        cached = self.keys - self.q_len
        pairs = self.q_len * cached + self.q_len * (self.q_len + 1) // 2 if self.causal else self.q_len * self.keys
        return 4.0 * self.head_dim * Q_HEADS * pairs * self.batch

    def kv_bytes(self):
        return 2.0 * self.batch * self.keys * KV_HEADS * self.head_dim * 2


def hd_part(head_dim):  # the bench's row names: "hd=64/" for head_dim 64, nothing for 128
    return "" if head_dim == 128 else f"hd={head_dim}/"


def prefill_row(backend, head_dim, chunk, cached):
    name = f"sdpa/{backend}/{hd_part(head_dim)}chunk={chunk}/cached={cached}"
    return Row(name, 1, chunk, cached + chunk, head_dim, True)


def decode_row(backend, head_dim, batch, context):
    name = f"sdpa/{backend}/decode/{hd_part(head_dim)}batch={batch}/context={context}"
    return Row(name, batch, 1, context, head_dim, False)


def time_row(torch, backend, row, iters):
    """(times in us, note) for one row, or (None, reason) where the backend refuses it."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right
    import torch.nn.functional as F

    kind = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}[backend]
    gen = torch.Generator(device="cuda").manual_seed(0)
    shape = lambda heads, length: (row.batch, heads, length, row.head_dim)
    q = torch.randn(*shape(Q_HEADS, row.q_len), device="cuda", dtype=torch.bfloat16, generator=gen)
    k = torch.randn(*shape(KV_HEADS, row.keys), device="cuda", dtype=torch.bfloat16, generator=gen)
    v = torch.randn(*shape(KV_HEADS, row.keys), device="cuda", dtype=torch.bfloat16, generator=gen)
    # Causal aligned to the last key: is_causal where the queries are all the keys, else the
    # lower-right bias (is_causal aligns to the first key). A decode query sees every key.
    mask = {}
    if row.causal:
        mask = {"is_causal": True} if row.q_len == row.keys else {"attn_mask": causal_lower_right(row.q_len, row.keys)}
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
                reason = str(e).strip()
                return None, reason.splitlines()[0][:120] if reason else type(e).__name__
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
        return event_times(torch, run, iters, calls), note


def event_times(torch, run, iters, calls):
    """us per call of `run` (which makes `calls` calls), by CUDA events, `iters` times."""
    times = []
    for _ in range(iters):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3 / calls)
    return times


def copy_bandwidth(torch):
    """Bytes read and written per second by a 2 GiB device-to-device copy (the bench's
    copy_bandwidth: bench/cuda/bench_support.cpp), the decode rows' floor."""
    n = 2 << 30
    a = torch.ones(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    b.copy_(a)
    us = statistics.mean(event_times(torch, lambda: b.copy_(a), 10, 1))
    return 2.0 * n / (us * 1e-6)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kinds", default="prefill,decode")
    p.add_argument("--chunks", default="256,1024,4096")
    p.add_argument("--cached", default="0,2048")
    p.add_argument("--decode-batches", default="1,4,16")
    p.add_argument("--decode-contexts", default="2048,8192")
    p.add_argument("--head-dims", default="128,64")
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--json")
    p.add_argument("--dry-run", action="store_true")
    a = p.parse_args()
    kinds = a.kinds.split(",")
    for k in kinds:
        if k not in ("prefill", "decode"):
            fail(f"--kinds {a.kinds}: '{k}' is not prefill or decode")
    chunks = int_list("--chunks", a.chunks, 1)
    cached = int_list("--cached", a.cached, 0)
    batches = int_list("--decode-batches", a.decode_batches, 1)
    contexts = int_list("--decode-contexts", a.decode_contexts, 1)
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
    # The bench's rows: prefill at head_dim 64 only over cached keys.
    shapes = []
    if "prefill" in kinds:
        shapes += [(prefill_row, d, c, k) for d in head_dims for k in cached for c in chunks if d == 128 or k > 0]
    if "decode" in kinds:
        shapes += [(decode_row, d, b, c) for d in head_dims for b in batches for c in contexts]
    if not shapes:
        fail("no row: head_dim 64 prefill rows are over cached keys only (the bench's), give --cached above 0")

    if a.dry_run:
        for make, d, x, y in shapes:
            r = make("-", d, x, y)
            if r.causal:
                print(f"{r.name}: {r.flops() / 1e9:.3f} GFLOP, {r.flops() / (0.5 * PEAK) * 1e6:.2f} us at 0.5 of the peak")
            else:
                print(f"{r.name}: {r.kv_bytes() / 1e6:.3f} MB of K and V")
        return 0
    warnings.filterwarnings("ignore")  # the backends' reasons for a refusal: the row's own words
    try:
        import torch
    except ImportError:
        fail("torch is not installed here (--dry-run prints the rows without it)", 1)
    if not torch.cuda.is_available():
        fail("no CUDA device", 1)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    bandwidth = copy_bandwidth(torch) if "decode" in kinds else 0.0
    if bandwidth:
        print(f"device copy bandwidth: {bandwidth / 1e12:.2f} TB/s (decode rows: fraction of K and V bytes at it)")
    print(f"{'row':52s} {'best us':>9s} {'median':>9s} {'TF|TB/s':>8s} {'frac':>6s}  note")
    rows, ran = [], 0
    for make, d, x, y in shapes:
        for b in backends:
            r = make(b, d, x, y)
            times, note = time_row(torch, b, r, a.iters)
            if times is None:
                print(f"{r.name:52s} refused: {note}")
                rows.append({"row": r.name, "refused": note})
                continue
            ran += 1
            best, median = min(times), statistics.median(times)
            # FLOP/s against the tensor-core peak (prefill), bytes/s against the copy rate (decode)
            rate = (r.flops() if r.causal else r.kv_bytes()) / (best * 1e-6)
            frac = rate / (PEAK if r.causal else bandwidth)
            print(f"{r.name:52s} {best:9.1f} {median:9.1f} {rate / 1e12:8.2f} {frac:6.3f}  {note}")
            rows.append({"row": r.name, "best_us": best, "median_us": median, "rate": rate, "frac": frac, "note": note})
    if a.json:
        try:
            write_whole(a.json, json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                                            "copy_bandwidth": bandwidth, "rows": rows}, indent=1))
        except OSError as e:
            fail(f"--json {a.json}: {e.strerror}", 1)
    return 0 if ran else 1


if __name__ == "__main__":
    sys.exit(main())
