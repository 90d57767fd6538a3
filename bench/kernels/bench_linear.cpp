// linear in both modes at the tiny model's shapes (hidden 256, ffn 768, 4q/2kv heads of 64,
// vocab 258) and Qwen3-0.6B's (hidden 1024, ffn 3072, 16q/8kv heads of 128, vocab 151936; lm_head
// only at M <= 16). Names: linear/<mode>/<model>_<layer>/M:<M>. Reports GFLOP/s.
#include <string>
#include <vector>

#include "bench/kernels/bench_common.h"
#include "kernels/cpu/cpu_ops.h"

namespace samebits::bench {
namespace {

struct LinearShape {
  const char* name;
  int64_t N, K;
  bool logits;  // fp32 output
  int64_t max_M;
};

const LinearShape kShapes[] = {
    {"tiny_qkv", 512, 256, false, 512},         {"tiny_o", 256, 256, false, 512},
    {"tiny_gate_up", 1536, 256, false, 512},    {"tiny_down", 256, 768, false, 512},
    {"tiny_lm_head", 258, 256, true, 512},      {"qwen06_qkv", 4096, 1024, false, 512},
    {"qwen06_o", 1024, 2048, false, 512},       {"qwen06_gate_up", 6144, 1024, false, 512},
    {"qwen06_down", 1024, 3072, false, 512},    {"qwen06_lm_head", 151936, 1024, true, 16},
};

void bench_linear(benchmark::State& st, Mode mode, const LinearShape& s, int64_t M) {
  auto x = seeded_bf16(size_t(M * s.K), 1);
  auto w = seeded_bf16(size_t(s.N * s.K), 2, 0.1f);
  std::vector<bf16> y(s.logits ? 0 : size_t(M * s.N));
  std::vector<float> y_f32(s.logits ? size_t(M * s.N) : 0);
  LinearArgs a;
  a.x = x.data();
  a.w = w.data();
  a.M = M;
  a.N = s.N;
  a.K = s.K;
  a.y = s.logits ? nullptr : y.data();
  a.y_f32 = s.logits ? y_f32.data() : nullptr;
  const ExecContext ctx = bench_ctx(mode);
  a.plan = plan_matmul(mode, M, s.N, s.K, ctx.parallel_units);
  for (auto _ : st) {
    SAMEBITS_BENCH_CHECK(cpu_linear(ctx, a));
    benchmark::ClobberMemory();
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(M * s.N * s.K) * double(st.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
  st.SetLabel(a.plan.describe());
}

const bool kRegistered = [] {
  for (const LinearShape& s : kShapes) {
    for (int64_t M : {1, 16, 128, 512}) {
      if (M > s.max_M) continue;
      register_both_modes("linear", std::string(s.name) + "/M:" + std::to_string(M),
                          [&s, M](benchmark::State& st, Mode mode) { bench_linear(st, mode, s, M); });
    }
  }
  return true;
}();

}  // namespace
}  // namespace samebits::bench
