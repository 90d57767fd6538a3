// Paged attention on CUDA, both modes, Qwen3-8B heads (32 q, 8 kv, head_dim 128; decode also with
// head_dim 64, named hd=64), KV blocks of 16.
// Decode: batch 1..256 sequences, context 128..8192 (and 32768 at batch 1 and 4), one query each;
// decode-burst: 256 or 1000 sequences of 17..148 keys (the qwen3_8b_burst scenario's steps),
// launched without host mirrors and timed as graph replays (-contig: tables of consecutive blocks,
// -mirrors: with host mirrors, calls timed);
// decode-graph: the batches again (1..256 sequences), timed as replays of a CUDA graph of the calls
// (device time without each call's host work; launches still sized from the host mirrors);
// decode-shapes: the same batches at both head dims, graph replays of launches sized from the shapes
// alone, as an engine's captured decode steps and the decode-burst rows are; decode-kernel,
// decode-kernel-wide, decode-64row: the decode routes forced (AttentionRoute); decode-chain-ring=
// 2|4|8 and decode-split-ring=4|8: the few-warps and the four-warps decode kernels with that
// ring depth, graph replays; decode-segment: the kernel running a segment's sub-blocks side by
// side (graph replays); decode-burst-wide,
// decode-burst-four-warps: the decode-burst rows on the decode kernel in blocks of 8 warps or of
// at most 4; decode-burst-split-ring=4, decode-burst-chain-ring=2|4: the same rows on the
// four-warps (split) and the few-warps (chain) decode kernels;
// decode-split=64|128|512|1024: invariant mode with another fixed split size (64 and 128 also as
// graph replays: decode-split=64|128-graph on the automatic route, -segment on the segment kernel;
// decode-split-count=8|16-graph|-segment: default mode with that split count, batch 1 and 4 x 2048)
// (prefill-split=64|128|512|1024|8192 likewise: the larger ones show what the 256-key segment ends
// cost; prefill-cached-split=512|1024 the same over 2048 cached keys, head_dim 128 and 64);
// decode-items=4|16: default mode planned for that many items per unit instead of 8;
// decode-64row-graph: the 64-row kernel forced on short contexts, graph replays;
// decode-step: batch 1 and 4 after the engine step's kernel before attention (qkv_prep,
// step_predecessor.h), graph replays of the pair: us = the pair less that kernel's own replays;
// launch-floor: empty kernels and a read of batch 1 x 2048's K and V bytes (launch_floor.h);
// prefill-ceiling: the wgmma prefill's visit with only its matrix products, one block per SM
// (prefill_ceiling.h), at head_dim 64 / 128, 64 or 128 keys a visit, 1-3 warpgroups;
// prefill-ceiling-copies: the same at the prefill's shape with K and V copied through its ring;
// prefill-ceiling-softmax: that with the prefill's interior softmax making P (prefill_softmax.cuh);
// prefill-ceiling-folds: that with a segment fold every 4 visits (invariant mode's 256 keys);
// prefill-ceiling-folds-ahead: the same with the next segment's first scores issued before the fold;
// prefill-ceiling-folds-producer(-ahead): those with the partials folded by the producer warpgroup;
// prefill-ceiling-drains(-ahead): those with the partials dropped (the products drained, o reset);
// prefill-ceiling-folds|drains-staggered: warpgroup 1's segment ends half a segment after 0's;
// prefill-ceiling-softmax-edges: the softmax rung with the prefill's masked paths, never taken;
// prefill-ceiling-softmax-items=32|8: the softmax rung as blocks of 32 / 8 visits (the prefill's
// items at chunk 4096 / 1024), 8 / 32 times as many blocks; prefill-ceiling-drains-every=32|8: the
// drains rung with that many visits a segment (one block per SM, as a persistent kernel's items);
// floor = the K and V bytes read once at the measured copy bandwidth (frac_bw = floor / time).
// Mixed: one prefill chunk of 512 or 2048 tokens (over as many cached keys) and 16 or 64 decodes
// of 2048 or 8192 keys in one call, as the engine issues a step (mixed-graph: launches sized from
// the shapes, graph replays); frac = the larger of the copy floor (every sequence's K and V bytes)
// and the tensor-core floor (QK^T and PV of every query) / time, both also printed.
// Prefill: one chunk of 64..4096 tokens over an empty cache (causal); prefill-cached: chunks of
// 256..4096 tokens over a cached prefix of 2048 keys in the paged cache (hd=64 too), and
// prefill-64row the same with the 64-row kernel forced (AttentionRoute::kGeneralOnly; the automatic
// route takes the wgmma kernel on an H200), prefill-pages-apart the same keys with the sequence's
// blocks in decreasing order (the kernel's cp.async copies take the same time either way; bulk
// tensor copies of pages in consecutive blocks, measured and not kept, gained on prefill-cached and
// lost here: bench/cuda/notes/prefill.md, 2026-12-03); floor = the QK^T and PV multiply-adds of the
// visible (query, key) pairs at the dense bf16 tensor-core rate (989 TFLOP/s datasheet; frac_tc =
// floor / time). Time per call from CUDA events over a batch of calls; the host part of each call
// (launch sizing from the host mirrors) is included in the time.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/cuda/bench_support.h"
#include "bench/cuda/launch_floor.h"
#include "bench/cuda/prefill_ceiling.h"
#include "bench/cuda/step_predecessor.h"
#include "kernels/cuda/cuda_ops.h"

namespace samebits::bench {
namespace {

constexpr int kHq = 32, kHkv = 8, kBlock = 16;
constexpr int64_t kCachedPrefix = 2048;  // the prefill-cached rows' prefix, in keys
constexpr double kTensorPeak = 989e12;

struct Batch {
  std::vector<int32_t> qs, ctx, tables;
  int max_blocks = 0;
  int64_t T = 0, max_context = 0, num_blocks = 0;
  bf16 *q = nullptr, *k = nullptr, *v = nullptr, *kc = nullptr, *vc = nullptr, *out = nullptr;
  int32_t *dqs = nullptr, *dctx = nullptr, *dtab = nullptr;
};

void* device_alloc(size_t bytes) { return *gpu()->alloc(bytes); }

// Context of sequence s in a burst of decodes (the qwen3_8b_burst scenario's shapes: prompts of
// 16-48 tokens plus up to 100 generated): 17..148 keys, spread over the batch.
int64_t burst_context(int s) { return 17 + (int64_t(s) * 37) % 132; }

// The burst cases: block j of sequence s is block j * seqs + s (kScattered, kMirrors), as an
// engine allocates a block per sequence every block_size decode steps, or s * 16 + j
// (kContiguous); tables 16 blocks wide (a captured graph's width); launched without host mirrors
// (sized from the shapes alone, as the engine's steps are) and timed as graph replays, except
// kMirrors (host mirrors, calls timed with their host work).
// kPagesApart: not a burst; each sequence's blocks in decreasing order (no two pages in
// consecutive blocks, as a block table after many frees and reuses can be).
enum class Burst { kNone, kScattered, kContiguous, kMirrors, kPagesApart };
bool is_burst(Burst kind) { return kind != Burst::kNone && kind != Burst::kPagesApart; }

// One sequence of a batch: `context` keys, the last q_len of them computed now.
struct Part {
  int64_t context, q_len;
};

// The sequences `parts` (a burst: 16-block tables, burst_context(s) keys each).
std::unique_ptr<Batch> make_batch_of(const std::vector<Part>& parts, int hd, Burst kind = Burst::kNone) {
  const bool burst = is_burst(kind);
  const int seqs = int(parts.size());
  auto b = std::make_unique<Batch>();
  const Backend& g = *gpu();
  int64_t longest = 0;
  for (const Part& p : parts) longest = std::max(longest, p.context);
  b->max_blocks = burst ? 16 : int((longest + kBlock - 1) / kBlock);
  b->num_blocks = int64_t(seqs) * b->max_blocks;
  b->qs.push_back(0);
  for (int s = 0; s < seqs; ++s) {
    const int64_t len = burst ? burst_context(s) : parts[size_t(s)].context;
    b->qs.push_back(b->qs.back() + int32_t(parts[size_t(s)].q_len));
    b->ctx.push_back(int32_t(len));
    b->max_context = std::max(b->max_context, len);
    for (int j = 0; j < b->max_blocks; ++j) {
      const bool scattered = kind == Burst::kScattered || kind == Burst::kMirrors;
      const int jj = kind == Burst::kPagesApart ? b->max_blocks - 1 - j : j;
      b->tables.push_back(scattered ? j * seqs + s : s * b->max_blocks + jj);
    }
  }
  b->T = b->qs.back();
  const int64_t kv = b->num_blocks * kBlock * kHkv * hd;
  b->kc = static_cast<bf16*>(device_alloc(size_t(kv) * 2));
  b->vc = static_cast<bf16*>(device_alloc(size_t(kv) * 2));
  b->q = static_cast<bf16*>(device_alloc(size_t(b->T) * kHq * hd * 2));
  b->k = static_cast<bf16*>(device_alloc(size_t(b->T) * kHkv * hd * 2));
  b->v = static_cast<bf16*>(device_alloc(size_t(b->T) * kHkv * hd * 2));
  b->out = static_cast<bf16*>(device_alloc(size_t(b->T) * kHq * hd * 2));
  (void)g.fill_synthetic(b->kc, kv, 1, 1.f, 0.f);
  (void)g.fill_synthetic(b->vc, kv, 2, 1.f, 0.f);
  (void)g.fill_synthetic(b->q, b->T * kHq * hd, 3, 2.f, 0.f);
  (void)g.fill_synthetic(b->k, b->T * kHkv * hd, 4, 1.f, 0.f);
  (void)g.fill_synthetic(b->v, b->T * kHkv * hd, 5, 1.f, 0.f);
  b->dqs = static_cast<int32_t*>(device_alloc(b->qs.size() * 4));
  b->dctx = static_cast<int32_t*>(device_alloc(b->ctx.size() * 4));
  b->dtab = static_cast<int32_t*>(device_alloc(b->tables.size() * 4));
  (void)g.upload(b->dqs, b->qs.data(), b->qs.size() * 4);
  (void)g.upload(b->dctx, b->ctx.data(), b->ctx.size() * 4);
  (void)g.upload(b->dtab, b->tables.data(), b->tables.size() * 4);
  return b;
}

// seqs sequences with `context` keys each (a burst: burst_context(s) keys), the last q_len of them
// computed now.
std::unique_ptr<Batch> make_batch(int seqs, int64_t context, int64_t q_len, int hd, Burst kind = Burst::kNone) {
  return make_batch_of(std::vector<Part>(size_t(seqs), Part{context, q_len}), hd, kind);
}

void free_batch(Batch& b) {
  const Backend& g = *gpu();
  for (void* p : {(void*)b.kc, (void*)b.vc, (void*)b.q, (void*)b.k, (void*)b.v, (void*)b.out, (void*)b.dqs,
                  (void*)b.dctx, (void*)b.dtab}) {
    g.free(p);
  }
}

// How one case runs: graph: time replays of a CUDA graph of the calls (the device's time,
// bench_support.h) instead of the calls themselves (which include each call's host work); route:
// which kernel takes the decode tiles (kAuto: the backend's choice); mirrors: launches sized from
// the host mirrors (else from the shapes alone); split_size > 0: an invariant plan with that fixed
// split size instead of the mode's plan (what another kInvariantAttentionSplit would cost).
struct How {
  bool graph = false;
  AttentionRoute route = AttentionRoute::kAuto;
  bool mirrors = true;
  int split_size = 0;
  int units = kDefaultParallelUnits;  // the planner's parallel units (default mode's split count)
  int split_count = 0;                // > 0: default mode's plan with this split count instead
};

// Seconds per call of fn(stream, i), as the case's iterations (mean_time_per_call): reps for ~3 ms
// a batch, each batch launched on the default stream or (graph) replayed as one CUDA graph
// (bench_support.h); a batch after which `failed` is set ends the case with `error` (negative).
double time_calls(benchmark::State& state, const std::function<void(void*, int)>& fn, bool graph, const bool& failed,
                  const char* error) {
  auto on_default = [&](int i) { fn(nullptr, i); };
  const int reps = reps_for(on_default, 3e-3);
  return mean_time_per_call(
      state,
      [&] {
        const double once = graph ? time_per_call_graph(fn, reps) : time_per_call(on_default, reps);
        return failed ? -1.0 : once;
      },
      error);
}

// The attention call's arguments for batch b in `mode`, as `how` says (launch sizing, plan).
AttentionArgs attention_args(const Batch& batch, Mode mode, int hd, const How& how) {
  const Batch* b = &batch;
  const int seqs = int(b->ctx.size());
  AttentionArgs a;
  a.q = b->q;
  a.k_new = b->k;
  a.v_new = b->v;
  a.k_cache = b->kc;
  a.v_cache = b->vc;
  a.query_start = b->dqs;
  a.context_lens = b->dctx;
  a.block_tables = b->dtab;
  a.host_query_start = how.mirrors ? b->qs.data() : nullptr;
  a.host_context_lens = how.mirrors ? b->ctx.data() : nullptr;
  a.num_seqs = seqs;
  a.max_blocks_per_seq = b->max_blocks;
  a.T = b->T;
  a.num_q_heads = kHq;
  a.num_kv_heads = kHkv;
  a.head_dim = hd;
  a.block_size = kBlock;
  a.num_blocks = b->num_blocks;
  a.scale = float(1.0 / std::sqrt(double(hd)));
  a.plan = plan_attention(mode, seqs, kHkv, b->max_context, how.units);
  if (how.split_size > 0) {
    a.plan = plan_attention(Mode::kInvariant, seqs, kHkv, b->max_context, kDefaultParallelUnits);
    a.plan.split_size = how.split_size;
  }
  if (how.split_count > 0) a.plan.split_count = how.split_count;
  a.out = b->out;
  return a;
}

// One attention call on ctx's stream by the route `how` names.
absl::Status attend(const ExecContext& ctx, const AttentionArgs& a, const How& how) {
  return how.route == AttentionRoute::kAuto ? gpu()->attention(ctx, a) : cuda_attention_routed(ctx, a, how.route);
}

// The K and V bytes of every sequence's keys read once (the copy floor's bytes), and the
// (query, visible key) pairs; prefill: some sequence computes more than one query.
struct Work {
  double bytes = 0, pairs = 0;
  bool prefill = false;
};
Work work_of(const Batch& b, int hd) {
  Work w;
  double keys = 0;
  for (size_t s = 0; s < b.ctx.size(); ++s) {
    const double q_len = b.qs[s + 1] - b.qs[s], len = b.ctx[s];
    keys += len;
    w.pairs += q_len * (len - q_len) + q_len * (q_len + 1) / 2.0;
    w.prefill = w.prefill || q_len > 1;
  }
  w.bytes = keys * kHkv * hd * 2.0 * 2.0;
  return w;
}

// Times attention over batch b. Counters: us; GBs and frac_bw (the K and V bytes of every
// sequence's keys read once, at the measured copy bandwidth); where a sequence computes more than
// one query, also TFLOPs and frac_tc (QK^T and PV at the dense bf16 rate) and frac (the larger
// floor of the two / time).
void measure(benchmark::State& state, Mode mode, Batch& batch, int hd, const How& how) {
  ExecContext ctx;
  ctx.mode = mode;
  const AttentionArgs a = attention_args(batch, mode, hd, how);
  bool failed = false;
  auto call_on = [&](void* stream, int) {
    ExecContext on = ctx;
    on.stream = stream;
    failed = failed || !attend(on, a, how).ok();
  };
  const double t = time_calls(state, call_on, how.graph, failed, "attention failed");
  if (t <= 0) return;
  state.counters["us"] = t * 1e6;
  const Work w = work_of(batch, hd);
  const double bytes = w.bytes, flops = 4.0 * kHq * hd * w.pairs;
  const bool prefill = w.prefill;
  state.counters["GBs"] = bytes / t / 1e9;
  state.counters["frac_bw"] = bytes / copy_bandwidth() / t;
  if (prefill) {
    state.counters["TFLOPs"] = flops / t / 1e12;
    state.counters["frac_tc"] = flops / kTensorPeak / t;
    state.counters["frac"] = std::max(bytes / copy_bandwidth(), flops / kTensorPeak) / t;
  }
}

// seqs sequences of `context` keys, the last q_len computed now (burst: make_batch), run as `how` says.
void run_how(benchmark::State& state, Mode mode, int seqs, int64_t context, int64_t q_len, int hd, const How& how,
             Burst burst = Burst::kNone) {
  if (gpu() == nullptr) {
    state.SkipWithError("no CUDA device");
    return;
  }
  std::unique_ptr<Batch> b = make_batch(seqs, context, q_len, hd, burst);
  measure(state, mode, *b, hd, how);
  free_batch(*b);
}

// The same with How's fields as arguments; launches sized from the host mirrors except the bursts
// that say otherwise.
void run(benchmark::State& state, Mode mode, int seqs, int64_t context, int64_t q_len, int hd, bool graph = false,
         AttentionRoute route = AttentionRoute::kAuto, Burst burst = Burst::kNone, int split_size = 0,
         int units = kDefaultParallelUnits) {
  How how;
  how.graph = graph;
  how.route = route;
  how.mirrors = !is_burst(burst) || burst == Burst::kMirrors;
  how.split_size = split_size;
  how.units = units;
  run_how(state, mode, seqs, context, q_len, hd, how, burst);
}

// A mixed step as the engine issues it: one prefill chunk of `chunk` tokens over `chunk` cached
// keys (a prompt's second chunk) and `decodes` decodes of `context` keys, in one call; launches
// sized from the host mirrors (calls timed) or, graph = true, from the shapes (graph replays).
void run_mixed(benchmark::State& state, Mode mode, int64_t chunk, int decodes, int64_t context, bool graph) {
  if (gpu() == nullptr) {
    state.SkipWithError("no CUDA device");
    return;
  }
  std::vector<Part> parts{{2 * chunk, chunk}};
  for (int i = 0; i < decodes; ++i) parts.push_back({context, 1});
  std::unique_ptr<Batch> b = make_batch_of(parts, 128);
  How how;
  how.graph = graph;
  how.mirrors = !graph;
  measure(state, mode, *b, 128, how);
  free_batch(*b);
}

// A launch-floor row (launch_floor.h): per call a read of `bytes` by `blocks` blocks of `threads`
// threads (none where blocks = 0), then `empties` empty kernels, each launched as a programmatic
// dependent of the kernel before it; graph replays. Counters as the decode rows' (the bytes read
// once).
void run_floor(benchmark::State& state, int64_t bytes, int blocks, int threads, int empties) {
  if (gpu() == nullptr) {
    state.SkipWithError("no CUDA device");
    return;
  }
  void* src = blocks > 0 ? device_alloc(size_t(bytes)) : nullptr;
  auto* sink = static_cast<uint32_t*>(device_alloc(4));
  if (src != nullptr) cudaMemset(src, 1, size_t(bytes));
  bool failed = false;
  auto call_on = [&](void* stream, int) {
    if (blocks > 0) failed = failed || !launch_read(stream, src, bytes, blocks, threads, sink);
    for (int i = 0; i < empties; ++i) failed = failed || !launch_empty(stream);
  };
  const double t = time_calls(state, call_on, /*graph=*/true, failed, "launch failed");
  if (t > 0) {
    const double read = blocks > 0 ? double(bytes) : 0.0;
    state.counters["us"] = t * 1e6;
    state.counters["GBs"] = read / t / 1e9;
    state.counters["frac_bw"] = read / copy_bandwidth() / t;
  }
  if (src != nullptr) gpu()->free(src);
  gpu()->free(sink);
}

// A decode step's kernel before attention and the attention call (step_predecessor.h), replayed as
// one graph, and that kernel's replays alone, both in every iteration (launches sized from the host
// mirrors, as the decode-graph rows): us = what the attention call adds to the step (the pair less
// the kernel alone; GBs and frac_bw from it), step_us and prep_us the two replays.
void run_step(benchmark::State& state, Mode mode, int seqs, int64_t context) {
  if (gpu() == nullptr) {
    state.SkipWithError("no CUDA device");
    return;
  }
  constexpr int hd = 128;
  std::unique_ptr<Batch> b = make_batch(seqs, context, 1, hd);
  StepTarget target;
  target.q = b->q, target.k = b->k, target.v = b->v, target.k_cache = b->kc, target.v_cache = b->vc;
  target.num_slots = b->num_blocks * kBlock;
  target.num_q_heads = kHq, target.num_kv_heads = kHkv, target.head_dim = hd;
  for (int s = 0; s < seqs; ++s) {  // each sequence's newest key, in its last block
    const int32_t pos = b->ctx[size_t(s)] - 1;
    target.positions.push_back(pos);
    target.slots.push_back(int64_t(b->tables[size_t(s) * b->max_blocks + pos / kBlock]) * kBlock + pos % kBlock);
  }
  const std::unique_ptr<StepPredecessor> prep = StepPredecessor::make(*gpu(), target, mode);
  if (prep == nullptr) {
    state.SkipWithError("qkv_prep's inputs could not be made");
    free_batch(*b);
    return;
  }
  How how;
  how.graph = true;
  const AttentionArgs a = attention_args(*b, mode, hd, how);
  bool failed = false;
  auto prep_on = [&](void* stream, int) { failed = failed || !prep->launch(stream).ok(); };
  auto step_on = [&](void* stream, int i) {
    prep_on(stream, i);
    ExecContext on;
    on.mode = mode;
    on.stream = stream;
    failed = failed || !attend(on, a, how).ok();
  };
  const int reps = reps_for([&](int i) { step_on(nullptr, i); }, 3e-3);
  double prep_total = 0, step_total = 0;
  int n = 0;
  const double added = mean_time_per_call(
      state,
      [&] {
        const double alone = time_per_call_graph(prep_on, reps), both = time_per_call_graph(step_on, reps);
        if (failed || alone <= 0 || both <= 0) return -1.0;
        prep_total += alone;
        step_total += both;
        ++n;
        return both - alone;
      },
      "qkv_prep or attention failed, or the attention call added no time");
  if (added > 0) {
    const double bytes = work_of(*b, hd).bytes;
    state.counters["us"] = added * 1e6;
    state.counters["step_us"] = step_total / n * 1e6;
    state.counters["prep_us"] = prep_total / n * 1e6;
    state.counters["GBs"] = bytes / added / 1e9;
    state.counters["frac_bw"] = bytes / copy_bandwidth() / added;
  }
  free_batch(*b);
}

// A prefill-ceiling row (prefill_ceiling.h): one launch per call, each warpgroup 256 visits per SM.
// Counters as the prefill rows' (the launch's multiply-adds against the tensor-core rate).
void run_ceiling(benchmark::State& state, const CeilingShape& shape) {
  if (gpu() == nullptr) {
    state.SkipWithError("no CUDA device");
    return;
  }
  constexpr int kVisits = 256;  // per SM: one block, or 256 / item_visits blocks of item_visits each
  const int visits = shape.item_visits > 0 ? shape.item_visits : kVisits;
  const int blocks = gpu()->device.sm_count * (kVisits / visits);
  auto* sink = static_cast<float*>(device_alloc(4));
  bool failed = false;
  auto call_on = [&](void* stream, int) {
    failed = failed || !launch_prefill_ceiling(stream, shape, blocks, visits, sink);
  };
  const double t =
      time_calls(state, call_on, /*graph=*/false, failed, "launch failed (no sm_90a kernel on this device?)");
  if (t > 0) {
    const double flops = prefill_ceiling_flops(shape, blocks, visits);
    state.counters["us"] = t * 1e6;
    state.counters["TFLOPs"] = flops / t / 1e12;
    state.counters["frac_tc"] = flops / kTensorPeak / t;
  }
  gpu()->free(sink);
}

// Registers a case timed by the case itself (manual time), 5 iterations, in microseconds.
template <typename Fn>
void add(const std::string& name, Fn fn) {
  benchmark::RegisterBenchmark(name.c_str(), fn)->UseManualTime()->Iterations(5)->Unit(benchmark::kMicrosecond);
}

}  // namespace
}  // namespace samebits::bench

int main(int argc, char** argv) {
  using namespace samebits;
  using namespace samebits::bench;
  for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
    const std::string m(mode_name(mode));
    for (int hd : {128, 64}) {
      const std::string h = hd == 128 ? "" : "hd=64/";
      for (int seqs : {1, 4, 16, 64, 256}) {
        std::vector<int64_t> contexts{128, 512, 2048, 8192};
        if (seqs <= 4) contexts.push_back(32768);
        for (int64_t context : contexts) {
          benchmark::RegisterBenchmark(
              absl::StrCat("decode/", m, "/", h, "batch=", seqs, "/context=", context).c_str(),
              [=](benchmark::State& st) { run(st, mode, seqs, context, 1, hd); })
              ->UseManualTime()->Iterations(5)->Unit(benchmark::kMicrosecond);
        }
      }
    }
    for (int seqs : {1, 4, 16, 64, 256}) {
      for (int64_t context : {128, 512, 2048, 8192, 32768}) {
        if (seqs > 16 && (context < 2048 || context > 8192)) continue;
        benchmark::RegisterBenchmark(absl::StrCat("decode-graph/", m, "/batch=", seqs, "/context=", context).c_str(),
                                     [=](benchmark::State& st) { run(st, mode, seqs, context, 1, 128, true); })
            ->UseManualTime()->Iterations(5)->Unit(benchmark::kMicrosecond);
      }
    }
    // The decode-graph batches at both head dims, launches sized from the shapes alone (no host
    // mirrors), as an engine's captured decode steps are: beside decode-graph, what the slot count
    // chosen without the contexts costs.
    for (int hd : {128, 64}) {
      for (int seqs : {1, 4, 16, 64, 256}) {
        for (int64_t context : {512, 2048, 8192, 32768}) {
          if ((seqs > 16 && (context < 2048 || context > 8192)) || (seqs == 16 && context > 8192)) continue;
          How how;
          how.graph = true;
          how.mirrors = false;
          add(absl::StrCat("decode-shapes/", m, "/", hd == 128 ? "" : "hd=64/", "batch=", seqs, "/context=", context),
              [=](benchmark::State& st) { run_how(st, mode, seqs, context, 1, hd, how); });
        }
      }
    }
    // The qwen3_8b_burst scenario's decode steps: sequences of 17..148 keys (make_batch).
    for (auto [kind, name] : {std::pair{Burst::kScattered, "decode-burst/"},
                              {Burst::kContiguous, "decode-burst-contig/"},
                              {Burst::kMirrors, "decode-burst-mirrors/"}}) {
      for (int hd : {128, 64}) {
        for (int seqs : {256, 1000}) {
          if (kind != Burst::kScattered && (hd != 128 || seqs != 1000)) continue;
          const Burst k = kind;
          benchmark::RegisterBenchmark(absl::StrCat(name, m, "/", hd == 128 ? "" : "hd=64/", "batch=", seqs).c_str(),
                                       [=](benchmark::State& st) {
                                         run(st, mode, seqs, 0, 1, hd, k != Burst::kMirrors, AttentionRoute::kAuto, k);
                                       })
              ->UseManualTime()
              ->Iterations(5)
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
    // The same bursts on the decode kernel in blocks of 8 warps (kDecodeKernelWide) and of at most 4
    // (kDecodeKernelFourWarps: two blocks per SM), and on the split and chain decode kernels.
    for (auto [route, name] : {std::pair{AttentionRoute::kDecodeKernelWide, "decode-burst-wide/"},
                               {AttentionRoute::kDecodeKernelFourWarps, "decode-burst-four-warps/"},
                               {AttentionRoute::kDecodeSplitRing4, "decode-burst-split-ring=4/"},
                               {AttentionRoute::kDecodeChainRing2, "decode-burst-chain-ring=2/"},
                               {AttentionRoute::kDecodeChainRing4, "decode-burst-chain-ring=4/"}}) {
      for (int hd : {128, 64}) {
        for (int seqs : {256, 1000}) {
          const AttentionRoute r = route;
          add(absl::StrCat(name, m, "/", hd == 128 ? "" : "hd=64/", "batch=", seqs), [=](benchmark::State& st) {
            run(st, mode, seqs, 0, 1, hd, true, r, Burst::kScattered);
          });
        }
      }
    }
    // Both kernels that can take decode tiles, forced (kAuto picks one by the batch).
    for (int seqs : {16, 64}) {
      for (int64_t context : {2048, 8192}) {
        for (AttentionRoute route :
             {AttentionRoute::kDecodeKernel, AttentionRoute::kDecodeKernelWide, AttentionRoute::kGeneralOnly}) {
          const char* kernel = route == AttentionRoute::kDecodeKernel       ? "decode-kernel/"
                               : route == AttentionRoute::kDecodeKernelWide ? "decode-kernel-wide/"
                                                                            : "decode-64row/";
          benchmark::RegisterBenchmark(
              absl::StrCat(kernel, m, "/batch=", seqs, "/context=", context).c_str(),
              [=](benchmark::State& st) { run(st, mode, seqs, context, 1, 128, false, route); })
              ->UseManualTime()
              ->Iterations(5)
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
    // A decode kernel forced at one ring depth, graph replays: rows "<kernel>-ring=<ring>/...".
    auto forced_ring_rows = [&](const char* kernel, AttentionRoute route, int ring, std::initializer_list<int> batches,
                                std::initializer_list<int64_t> contexts = {2048, 8192}) {
      for (int seqs : batches) {
        for (int64_t context : contexts) {
          benchmark::RegisterBenchmark(
              absl::StrCat(kernel, "-ring=", ring, "/", m, "/batch=", seqs, "/context=", context).c_str(),
              [=](benchmark::State& st) { run(st, mode, seqs, context, 1, 128, true, route); })
              ->UseManualTime()
              ->Iterations(5)
              ->Unit(benchmark::kMicrosecond);
        }
      }
    };
    // The few-warps decode kernel at each ring depth (kAuto picks one by the launch).
    forced_ring_rows("decode-chain", AttentionRoute::kDecodeChainRing2, 2, {1, 4});
    forced_ring_rows("decode-chain", AttentionRoute::kDecodeChainRing4, 4, {1, 4});
    forced_ring_rows("decode-chain", AttentionRoute::kDecodeChainRing8, 8, {1, 4});
    // The four-warps-per-segment decode kernel at each ring depth (kAuto takes it for the smallest
    // launches).
    forced_ring_rows("decode-split", AttentionRoute::kDecodeSplitRing4, 4, {1, 4, 16}, {128, 512, 2048, 8192});
    forced_ring_rows("decode-split", AttentionRoute::kDecodeSplitRing8, 8, {1, 4, 16});
    // The segment kernel (kAuto takes it for launches that fit one wave of its blocks).
    for (int seqs : {1, 4, 16}) {
      for (int64_t context : {128, 512, 2048, 8192}) {
        add(absl::StrCat("decode-segment/", m, "/batch=", seqs, "/context=", context),
            [=](benchmark::State& st) {
              run(st, mode, seqs, context, 1, 128, true, AttentionRoute::kDecodeSegment);
            });
      }
    }
    // The engine step's kernel before attention, then the call (run_step): what the call adds to a
    // step, beside the decode-graph rows' isolated replays.
    for (int seqs : {1, 4}) {
      for (int64_t context : {2048, 8192}) {
        add(absl::StrCat("decode-step/", m, "/batch=", seqs, "/context=", context),
            [=](benchmark::State& st) { run_step(st, mode, seqs, context); });
      }
    }
    // The 64-row kernel forced on short contexts (kAuto's choice for some launches of one segment per
    // tile), graph replays, beside the decode-graph, decode-segment and decode-split-ring=4 rows.
    for (int seqs : {1, 4, 16}) {
      for (int64_t context : {128, 512}) {
        add(absl::StrCat("decode-64row-graph/", m, "/batch=", seqs, "/context=", context), [=](benchmark::State& st) {
          run(st, mode, seqs, context, 1, 128, true, AttentionRoute::kGeneralOnly);
        });
      }
    }
    // Mixed steps: one prefill chunk and decodes in one call (run_mixed).
    for (int64_t chunk : {512, 2048}) {
      for (int decodes : {16, 64}) {
        for (int64_t context : {2048, 8192}) {
          for (bool graph : {false, true}) {
            add(absl::StrCat(graph ? "mixed-graph/" : "mixed/", m, "/chunk=", chunk, "/decodes=", decodes,
                             "/context=", context),
                [=](benchmark::State& st) { run_mixed(st, mode, chunk, decodes, context, graph); });
          }
        }
      }
    }
    for (int64_t chunk : {64, 256, 1024, 4096}) {
      benchmark::RegisterBenchmark(absl::StrCat("prefill/", m, "/chunk=", chunk).c_str(),
                                   [=](benchmark::State& st) { run(st, mode, 1, chunk, chunk, 128); })
          ->UseManualTime()->Iterations(5)->Unit(benchmark::kMicrosecond);
    }
    for (int hd : {128, 64}) {
      for (int64_t chunk : {256, 1024, 4096}) {
        for (AttentionRoute route : {AttentionRoute::kAuto, AttentionRoute::kGeneralOnly}) {
          if (route == AttentionRoute::kGeneralOnly && hd == 64) continue;
          const char* kernel = route == AttentionRoute::kAuto ? "prefill-cached/" : "prefill-64row/";
          benchmark::RegisterBenchmark(
              absl::StrCat(kernel, m, "/", hd == 128 ? "" : "hd=64/", "chunk=", chunk, "/cached=", kCachedPrefix)
                  .c_str(),
              [=](benchmark::State& st) { run(st, mode, 1, kCachedPrefix + chunk, chunk, hd, false, route); })
              ->UseManualTime()
              ->Iterations(5)
              ->Unit(benchmark::kMicrosecond);
        }
        if (hd == 128 && chunk >= 1024) {  // the same keys, no two pages in consecutive blocks
          benchmark::RegisterBenchmark(
              absl::StrCat("prefill-pages-apart/", m, "/chunk=", chunk, "/cached=", kCachedPrefix).c_str(),
              [=](benchmark::State& st) {
                run(st, mode, 1, kCachedPrefix + chunk, chunk, hd, false, AttentionRoute::kAuto, Burst::kPagesApart);
              })
              ->UseManualTime()
              ->Iterations(5)
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
  // The floor under a replayed call of batch 1 x 2048 (launch_floor.h): one and two empty kernels,
  // and a read of that call's K and V bytes (8 MiB) by 64..512 blocks, alone and with an empty
  // kernel after it (as the merge follows the decode kernel), 16..128 KiB in flight per block.
  add("launch-floor/empty", [](benchmark::State& st) { run_floor(st, 0, 0, 0, 1); });
  add("launch-floor/empty-pair", [](benchmark::State& st) { run_floor(st, 0, 0, 0, 2); });
  constexpr int64_t kBatch1Bytes = int64_t(2048) * kHkv * 128 * 2 * 2;
  for (int blocks : {64, 128, 256, 512}) {
    for (int threads : {128, 512, 1024}) {
      for (int empties : {0, 1}) {
        add(absl::StrCat("launch-floor/read", empties ? "+empty" : "", "/blocks=", blocks, "/threads=", threads),
            [=](benchmark::State& st) { run_floor(st, kBatch1Bytes, blocks, threads, empties); });
      }
    }
  }
  // The products' own pace at the prefill visit's shape and beside it (prefill_ceiling.h).
  for (int hd : {128, 64}) {
    for (int keys : {64, 128}) {
      for (int warpgroups : {1, 2, 3}) {
        const CeilingShape shape{hd, keys, warpgroups};
        if (!has_prefill_ceiling(shape)) continue;
        add(absl::StrCat("prefill-ceiling/hd=", hd, "/keys=", keys, "/warpgroups=", warpgroups),
            [=](benchmark::State& st) { run_ceiling(st, shape); });
      }
    }
    const CeilingShape copying{hd, 64, 2, /*copies=*/true};
    add(absl::StrCat("prefill-ceiling-copies/hd=", hd, "/keys=64/warpgroups=2"),
        [=](benchmark::State& st) { run_ceiling(st, copying); });
    const CeilingShape softmax{hd, 64, 2, /*copies=*/true, /*softmax=*/true};
    add(absl::StrCat("prefill-ceiling-softmax/hd=", hd, "/keys=64/warpgroups=2"),
        [=](benchmark::State& st) { run_ceiling(st, softmax); });
    const CeilingShape folding{hd, 64, 2, /*copies=*/true, /*softmax=*/true, /*fold_every=*/4};
    add(absl::StrCat("prefill-ceiling-folds/hd=", hd, "/keys=64/warpgroups=2"),
        [=](benchmark::State& st) { run_ceiling(st, folding); });
    const CeilingShape folding_ahead{hd, 64, 2, /*copies=*/true, /*softmax=*/true, /*fold_every=*/4,
                                     /*fold_ahead=*/true};
    add(absl::StrCat("prefill-ceiling-folds-ahead/hd=", hd, "/keys=64/warpgroups=2"),
        [=](benchmark::State& st) { run_ceiling(st, folding_ahead); });
    for (bool ahead : {false, true}) {
      for (FoldBy by : {FoldBy::producer, FoldBy::nobody}) {
        const CeilingShape segment_ends{hd, 64, 2, /*copies=*/true, /*softmax=*/true, /*fold_every=*/4, ahead, by};
        add(absl::StrCat(by == FoldBy::producer ? "prefill-ceiling-folds-producer" : "prefill-ceiling-drains",
                         ahead ? "-ahead" : "", "/hd=", hd, "/keys=64/warpgroups=2"),
            [=](benchmark::State& st) { run_ceiling(st, segment_ends); });
      }
    }
    CeilingShape edges = softmax;
    edges.edges = true;
    add(absl::StrCat("prefill-ceiling-softmax-edges/hd=", hd, "/keys=64/warpgroups=2"),
        [=](benchmark::State& st) { run_ceiling(st, edges); });
    for (int item_visits : {32, 8}) {
      CeilingShape items = softmax;
      items.item_visits = item_visits;
      add(absl::StrCat("prefill-ceiling-softmax-items=", item_visits, "/hd=", hd, "/keys=64/warpgroups=2"),
          [=](benchmark::State& st) { run_ceiling(st, items); });
      // The same visits in one block per SM, drained every item_visits (a persistent kernel's items)
      const CeilingShape drains{hd, 64, 2, /*copies=*/true, /*softmax=*/true, item_visits, false, FoldBy::nobody};
      add(absl::StrCat("prefill-ceiling-drains-every=", item_visits, "/hd=", hd, "/keys=64/warpgroups=2"),
          [=](benchmark::State& st) { run_ceiling(st, drains); });
    }
    for (FoldBy by : {FoldBy::consumers, FoldBy::nobody}) {
      const CeilingShape staggered{hd, 64, 2, /*copies=*/true, /*softmax=*/true, /*fold_every=*/4, false, by, true};
      add(absl::StrCat(by == FoldBy::consumers ? "prefill-ceiling-folds" : "prefill-ceiling-drains", "-staggered/hd=",
                       hd, "/keys=64/warpgroups=2"),
          [=](benchmark::State& st) { run_ceiling(st, staggered); });
    }
  }
  // Other fixed split sizes for invariant mode (the plan's split_size replaced): what a smaller
  // kInvariantAttentionSplit would give small batches, and cost prefill; what a larger one would
  // cost small batches (and give prefill: prefill-split below).
  for (int split : {64, 128, 512, 1024}) {
    for (int seqs : {1, 4, 16, 64}) {
      for (int64_t context : {2048, 8192}) {
        add(absl::StrCat("decode-split=", split, "/invariant/batch=", seqs, "/context=", context),
            [=](benchmark::State& st) {
              run(st, Mode::kInvariant, seqs, context, 1, 128, false, AttentionRoute::kAuto, Burst::kNone, split);
            });
      }
    }
  }
  // The smaller splits at batch 1-4 as graph replays (-graph: the automatic route; -segment: the
  // segment kernel forced, whose four warps then hold a 128-key segment's two sub-blocks, or one):
  // beside decode-graph, what cuDNN's decode shape at batch 1 x 2048 (one block per 128 keys and kv
  // head: 128 blocks; bench/cuda/notes/decode-small-batches.md) would give under this contract.
  const std::pair<const char*, AttentionRoute> small_split_routes[] = {{"-graph", AttentionRoute::kAuto},
                                                                      {"-segment", AttentionRoute::kDecodeSegment}};
  for (int split : {64, 128}) {
    for (auto [suffix, route] : small_split_routes) {
      for (int seqs : {1, 4}) {
        for (int64_t context : {2048, 8192}) {
          add(absl::StrCat("decode-split=", split, suffix, "/invariant/batch=", seqs, "/context=", context),
              [=](benchmark::State& st) {
                run(st, Mode::kInvariant, seqs, context, 1, 128, true, route, Burst::kNone, split);
              });
        }
      }
    }
  }
  // Default mode (free of the invariant contract's split size) with cuDNN's shape at batch 1 x
  // 2048, 16 splits of 128 keys, and with 8 of 256 (invariant mode's), beside its own plan's 32 of
  // 64: graph replays on the automatic route and on the segment kernel.
  for (int count : {8, 16}) {
    for (auto [suffix, route] : small_split_routes) {
      for (int seqs : {1, 4}) {
        add(absl::StrCat("decode-split-count=", count, suffix, "/default/batch=", seqs, "/context=2048"),
            [=](benchmark::State& st) {
              How how;
              how.graph = true;
              how.route = route;
              how.split_count = count;
              run_how(st, Mode::kDefault, seqs, 2048, 1, 128, how);
            });
      }
    }
  }
  // The same for prefill, and larger splits: what invariant prefill's segment ends (a fold and a
  // restart every 256 keys) cost against fewer of them (8192: one segment per row at these chunks).
  for (int split : {64, 128, 512, 1024, 8192}) {
    for (int64_t chunk : {1024, 4096}) {
      add(absl::StrCat("prefill-split=", split, "/invariant/chunk=", chunk), [=](benchmark::State& st) {
        run(st, Mode::kInvariant, 1, chunk, chunk, 128, false, AttentionRoute::kAuto, Burst::kNone, split);
      });
    }
  }
  // The larger splits over a cached prefix too (head_dim 128 and 64), where invariant prefill's
  // rows pay segment ends over the prefix's keys as well: the rows the invariance target also reads.
  for (int split : {512, 1024}) {
    for (int hd : {128, 64}) {
      for (int64_t chunk : {1024, 4096}) {
        add(absl::StrCat("prefill-cached-split=", split, "/invariant/", hd == 128 ? "" : "hd=64/", "chunk=", chunk,
                         "/cached=", kCachedPrefix),
            [=](benchmark::State& st) {
              run(st, Mode::kInvariant, 1, kCachedPrefix + chunk, chunk, hd, false, AttentionRoute::kAuto, Burst::kNone,
                  split);
            });
      }
    }
  }
  // Default mode planned for other items per unit than kDefaultSplitItemsPerUnit (8): the units
  // scaled by items / 8.
  for (int items : {4, 16}) {
    for (int seqs : {1, 4, 16, 64}) {
      for (int64_t context : {2048, 8192}) {
        add(absl::StrCat("decode-items=", items, "/default/batch=", seqs, "/context=", context),
            [=](benchmark::State& st) {
              run(st, Mode::kDefault, seqs, context, 1, 128, false, AttentionRoute::kAuto, Burst::kNone, 0,
                  kDefaultParallelUnits * items / kDefaultSplitItemsPerUnit);
            });
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  // Decodes: the copy floor; prefill alone: the tensor-core floor; mixed: both, and the larger.
  std::printf("\n%-56s %10s %8s %8s %8s %8s\n", "attention", "us", "GB/s|TF", "frac", "frac_bw", "frac_tc");
  for (const auto& [name, c] : reporter.results()) {
    if (c.counters.count("us") == 0) continue;
    const bool decode = c.counters.count("frac_tc") == 0;
    const bool mixed = name.rfind("mixed", 0) == 0;
    std::printf("%-56s %10.1f %8.1f %8.3f", name.c_str(), c.counters.at("us"),
                decode ? c.counters.at("GBs") : c.counters.at("TFLOPs"),
                decode ? c.counters.at("frac_bw") : mixed ? c.counters.at("frac") : c.counters.at("frac_tc"));
    if (mixed) std::printf(" %8.3f %8.3f", c.counters.at("frac_bw"), c.counters.at("frac_tc"));
    std::printf("\n");
  }
  std::printf("device copy bandwidth: %.2f TB/s\n", copy_bandwidth() / 1e12);
  benchmark::Shutdown();
  return 0;
}
