// gate_up_silu on the CPU: the one op equals today's three (linear on gate, linear on up, silu_mul)
// bit for bit in invariant mode at many M; silu_mul over interleaved columns equals silu_mul over
// the columns apart; the inverse: a weight interleaved the wrong way round (up before gate) must be
// SEEN to differ; argument checks.
#include <gtest/gtest.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/gate_up_silu.h"
#include "tests/kernels/attention_reference.h"
#include "tests/kernels/reference.h"
#include "tests/support/test_support.h"

namespace samebits::testing {
namespace {

constexpr int64_t kF = 48, kK = 72;

std::vector<bf16> run_linear(const ExecContext& ctx, const std::vector<bf16>& x, const std::vector<bf16>& w,
                             int64_t M, int64_t N, int64_t K) {
  std::vector<bf16> y(size_t(M * N));
  LinearArgs a;
  a.x = x.data(), a.w = w.data(), a.M = M, a.N = N, a.K = K, a.y = y.data();
  a.plan = plan_matmul(ctx.mode, M, N, K, ctx.parallel_units);
  EXPECT_TRUE(cpu_linear(ctx, a).ok());
  return y;
}

// Today's path: two linears and silu_mul on the columns apart.
std::vector<bf16> three_ops(const ExecContext& ctx, const std::vector<bf16>& x, const std::vector<bf16>& gate,
                            const std::vector<bf16>& up, int64_t M) {
  const auto g = run_linear(ctx, x, gate, M, kF, kK), u = run_linear(ctx, x, up, M, kF, kK);
  std::vector<bf16> y(size_t(M * kF));
  SiluMulArgs a{g.data(), u.data(), M, kF, y.data()};
  EXPECT_TRUE(cpu_silu_mul(ctx, a).ok());
  return y;
}

std::vector<bf16> one_op(const ExecContext& ctx, const std::vector<bf16>& x, const std::vector<bf16>& w, int64_t M) {
  Guarded<bf16> scratch(size_t(2 * M * kF)), y(size_t(M * kF));
  GateUpSiluArgs a;
  a.x = x.data(), a.w = w.data(), a.M = M, a.F = kF, a.K = kK, a.gate_up = scratch.data(), a.y = y.data();
  a.plan = plan_matmul(ctx.mode, M, 2 * kF, kK, ctx.parallel_units);
  const absl::Status s = cpu_gate_up_silu(ctx, a);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(y.check_guards(), "");
  EXPECT_EQ(scratch.check_guards(), "");
  return std::vector<bf16>(y.data(), y.data() + M * kF);
}

std::vector<bf16> interleaved(const std::vector<bf16>& gate, const std::vector<bf16>& up) {
  std::vector<bf16> w(gate.size() + up.size());
  interleave_gate_up(gate.data(), up.data(), kF, kK, w.data());
  return w;
}

TEST(GateUpSilu, InvariantEqualsTwoLinearsAndSiluMulBitwise) {
  const auto gate = random_bf16(size_t(kF * kK), 5, 0.3f), up = random_bf16(size_t(kF * kK), 6, 0.3f);
  const auto w = interleaved(gate, up);
  for (int64_t M : {1, 2, 7, 16, 33, 130}) {
    SCOPED_TRACE(absl::StrCat("M=", M));
    const auto x = random_bf16(size_t(M * kK), 7 + uint64_t(M));
    const ExecContext ctx = make_ctx(Mode::kInvariant, 2);
    EXPECT_EQ(first_difference(one_op(ctx, x, w, M), three_ops(ctx, x, gate, up, M)), -1);
  }
}

// The inverse: the same comparison with the weight interleaved up-first must see differences.
TEST(GateUpSilu, ComparisonSeesAWrongInterleaving) {
  const auto gate = random_bf16(size_t(kF * kK), 5, 0.3f), up = random_bf16(size_t(kF * kK), 6, 0.3f);
  const int64_t M = 9;
  const auto x = random_bf16(size_t(M * kK), 8);
  const ExecContext ctx = make_ctx(Mode::kInvariant, 2);
  EXPECT_NE(first_difference(one_op(ctx, x, interleaved(up, gate), M), three_ops(ctx, x, gate, up, M)), -1);
}

TEST(GateUpSilu, InterleavedSiluMulEqualsColumnsApart) {
  const int64_t T = 5;
  const auto g = random_bf16(size_t(T * kF), 21, 6.f), u = random_bf16(size_t(T * kF), 22, 2.f);
  std::vector<bf16> both(size_t(2 * T * kF));
  for (int64_t t = 0; t < T; ++t) {  // rows of [T, 2F]: the interleaving of columns is that of weight rows
    for (int64_t f = 0; f < kF; ++f) {
      both[size_t(t * 2 * kF + gate_up_weight_row(f, false))] = g[size_t(t * kF + f)];
      both[size_t(t * 2 * kF + gate_up_weight_row(f, true))] = u[size_t(t * kF + f)];
    }
  }
  std::vector<bf16> want(size_t(T * kF)), got(size_t(T * kF));
  const ExecContext ctx = make_ctx(Mode::kInvariant, 2);
  ASSERT_TRUE(cpu_silu_mul(ctx, SiluMulArgs{g.data(), u.data(), T, kF, want.data()}).ok());
  ASSERT_TRUE(cpu_silu_mul(ctx, SiluMulArgs{both.data(), both.data() + 8, T, kF, got.data(), 8}).ok());
  EXPECT_EQ(first_difference(want, got), -1);
}

TEST(GateUpSilu, RejectsBadArguments) {
  std::vector<bf16> x(64), w(2 * 16 * 8), scratch(64), y(64);
  GateUpSiluArgs a;
  a.x = x.data(), a.w = w.data(), a.M = 1, a.F = 12, a.K = 8, a.gate_up = scratch.data(), a.y = y.data();
  absl::Status s = cpu_gate_up_silu(make_ctx(Mode::kInvariant), a);
  EXPECT_NE(s.message().find("gate_up_silu: F must be a positive multiple of 8"), std::string::npos) << s;
  a.F = 16, a.gate_up = nullptr;
  s = cpu_gate_up_silu(make_ctx(Mode::kInvariant), a);
  EXPECT_NE(s.message().find("gate_up_silu: gate_up (scratch) is null"), std::string::npos) << s;
  SiluMulArgs bad{x.data(), x.data() + 4, 1, 16, y.data(), 8};
  s = cpu_silu_mul(make_ctx(Mode::kInvariant), bad);
  EXPECT_NE(s.message().find("silu_mul: group 8"), std::string::npos) << s;
}

}  // namespace
}  // namespace samebits::testing
