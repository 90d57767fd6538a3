// Arguments of every op. Pointers are backend memory (host memory for the CPU backend, device
// memory for CUDA). All tensors are dense, row-major, with the shapes given in the comments.
// Every op takes the mode through the ExecContext. Ops whose reduction order the batch may change
// take an explicit plan in their arguments (kernels/plan.h), built by the caller (the model) from
// the mode and the batch: the kernels execute the plan they are given and decide nothing else, so a
// test can see, force or vary every default-mode decision. A default-constructed plan is the
// invariant one.
#pragma once
#include <cstdint>

#include "kernels/bf16.h"
#include "kernels/mode.h"
#include "kernels/plan.h"

namespace samebits {

class OpTimer;  // kernels/op_timer.h

struct ExecContext {
  Mode mode = Mode::kInvariant;
  int parallel_units = kDefaultParallelUnits;  // what default-mode planners size their splits for
  int num_threads = 0;                         // CPU backend: 0 = OpenMP's default
  void* stream = nullptr;                      // CUDA backend: cudaStream_t (nullptr = default stream)
  OpTimer* timer = nullptr;                    // per-op timing (kernels/op_timer.h); nullptr = off
};

// y[M,N] = x[M,K] · w[N,K]^T (+ bias[N]). Exactly one of y (bf16) and y_f32 is non-null.
struct LinearArgs {
  const bf16* x = nullptr;
  const bf16* w = nullptr;
  const bf16* bias = nullptr;  // optional (Qwen2 q/k/v)
  int64_t M = 0, N = 0, K = 0;
  MatmulPlan plan;  // plan_matmul(mode, M, N, K, parallel_units)
  bf16* y = nullptr;
  float* y_f32 = nullptr;
};

// y = rmsnorm(x (+ residual)) * weight over rows of length dim.
// With residual != nullptr the op first forms h = bf16(x + residual), stores h into residual
// (the new residual stream), then normalises h. As HF: y = bf16(bf16(h * rsqrt(mean(h^2)+eps)) * w).
struct RmsNormArgs {
  const bf16* x = nullptr;       // [rows, dim]
  bf16* residual = nullptr;      // [rows, dim], optional, in/out
  const bf16* weight = nullptr;  // [dim]
  int64_t rows = 0, dim = 0;
  float eps = 1e-6f;
  RowReducePlan plan;            // plan_row_reduce(mode, rows, dim, parallel_units)
  bf16* y = nullptr;             // [rows, dim]; may alias x
};

// Rotary embedding (NeoX / HF rotate_half layout), in place on q and k.
// table: [max_position, head_dim] fp32, first head_dim/2 entries cos, next head_dim/2 sin.
struct RopeArgs {
  bf16* q = nullptr;  // [T, num_q_heads, head_dim]
  bf16* k = nullptr;  // [T, num_kv_heads, head_dim]
  const int32_t* positions = nullptr;  // [T]
  int64_t T = 0;
  int num_q_heads = 0, num_kv_heads = 0, head_dim = 0;
  const float* table = nullptr;
  int64_t max_position = 0;
};

// y[T,F] = silu(gate[T,F]) * up[T,F]. group = 0: gate and up are [T,F] each. group = g > 0: gate
// and up point into one [T, 2F] row-major buffer whose columns alternate g gate and g up columns
// (up == gate + g), the output of a linear on gate/up weights interleaved by gate_up_weight_row.
struct SiluMulArgs {
  const bf16* gate = nullptr;
  const bf16* up = nullptr;
  int64_t T = 0, F = 0;
  bf16* y = nullptr;
  int64_t group = 0;
};

// The MLP's gate and up projections as one op: y[M,F] = silu(x·gate^T) * (x·up^T), each projection
// rounded to bf16 as linear rounds it, then silu_mul's arithmetic. w [2F, K] holds the two weights
// interleaved in groups of kGateUpGroup rows (gate_up_weight_row), F % kGateUpGroup == 0. Same bits
// as linear (on w, or on gate and up apart) followed by silu_mul: a backend may fuse the two
// (CUDA, invariant mode) or run them in turn through `gate_up` ([M, 2F] scratch).
inline constexpr int64_t kGateUpGroup = 8;
// The row of w [2F, K] that holds row f of gate (up = false) or of up.
inline constexpr int64_t gate_up_weight_row(int64_t f, bool up) {
  return f / kGateUpGroup * 2 * kGateUpGroup + (up ? kGateUpGroup : 0) + f % kGateUpGroup;
}
struct GateUpSiluArgs {
  const bf16* x = nullptr;  // [M, K]
  const bf16* w = nullptr;  // [2F, K], interleaved
  int64_t M = 0, F = 0, K = 0;
  MatmulPlan plan;          // plan_matmul(mode, M, 2F, K, parallel_units)
  bf16* gate_up = nullptr;  // [M, 2F] scratch; unused where the backend fuses
  bf16* y = nullptr;        // [M, F]
};

// y[T,dim] = table[ids[T], :]
struct EmbeddingArgs {
  const int32_t* ids = nullptr;
  int64_t T = 0;
  const bf16* table = nullptr;  // [vocab, dim]
  int64_t vocab = 0, dim = 0;
  bf16* y = nullptr;
};

// Paged KV cache: k_cache/v_cache [num_blocks, block_size, num_kv_heads, head_dim].
// Token t is written to slot slot_mapping[t] = block * block_size + offset; slot -1 skips it.
struct KvWriteArgs {
  const bf16* k = nullptr;  // [T, num_kv_heads, head_dim]
  const bf16* v = nullptr;
  const int64_t* slot_mapping = nullptr;  // [T]
  int64_t T = 0;
  int num_kv_heads = 0, head_dim = 0;
  bf16* k_cache = nullptr;
  bf16* v_cache = nullptr;
  int64_t num_slots = 0;  // num_blocks * block_size, for bounds checks
};

// One step's q|k|v projection rows made into attention's inputs, per head: the q/k head rmsnorm
// (Qwen3's q_norm / k_norm, as RmsNormArgs over rows of head_dim), then rope (as RopeArgs), then
// K and V written to the paged cache (as KvWriteArgs); q, k and v are stored dense. Each stage is
// optional, so the stages can also run one call at a time (the same arithmetic per element: the
// fused and the staged calls give the same bits). Token t's head h is read at
// x_in + t * stride + h * head_dim: the three inputs may be column ranges of one fused projection
// output, or dense buffers (then the outputs may be the inputs themselves).
struct QkvPrepArgs {
  const bf16* q_in = nullptr;  // [T, q_stride], heads [0, num_q_heads)
  const bf16* k_in = nullptr;  // [T, kv_stride], heads [0, num_kv_heads)
  const bf16* v_in = nullptr;  // [T, kv_stride]
  int64_t q_stride = 0, kv_stride = 0;  // elements between consecutive tokens
  int64_t T = 0;
  int num_q_heads = 0, num_kv_heads = 0, head_dim = 0;
  // Head rmsnorm: both weights [head_dim] or neither (skipped). Plans as plan_row_reduce(mode,
  // T * heads, head_dim, parallel_units).
  const bf16* q_norm = nullptr;
  const bf16* k_norm = nullptr;
  float eps = 1e-6f;
  RowReducePlan q_plan, k_plan;
  // Rope: skipped when positions is null.
  const int32_t* positions = nullptr;  // [T]
  const float* table = nullptr;
  int64_t max_position = 0;
  // KV write: skipped when k_cache is null.
  const int64_t* slot_mapping = nullptr;  // [T]
  bf16* k_cache = nullptr;
  bf16* v_cache = nullptr;
  int64_t num_slots = 0;
  // True when the caller has checked that no two tokens name the same slot >= 0 (the model's
  // batches: check_forward_batch). Then a backend may skip looking for a later token naming a
  // token's slot (last wins); the results are the same either way.
  bool slots_distinct = false;
  bf16* q = nullptr;  // [T, num_q_heads, head_dim]
  bf16* k = nullptr;  // [T, num_kv_heads, head_dim]
  bf16* v = nullptr;
};

// Causal paged attention over a varlen batch: sequence s owns query tokens
// [query_start[s], query_start[s+1]); its context (cached + new keys) has context_lens[s] keys, so
// its i-th query of q_len sits at absolute position context_lens[s] - q_len + i and sees keys
// [0, position]. Keys and values are read through block_tables[s * max_blocks_per_seq + j]
// (physical block of logical block j). The step's own K/V have already been written to the cache;
// k_new/v_new hold them too, for plans with separate_new_keys. GQA: q head h uses kv head
// h / (num_q_heads / num_kv_heads).
struct AttentionArgs {
  const bf16* q = nullptr;      // [T, num_q_heads, head_dim]
  const bf16* k_new = nullptr;  // [T, num_kv_heads, head_dim]
  const bf16* v_new = nullptr;
  const bf16* k_cache = nullptr;
  const bf16* v_cache = nullptr;
  const int32_t* query_start = nullptr;   // [num_seqs + 1]
  const int32_t* context_lens = nullptr;  // [num_seqs]
  const int32_t* block_tables = nullptr;  // [num_seqs, max_blocks_per_seq]
  int num_seqs = 0;
  int max_blocks_per_seq = 0;
  int64_t T = 0;
  int num_q_heads = 0, num_kv_heads = 0, head_dim = 0;
  int block_size = 0;
  int64_t num_blocks = 0;  // blocks in k_cache/v_cache: block table entries lie in [0, num_blocks)
  float scale = 0.f;  // usually 1/sqrt(head_dim)
  AttentionPlan plan;
  bf16* out = nullptr;  // [T, num_q_heads, head_dim]
  // Optional host copies of query_start and context_lens (same contents). The CUDA backend sizes
  // its launches exactly from them; without them it sizes them from bounds on the shapes (T,
  // num_seqs, max_blocks_per_seq) and derives the work on the device: no synchronisation, and the
  // same launches for every batch of those shapes (capturable in a CUDA graph). The CPU backend
  // ignores them.
  const int32_t* host_query_start = nullptr;
  const int32_t* host_context_lens = nullptr;
};

// out[r] = the lowest id among the maxima of logits[r, :] (NaN never wins).
struct ArgmaxArgs {
  const float* logits = nullptr;  // [rows, vocab]
  int64_t rows = 0, vocab = 0;
  int32_t* out = nullptr;  // [rows]
};

// Per-row sampling parameters. temperature == 0 means greedy (argmax).
struct SamplingRow {
  float temperature = 0.f;
  int32_t top_k = 0;    // 0 = all
  float top_p = 1.f;    // 1 = all
  double uniform = 0.;  // in [0,1): sampling_uniform(seed, step), computed on the host
};

// Seeded sampling: candidates ordered by (logit desc, id asc); top-k, then softmax(logit/T) over
// the kept ones summed in that order, then top-p (smallest prefix whose mass >= top_p), then the
// first candidate whose cumulative mass exceeds uniform * kept mass.
struct SampleArgs {
  const float* logits = nullptr;  // [rows, vocab]
  int64_t rows = 0, vocab = 0;
  const SamplingRow* params = nullptr;  // [rows], host memory on every backend
  int32_t* out = nullptr;               // [rows]
};

}  // namespace samebits
