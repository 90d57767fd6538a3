// rmsnorm in both modes: the residual-fused hidden norm (tiny: 256, Qwen3-0.6B: 1024) over M rows,
// and the per-head q/k norm (rows = M * heads, dim = head_dim). Names:
// rmsnorm/<mode>/<model>_<which>/M:<M>.
#include <string>
#include <vector>

#include "bench/kernels/bench_common.h"
#include "kernels/cpu/cpu_ops.h"

namespace samebits::bench {
namespace {

struct NormShape {
  const char* name;
  int64_t rows_per_token, dim;
  bool residual;
};

const NormShape kShapes[] = {
    {"tiny_hidden_residual", 1, 256, true}, {"tiny_qk_norm", 4 + 2, 64, false},
    {"qwen06_hidden_residual", 1, 1024, true}, {"qwen06_qk_norm", 16 + 8, 128, false},
};

void bench_rmsnorm(benchmark::State& st, Mode mode, const NormShape& s, int64_t M) {
  const int64_t rows = M * s.rows_per_token;
  auto x = seeded_bf16(size_t(rows * s.dim), 1);
  auto residual = seeded_bf16(size_t(rows * s.dim), 2, 1e-3f);  // grows slowly over iterations
  auto weight = seeded_bf16(size_t(s.dim), 3);
  std::vector<bf16> y(size_t(rows * s.dim));
  RmsNormArgs a;
  a.x = x.data();
  a.residual = s.residual ? residual.data() : nullptr;
  a.weight = weight.data();
  a.rows = rows;
  a.dim = s.dim;
  a.y = y.data();
  const ExecContext ctx = bench_ctx(mode);
  a.plan = plan_row_reduce(mode, rows, s.dim, ctx.parallel_units);
  for (auto _ : st) {
    SAMEBITS_BENCH_CHECK(cpu_rmsnorm(ctx, a));
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * rows * s.dim * 2 * (s.residual ? 4 : 2));
  st.SetLabel(a.plan.describe());
}

const bool kRegistered = [] {
  for (const NormShape& s : kShapes) {
    for (int64_t M : {1, 16, 128, 512}) {
      register_both_modes("rmsnorm", std::string(s.name) + "/M:" + std::to_string(M),
                          [&s, M](benchmark::State& st, Mode mode) { bench_rmsnorm(st, mode, s, M); });
    }
  }
  return true;
}();

}  // namespace
}  // namespace samebits::bench
