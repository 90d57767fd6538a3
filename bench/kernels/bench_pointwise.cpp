// The pointwise ops in both modes (one order in both: the ratio should be ~1): rope on q and k,
// silu_mul over the ffn width, embedding lookup. Tiny and Qwen3-0.6B shapes, M tokens. Names:
// <op>/<mode>/<model>/M:<M>.
#include <string>
#include <vector>

#include "bench/kernels/bench_common.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/fixed_math.h"

namespace samebits::bench {
namespace {

struct ModelShape {
  const char* name;
  int64_t hidden, ffn, vocab;
  int q_heads, kv_heads, head_dim;
};
const ModelShape kModels[] = {{"tiny", 256, 768, 258, 4, 2, 64}, {"qwen06", 1024, 3072, 151936, 16, 8, 128}};
constexpr int64_t kMaxPosition = 4096;

void bench_rope(benchmark::State& st, Mode mode, const ModelShape& m, int64_t T) {
  auto q = seeded_bf16(size_t(T * m.q_heads * m.head_dim), 1);
  auto k = seeded_bf16(size_t(T * m.kv_heads * m.head_dim), 2);
  std::vector<int32_t> positions(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) positions[t] = int32_t((t * 31) % kMaxPosition);
  const auto table = make_rope_table(1e6, m.head_dim, kMaxPosition);
  RopeArgs a{q.data(), k.data(), positions.data(), T, m.q_heads, m.kv_heads, m.head_dim, table.data(), kMaxPosition};
  const ExecContext ctx = bench_ctx(mode);
  for (auto _ : st) {
    SAMEBITS_BENCH_CHECK(cpu_rope(ctx, a));
    benchmark::ClobberMemory();
  }
}

void bench_silu_mul(benchmark::State& st, Mode mode, const ModelShape& m, int64_t T) {
  auto g = seeded_bf16(size_t(T * m.ffn), 1, 4.f);
  auto u = seeded_bf16(size_t(T * m.ffn), 2);
  std::vector<bf16> y(size_t(T * m.ffn));
  SiluMulArgs a{g.data(), u.data(), T, m.ffn, y.data()};
  const ExecContext ctx = bench_ctx(mode);
  for (auto _ : st) {
    SAMEBITS_BENCH_CHECK(cpu_silu_mul(ctx, a));
    benchmark::ClobberMemory();
  }
}

void bench_embedding(benchmark::State& st, Mode mode, const ModelShape& m, int64_t T) {
  auto table = seeded_bf16(size_t(m.vocab * m.hidden), 1);
  std::vector<int32_t> ids(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) ids[t] = int32_t((t * 7919) % m.vocab);
  std::vector<bf16> y(size_t(T * m.hidden));
  EmbeddingArgs a{ids.data(), T, table.data(), m.vocab, m.hidden, y.data()};
  const ExecContext ctx = bench_ctx(mode);
  for (auto _ : st) {
    SAMEBITS_BENCH_CHECK(cpu_embedding(ctx, a));
    benchmark::ClobberMemory();
  }
}

const bool kRegistered = [] {
  for (const ModelShape& m : kModels) {
    for (int64_t T : {1, 16, 128, 512}) {
      const std::string rest = std::string(m.name) + "/M:" + std::to_string(T);
      register_both_modes("rope", rest, [&m, T](benchmark::State& st, Mode mode) { bench_rope(st, mode, m, T); });
      register_both_modes("silu_mul", rest, [&m, T](benchmark::State& st, Mode mode) { bench_silu_mul(st, mode, m, T); });
      register_both_modes("embedding", rest, [&m, T](benchmark::State& st, Mode mode) { bench_embedding(st, mode, m, T); });
    }
  }
  return true;
}();

}  // namespace
}  // namespace samebits::bench
