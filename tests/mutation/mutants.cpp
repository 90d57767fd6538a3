// Each mutant replaces some ops of a copy of the real backend's table with the functions below,
// which plant their source and call the real ops. The sources are written as a batch-dependent
// (or call-dependent) choice, exactly the kind of choice invariant mode forbids.
#include "tests/mutation/mutants.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/fixed_math.h"
#include "kernels/gate_up_silu.h"
#include "kernels/plan.h"

namespace samebits::testing {
namespace {

struct State {
  const Backend* real = nullptr;
  VarianceSource source = VarianceSource::kSplitKByM;
  uint64_t calls = 0;  // linear calls, for the run-to-run source
  bool blind = false;  // default mode given the invariant plans instead of a source
  Backend table;
};

State& state() {
  static State* s = new State();
  return *s;
}

#define MUTANT_TRY(expr)                 \
  do {                                   \
    absl::Status _status = (expr);       \
    if (!_status.ok()) return _status;   \
  } while (0)

// Backend memory reused across calls, grown as needed.
struct Scratch {
  void* ptr = nullptr;
  size_t bytes = 0;
  absl::StatusOr<void*> get(const Backend& b, size_t want) {
    if (want <= bytes) return ptr;
    if (ptr) b.free(ptr);
    ptr = nullptr;
    bytes = 0;
    auto p = b.alloc(want);
    if (!p.ok()) return p.status();
    ptr = *p;
    bytes = want;
    return ptr;
  }
};

// linear with K cut into `parts` contiguous parts (K % (16 * parts) == 0, else fewer parts): each
// part's x and w columns gathered by the embedding op (x viewed as [M * parts, K / parts]), reduced
// by the real backend's linear (invariant plan) into fp32, then the part sums added in part order
// on the host, + bias, rounded. Works on every backend, from its own ops.
absl::Status split_linear(const ExecContext& ctx, const LinearArgs& a, int parts) {
  const Backend& b = *state().real;
  while (parts > 1 && a.K % (16 * parts) != 0) parts /= 2;
  LinearArgs plain = a;
  plain.plan = MatmulPlan{};
  if (parts <= 1) return b.linear(ctx, plain);
  static Scratch ids_buf, x_buf, w_buf, y_buf;
  const int64_t M = a.M, N = a.N, K = a.K, Kp = K / parts, rows = std::max(M, N);
  auto ids_mem = ids_buf.get(b, size_t(rows) * sizeof(int32_t));
  auto x_mem = x_buf.get(b, size_t(M * Kp) * sizeof(bf16));
  auto w_mem = w_buf.get(b, size_t(N * Kp) * sizeof(bf16));
  auto y_mem = y_buf.get(b, size_t(M * N) * sizeof(float));
  for (auto* m : {&ids_mem, &x_mem, &w_mem, &y_mem})
    if (!m->ok()) return m->status();
  int32_t* ids = static_cast<int32_t*>(*ids_mem);
  std::vector<float> sum(size_t(M * N)), part(size_t(M * N));
  std::vector<int32_t> host_ids(static_cast<size_t>(rows));
  auto gather = [&](const bf16* table, int64_t count, bf16* out) {
    EmbeddingArgs g;
    g.ids = ids, g.T = count, g.table = table, g.vocab = count * parts, g.dim = Kp, g.y = out;
    return b.embedding(ctx, g);
  };
  for (int p = 0; p < parts; ++p) {
    for (int64_t r = 0; r < rows; ++r) host_ids[size_t(r)] = int32_t(r * parts + p);
    MUTANT_TRY(b.upload(ids, host_ids.data(), size_t(rows) * sizeof(int32_t)));
    MUTANT_TRY(gather(a.x, M, static_cast<bf16*>(*x_mem)));
    MUTANT_TRY(gather(a.w, N, static_cast<bf16*>(*w_mem)));
    LinearArgs one;
    one.x = static_cast<bf16*>(*x_mem), one.w = static_cast<bf16*>(*w_mem), one.M = M, one.N = N, one.K = Kp;
    one.y_f32 = static_cast<float*>(*y_mem);
    MUTANT_TRY(b.linear(ctx, one));
    MUTANT_TRY(b.synchronize(ctx));
    MUTANT_TRY(b.download(p == 0 ? sum.data() : part.data(), *y_mem, sum.size() * sizeof(float)));
    if (p > 0)
      for (size_t i = 0; i < sum.size(); ++i) sum[i] = sum[i] + part[i];
  }
  if (a.bias != nullptr) {
    std::vector<bf16> bias(static_cast<size_t>(N));
    MUTANT_TRY(b.download(bias.data(), a.bias, bias.size() * sizeof(bf16)));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) sum[size_t(m * N + n)] = sum[size_t(m * N + n)] + to_float(bias[size_t(n)]);
  }
  if (a.y_f32 != nullptr) return b.upload(a.y_f32, sum.data(), sum.size() * sizeof(float));
  std::vector<bf16> out(sum.size());
  for (size_t i = 0; i < sum.size(); ++i) out[i] = to_bf16(sum[i]);
  return b.upload(a.y, out.data(), out.size() * sizeof(bf16));
}

// Runs the real linear, then edits the fp32 logits (lm_head output) on the host.
template <typename Edit>
absl::Status edit_logits(const ExecContext& ctx, const LinearArgs& a, Edit&& edit) {
  const Backend& b = *state().real;
  MUTANT_TRY(b.linear(ctx, a));
  if (a.y_f32 == nullptr) return absl::OkStatus();
  std::vector<float> y(size_t(a.M * a.N));
  MUTANT_TRY(b.synchronize(ctx));
  MUTANT_TRY(b.download(y.data(), a.y_f32, y.size() * sizeof(float)));
  if (!edit(&y)) return absl::OkStatus();
  return b.upload(a.y_f32, y.data(), y.size() * sizeof(float));
}

int floor_pow2(int64_t x) {
  int p = 1;
  while (int64_t(p) * 2 <= x) p *= 2;
  return p;
}

absl::Status mutant_linear(const ExecContext& ctx, const LinearArgs& a) {
  State& s = state();
  const Backend& b = *s.real;
  ++s.calls;
  if (s.blind) {
    LinearArgs m = a;
    m.plan = MatmulPlan{};
    return b.linear(ctx, m);
  }
  switch (s.source) {
    case VarianceSource::kSplitKByM:
      return split_linear(ctx, a, plan_matmul(Mode::kDefault, a.M, a.N, a.K, ctx.parallel_units).split_k);
    case VarianceSource::kGemmAlgorithmByM:
      // Two algorithms, switched at M = 16: below, the real kernel (one in-order chain over K);
      // from 16 rows on, a split-K algorithm (two K parts, added in order), the switch cuBLASLt's
      // heuristics make at larger shapes. (cuBLASLt itself is no variance source at the tiny
      // model's shapes: there it picks in-order kernels, bitwise equal to our own; measured on
      // the H200, where planting "cuBLASLt from M = 16 on" left every bit unchanged.)
      return a.M >= 16 ? split_linear(ctx, a, 2) : b.linear(ctx, a);
    case VarianceSource::kThreadCountOrder:
      return split_linear(ctx, a, floor_pow2(std::clamp(ctx.num_threads, 1, 8)));
    case VarianceSource::kAtomicOrder: {
      // Whichever worker finishes first adds first: modelled as a part count drawn per call.
      const uint64_t draw = uint64_t(sampling_uniform(0xA70A1C, s.calls) * 3);
      return split_linear(ctx, a, 1 << draw);
    }
    case VarianceSource::kLogprobDrift:
      return edit_logits(ctx, a, [&](std::vector<float>* y) {
        if (a.M < 2) return false;
        const float shift = float(a.M - 1) * 0x1p-12f;
        for (float& v : *y) v = v + shift;
        return true;
      });
    case VarianceSource::kOneUlpInLargeBatch:
      return edit_logits(ctx, a, [&](std::vector<float>* y) {
        if (a.M < 3) return false;
        float& v = (*y)[7 % size_t(a.N)];  // row 0, one logit
        v = std::nextafter(v, INFINITY);
        return true;
      });
    default:
      return b.linear(ctx, a);
  }
}

// The MLP's gate_up_silu by its parts, its linear through the mutant (the real silu_mul after it).
absl::Status mutant_gate_up_silu(const ExecContext& ctx, const GateUpSiluArgs& a) {
  return gate_up_silu_by_parts(mutant_linear, state().real->silu_mul, ctx, a);
}

absl::Status mutant_rmsnorm(const ExecContext& ctx, const RmsNormArgs& a) {
  RmsNormArgs m = a;
  if (state().blind) m.plan = RowReducePlan{};
  else if (state().source == VarianceSource::kRmsNormSplitFewRows)
    m.plan = plan_row_reduce(Mode::kDefault, a.rows, a.dim, ctx.parallel_units);
  return state().real->rmsnorm(ctx, m);
}

// The q/k head norms inside qkv_prep carry their own plans: the same source planted there.
absl::Status mutant_qkv_prep(const ExecContext& ctx, const QkvPrepArgs& a) {
  QkvPrepArgs m = a;
  if (state().blind) {
    m.q_plan = m.k_plan = RowReducePlan{};
  } else if (state().source == VarianceSource::kRmsNormSplitFewRows) {
    m.q_plan = plan_row_reduce(Mode::kDefault, a.T * a.num_q_heads, a.head_dim, ctx.parallel_units);
    m.k_plan = plan_row_reduce(Mode::kDefault, a.T * a.num_kv_heads, a.head_dim, ctx.parallel_units);
  }
  return state().real->qkv_prep(ctx, m);
}

absl::Status mutant_attention(const ExecContext& ctx, const AttentionArgs& a) {
  const Backend& b = *state().real;
  AttentionArgs m = a;
  if (state().blind) {
    m.plan = AttentionPlan{};
    return b.attention(ctx, m);
  }
  const int32_t* qs = a.host_query_start;
  const int32_t* lens = a.host_context_lens;
  std::vector<int32_t> qs_read, lens_read;
  if ((qs == nullptr || lens == nullptr) && a.num_seqs > 0 && a.query_start != nullptr && a.context_lens != nullptr) {
    // The model passes no host mirrors (the work list is built on the device): the planted
    // source reads the batch back, a wait a test backend can afford (a mutant records no graphs:
    // mutant_backend).
    qs_read.resize(size_t(a.num_seqs) + 1);
    lens_read.resize(size_t(a.num_seqs));
    if (absl::Status s = b.download(qs_read.data(), a.query_start, qs_read.size() * sizeof(int32_t)); !s.ok()) return s;
    if (absl::Status s = b.download(lens_read.data(), a.context_lens, lens_read.size() * sizeof(int32_t)); !s.ok()) {
      return s;
    }
    qs = qs_read.data();
    lens = lens_read.data();
  }
  if (qs == nullptr || lens == nullptr || a.num_seqs == 0) return b.attention(ctx, a);
  int64_t max_q = 0, max_context = 0;
  for (int s = 0; s < a.num_seqs; ++s) {
    max_q = std::max<int64_t>(max_q, qs[s + 1] - qs[s]);
    max_context = std::max<int64_t>(max_context, lens[s]);
  }
  switch (state().source) {
    case VarianceSource::kAttentionSplitCount:
      m.plan = plan_attention(Mode::kDefault, a.num_seqs, a.num_kv_heads, max_context, ctx.parallel_units);
      m.plan.separate_new_keys = false;
      break;
    case VarianceSource::kSeparateNewKeys:
      m.plan = AttentionPlan{AttentionPlan::Kind::kSplitCount, 1, kInvariantAttentionSplit, true};
      break;
    case VarianceSource::kUnalignedSplits: {
      // Split size = where the first sequence's new tokens start (its cached length).
      const int64_t cached = lens[0] - (qs[1] - qs[0]);
      m.plan.split_size = cached > 0 ? int(std::min<int64_t>(cached, kInvariantAttentionSplit)) : kInvariantAttentionSplit;
      break;
    }
    case VarianceSource::kTileByQueryLength:
      m.plan.split_size = max_q > 16 ? 32 : 64;
      break;
    case VarianceSource::kDecodeOnlyKernel:
      if (max_q == 1) m.plan = AttentionPlan{AttentionPlan::Kind::kSplitCount, 2, kInvariantAttentionSplit, false};
      break;
    default:
      break;
  }
  return b.attention(ctx, m);
}

absl::Status mutant_sample(const ExecContext& ctx, const SampleArgs& a) {
  if (state().blind || state().source != VarianceSource::kRngByBatchRow) return state().real->sample(ctx, a);
  std::vector<SamplingRow> rows(a.params, a.params + a.rows);
  for (int64_t r = 0; r < a.rows; ++r) rows[size_t(r)].uniform = sampling_uniform(0x5EED, uint64_t(r));
  SampleArgs m = a;
  m.params = rows.data();
  return state().real->sample(ctx, m);
}

}  // namespace

const std::vector<Mutant>& all_mutants() {
  using V = VarianceSource;
  static const std::vector<Mutant> kAll = {
      {V::kSplitKByM, "split-K by M", "linear: K split into plan_matmul(default, M).split_k parts"},
      {V::kRmsNormSplitFewRows, "rmsnorm split rows", "rmsnorm: rows split into parts when rows are few",
       /*gate_marginal=*/true},
      {V::kAttentionSplitCount, "split-KV count", "attention: split COUNT chosen from the batch"},
      {V::kSeparateNewKeys, "cached/new apart", "attention: prefill reduces cached and new keys apart"},
      {V::kUnalignedSplits, "unaligned splits", "attention: split boundaries at the chunk start"},
      {V::kTileByQueryLength, "tile by q length", "attention: split size from the longest query"},
      {V::kDecodeOnlyKernel, "decode-only kernel", "attention: other kernel when all rows decode"},
      {V::kGemmAlgorithmByM, "GEMM algo by M", "linear: a split-K algorithm from M = 16 on"},
      {V::kThreadCountOrder, "thread-count order", "linear: K parts = thread count"},
      {V::kAtomicOrder, "atomic order", "linear: K parts drawn per call (run-to-run)"},
      {V::kRngByBatchRow, "RNG by batch row", "sample: uniform keyed by batch row"},
      {V::kLogprobDrift, "logprob drift", "logits shifted by (rows - 1) * 2^-12"},
      {V::kOneUlpInLargeBatch, "one ulp, >= 3 rows", "one logit of row 0 one ulp up when >= 3 rows"},
  };
  return kAll;
}

const Backend& mutant_backend(const Backend& real, VarianceSource source) {
  State& s = state();
  s.real = &real;
  s.source = source;
  s.blind = false;
  s.calls = 0;
  s.table = real;
  s.table.description = real.description + " [mutant]";
  s.table.linear = mutant_linear;
  s.table.gate_up_silu = mutant_gate_up_silu;
  s.table.rmsnorm = mutant_rmsnorm;
  s.table.qkv_prep = mutant_qkv_prep;
  s.table.attention = mutant_attention;
  s.table.sample = mutant_sample;
  // The planted ops read and write device memory from the host between launches (split_linear,
  // edit_logits, the attention mutants' layout reads), which a CUDA graph cannot record: without
  // capture functions the engine runs every step op by op instead of trying to record a graph that
  // fails (the model falls back to that anyway, after the capture's failed API calls, which
  // compute-sanitizer's memcheck counts as errors). No bit depends on it: invariant mode's rows
  // are the same with and without graphs (GpuGraphs), default mode records exact shapes only.
  s.table.capture_begin = nullptr;
  s.table.capture_end = nullptr;
  s.table.graph_launch = nullptr;
  s.table.graph_free = nullptr;
  return s.table;
}

const Backend& blind_backend(const Backend& real) {
  const Backend& table = mutant_backend(real, VarianceSource::kSplitKByM);
  state().blind = true;
  state().table.description = real.description + " [blind]";
  return table;
}

}  // namespace samebits::testing
