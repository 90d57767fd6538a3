// Paged attention and KV write, both modes, at the tiny model's shape (4q/2kv, head_dim 64) and
// Qwen3-0.6B's (16q/8kv, head_dim 128), block size 16:
//   attention_decode/<mode>/<model>/batch:B/ctx:C    B decodes at context C (B in 1, 16, 64)
//   attention_prefill/<mode>/<model>/chunk:Q/cached:P one sequence, Q new tokens over P cached
//   kv_write/<mode>/<model>/tokens:T
// The KV of every step is written before timing; only the attention call is timed. The plan comes
// from plan_attention(mode, ...) exactly as the model asks for it.
#include <cmath>
#include <string>
#include <vector>

#include "bench/kernels/bench_common.h"
#include "kernels/cpu/cpu_ops.h"

namespace samebits::bench {
namespace {

struct BenchShape {
  const char* name;
  int num_q_heads, num_kv_heads, head_dim;
};
constexpr BenchShape kTiny{"tiny", 4, 2, 64};
constexpr BenchShape kQwen06{"qwen06", 16, 8, 128};
constexpr int kBlockSize = 16;

// One step over `batch` sequences, each with `cached` keys in the cache and `q_len` new tokens.
struct AttentionStep {
  std::vector<bf16> q, k_new, v_new, k_cache, v_cache, out;
  std::vector<int32_t> query_start, context_lens, block_tables;
  AttentionArgs args;

  AttentionStep(const BenchShape& shape, Mode mode, int batch, int64_t cached, int64_t q_len) {
    const int64_t context = cached + q_len;
    const int blocks_per_seq = int((context + kBlockSize - 1) / kBlockSize);
    const int64_t num_blocks = int64_t(batch) * blocks_per_seq;
    const int64_t kv_row = int64_t(shape.num_kv_heads) * shape.head_dim;
    const int64_t T = int64_t(batch) * q_len;
    q = seeded_bf16(size_t(T * shape.num_q_heads * shape.head_dim), 1);
    k_new = seeded_bf16(size_t(T * kv_row), 2);
    v_new = seeded_bf16(size_t(T * kv_row), 3);
    k_cache = seeded_bf16(size_t(num_blocks * kBlockSize * kv_row), 4);
    v_cache = seeded_bf16(size_t(num_blocks * kBlockSize * kv_row), 5);
    out.resize(q.size());
    query_start.push_back(0);
    for (int s = 0; s < batch; ++s) {
      query_start.push_back(int32_t((s + 1) * q_len));
      context_lens.push_back(int32_t(context));
      // Interleaved physical blocks, as sequences that grew side by side would own.
      for (int b = 0; b < blocks_per_seq; ++b) block_tables.push_back(b * batch + s);
    }
    args.q = q.data();
    args.k_new = k_new.data();
    args.v_new = v_new.data();
    args.k_cache = k_cache.data();
    args.v_cache = v_cache.data();
    args.query_start = query_start.data();
    args.context_lens = context_lens.data();
    args.block_tables = block_tables.data();
    args.num_seqs = batch;
    args.max_blocks_per_seq = blocks_per_seq;
    args.T = T;
    args.num_q_heads = shape.num_q_heads;
    args.num_kv_heads = shape.num_kv_heads;
    args.head_dim = shape.head_dim;
    args.block_size = kBlockSize;
    args.num_blocks = num_blocks;
    args.scale = float(1.0 / std::sqrt(double(shape.head_dim)));
    args.plan = plan_attention(mode, batch, shape.num_kv_heads, context, kDefaultParallelUnits);
    args.out = out.data();
  }
};

void run_attention(benchmark::State& st, Mode mode, const BenchShape& shape, int batch, int64_t cached,
                   int64_t q_len) {
  AttentionStep step(shape, mode, batch, cached, q_len);
  const ExecContext ctx = bench_ctx(mode);
  for (auto _ : st) {
    SAMEBITS_BENCH_CHECK(cpu_attention(ctx, step.args));
    benchmark::DoNotOptimize(step.out.data());
    benchmark::ClobberMemory();
  }
  // Keys read per query, summed over the batch and the q heads: the work that scales.
  int64_t query_keys = 0;
  for (int64_t i = 0; i < q_len; ++i) query_keys += cached + i + 1;
  st.counters["keys/s"] = benchmark::Counter(double(query_keys * batch * shape.num_q_heads),
                                             benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(step.args.plan.describe());
}

void run_kv_write(benchmark::State& st, Mode mode, const BenchShape& shape, int64_t tokens) {
  const int64_t kv_row = int64_t(shape.num_kv_heads) * shape.head_dim;
  std::vector<bf16> k = seeded_bf16(size_t(tokens * kv_row), 1), v = seeded_bf16(size_t(tokens * kv_row), 2);
  std::vector<bf16> k_cache(size_t(2 * tokens * kv_row)), v_cache(k_cache.size());
  std::vector<int64_t> slots(static_cast<size_t>(tokens));
  for (int64_t t = 0; t < tokens; ++t) slots[size_t(t)] = 2 * tokens - 1 - t;
  KvWriteArgs a;
  a.k = k.data();
  a.v = v.data();
  a.slot_mapping = slots.data();
  a.T = tokens;
  a.num_kv_heads = shape.num_kv_heads;
  a.head_dim = shape.head_dim;
  a.k_cache = k_cache.data();
  a.v_cache = v_cache.data();
  a.num_slots = 2 * tokens;
  const ExecContext ctx = bench_ctx(mode);
  for (auto _ : st) {
    SAMEBITS_BENCH_CHECK(cpu_kv_write(ctx, a));
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * 2 * tokens * kv_row * int64_t(sizeof(bf16)));
}

const bool kRegistered = [] {
  for (const BenchShape* shape : {&kTiny, &kQwen06}) {
    const std::string model = shape->name;
    for (int batch : {1, 16, 64}) {
      for (int64_t context : {128, 512, 2048}) {
        register_both_modes("attention_decode",
                            model + "/batch:" + std::to_string(batch) + "/ctx:" + std::to_string(context),
                            [=](benchmark::State& st, Mode mode) {
                              run_attention(st, mode, *shape, batch, context - 1, 1);
                            });
      }
    }
    for (int64_t chunk : {64, 256, 512}) {
      for (int64_t cached : {0, 512}) {
        register_both_modes("attention_prefill",
                            model + "/chunk:" + std::to_string(chunk) + "/cached:" + std::to_string(cached),
                            [=](benchmark::State& st, Mode mode) { run_attention(st, mode, *shape, 1, cached, chunk); });
      }
    }
    for (int64_t tokens : {1, 64, 512}) {
      register_both_modes("kv_write", model + "/tokens:" + std::to_string(tokens),
                          [=](benchmark::State& st, Mode mode) { run_kv_write(st, mode, *shape, tokens); });
    }
  }
  return true;
}();

}  // namespace
}  // namespace samebits::bench
