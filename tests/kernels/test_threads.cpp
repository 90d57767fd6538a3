// Thread counts and parallel units. Every op gives the same bytes with 1, 2 and 16 threads, in both
// modes (threads take whole rows, tiles or split parts; the plan never depends on the thread
// count), and the same bytes run after run. Invariant mode also ignores parallel_units (the
// virtual SM count); default mode's plan follows it, and that must be seen (the inverse).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/fixed_math.h"
#include "tests/kernels/reference.h"
#include "tests/support/test_support.h"

namespace samebits::testing {
namespace {

// Runs every op of this backend (except attention/kv_write, tested with attention) once with the
// given context on fixed inputs; returns all outputs' bytes concatenated, per op.
struct OpOutputs {
  std::vector<std::pair<std::string, std::string>> by_op;  // name, bytes
};

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

OpOutputs run_all_ops(const ExecContext& ctx) {
  OpOutputs out;
  const int64_t M = 37, K = 256, N = 300, F = 768;
  auto x = random_bf16(size_t(M * K), 1);
  auto w = random_bf16(size_t(N * K), 2);
  {
    std::vector<float> y(size_t(M * N));
    LinearArgs a{.x = x.data(), .w = w.data(), .M = M, .N = N, .K = K,
                 .plan = plan_matmul(ctx.mode, M, N, K, ctx.parallel_units), .y_f32 = y.data()};
    EXPECT_TRUE(cpu_linear(ctx, a).ok());
    out.by_op.push_back({"linear_f32", bytes_of(y)});
    std::vector<bf16> yb(size_t(M * N));
    a.y = yb.data();
    a.y_f32 = nullptr;
    EXPECT_TRUE(cpu_linear(ctx, a).ok());
    out.by_op.push_back({"linear_bf16", bytes_of(yb)});
  }
  {
    auto res = random_bf16(size_t(M * K), 3);
    auto weight = random_bf16(size_t(K), 4);
    std::vector<bf16> y(size_t(M * K));
    RmsNormArgs a{.x = x.data(), .residual = res.data(), .weight = weight.data(), .rows = M, .dim = K,
                  .plan = plan_row_reduce(ctx.mode, M, K, ctx.parallel_units), .y = y.data()};
    EXPECT_TRUE(cpu_rmsnorm(ctx, a).ok());
    out.by_op.push_back({"rmsnorm", bytes_of(y) + bytes_of(res)});
  }
  {
    auto q = random_bf16(size_t(M * 4 * 64), 5);
    auto k = random_bf16(size_t(M * 2 * 64), 6);
    std::vector<int32_t> pos(static_cast<size_t>(M));
    for (int64_t t = 0; t < M; ++t) pos[t] = int32_t(t * 3);
    auto table = make_rope_table(1e6, 64, 256);
    RopeArgs a{q.data(), k.data(), pos.data(), M, 4, 2, 64, table.data(), 256};
    EXPECT_TRUE(cpu_rope(ctx, a).ok());
    out.by_op.push_back({"rope", bytes_of(q) + bytes_of(k)});
  }
  {
    auto g = random_bf16(size_t(M * F), 7, 6.f);
    auto u = random_bf16(size_t(M * F), 8);
    std::vector<bf16> y(size_t(M * F));
    SiluMulArgs a{g.data(), u.data(), M, F, y.data()};
    EXPECT_TRUE(cpu_silu_mul(ctx, a).ok());
    out.by_op.push_back({"silu_mul", bytes_of(y)});
  }
  {
    auto table = random_bf16(size_t(258 * K), 9);
    std::vector<int32_t> ids(static_cast<size_t>(M));
    for (int64_t t = 0; t < M; ++t) ids[t] = int32_t(t * 7 % 258);
    std::vector<bf16> y(size_t(M * K));
    EmbeddingArgs a{ids.data(), M, table.data(), 258, K, y.data()};
    EXPECT_TRUE(cpu_embedding(ctx, a).ok());
    out.by_op.push_back({"embedding", bytes_of(y)});
  }
  {
    auto logits = random_f32(size_t(M * 258), 10, 3.f);
    std::vector<int32_t> am(static_cast<size_t>(M)), smp(static_cast<size_t>(M));
    ArgmaxArgs a{logits.data(), M, 258, am.data()};
    EXPECT_TRUE(cpu_argmax(ctx, a).ok());
    std::vector<SamplingRow> params(static_cast<size_t>(M));
    for (int64_t r = 0; r < M; ++r) params[r] = {0.8f, int32_t(r % 5) * 10, 0.9f, sampling_uniform(3, uint64_t(r))};
    SampleArgs s{logits.data(), M, 258, params.data(), smp.data()};
    EXPECT_TRUE(cpu_sample(ctx, s).ok());
    out.by_op.push_back({"argmax", bytes_of(am)});
    out.by_op.push_back({"sample", bytes_of(smp)});
  }
  return out;
}

TEST(Threads, EveryOpSameBytesFor1And2And16ThreadsAndRunToRun) {
  for (Mode mode : {Mode::kDefault, Mode::kInvariant}) {
    const OpOutputs one = run_all_ops(make_ctx(mode, 1));
    for (int threads : {1, 2, 16}) {
      const OpOutputs other = run_all_ops(make_ctx(mode, threads));
      for (size_t i = 0; i < one.by_op.size(); ++i) {
        EXPECT_TRUE(one.by_op[i].second == other.by_op[i].second)
            << mode_name(mode) << " " << one.by_op[i].first << ": 1 thread vs " << threads;
      }
    }
  }
}

TEST(ParallelUnits, InvariantModeIgnoresThem) {
  const OpOutputs base = run_all_ops(make_ctx(Mode::kInvariant, 2, 132));
  for (int units : {1, 8, 1000}) {
    const OpOutputs other = run_all_ops(make_ctx(Mode::kInvariant, 2, units));
    for (size_t i = 0; i < base.by_op.size(); ++i) {
      EXPECT_TRUE(base.by_op[i].second == other.by_op[i].second) << base.by_op[i].first << ": units " << units;
    }
  }
}

TEST(ParallelUnits, DefaultModeFollowsThem) {
  // The inverse: on a machine with another SM count, default mode's split-K differs, and so do
  // the fp32 outputs (logits).
  const OpOutputs base = run_all_ops(make_ctx(Mode::kDefault, 2, 132));
  const OpOutputs other = run_all_ops(make_ctx(Mode::kDefault, 2, 1));
  ASSERT_EQ(base.by_op[0].first, "linear_f32");
  EXPECT_FALSE(base.by_op[0].second == other.by_op[0].second)
      << "default linear gave the same fp32 bits with 132 and 1 parallel units";
}

}  // namespace
}  // namespace samebits::testing
