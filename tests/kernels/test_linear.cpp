// linear: correctness against fp64 in both modes, invariance sweeps (bitwise, invariant mode),
// inverse sweeps (default mode must differ somewhere), default with split_k = 1 == invariant.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/cpu/cpu_ops.h"
#include "tests/kernels/reference.h"
#include "tests/support/test_support.h"

namespace samebits::testing {
namespace {

struct LinearCase {
  Mode mode;
  int64_t M, N, K;
  bool bias, f32_out;
  std::string name() const {
    return absl::StrCat(std::string(mode_name(mode)), "_M", M, "_N", N, "_K", K, bias ? "_bias" : "",
                        f32_out ? "_f32" : "_bf16");
  }
};
// gtest prints parameters with this (ctest's test names show the readable case).
void PrintTo(const LinearCase& c, std::ostream* os) { *os << c.name(); }

// Output bytes of one linear call (bf16 or fp32), in guarded buffers whose guards must stay intact.
struct LinearRun {
  std::vector<bf16> y;
  std::vector<float> y_f32;
  // Bytes of output row m.
  std::string row_bytes(int64_t m, int64_t N) const {
    if (!y.empty()) return std::string(reinterpret_cast<const char*>(y.data() + m * N), N * sizeof(bf16));
    return std::string(reinterpret_cast<const char*>(y_f32.data() + m * N), N * sizeof(float));
  }
};

LinearRun run_linear(const ExecContext& ctx, const std::vector<bf16>& x, const std::vector<bf16>& w,
                     const bf16* bias, int64_t M, int64_t N, int64_t K, bool f32_out) {
  LinearArgs a;
  a.x = x.data();
  a.w = w.data();
  a.bias = bias;
  a.M = M;
  a.N = N;
  a.K = K;
  a.plan = plan_matmul(ctx.mode, M, N, K, ctx.parallel_units);
  Guarded<bf16> y(f32_out ? 0 : size_t(M * N));
  Guarded<float> y_f32(f32_out ? size_t(M * N) : 0);
  if (f32_out) {
    a.y_f32 = y_f32.data();
  } else {
    a.y = y.data();
  }
  absl::Status s = cpu_linear(ctx, a);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(y.check_guards(), "");
  EXPECT_EQ(y_f32.check_guards(), "");
  LinearRun run;
  if (f32_out) {
    run.y_f32.assign(y_f32.data(), y_f32.data() + M * N);
  } else {
    run.y.assign(y.data(), y.data() + M * N);
  }
  return run;
}

std::vector<LinearCase> correctness_cases() {
  struct Shape { int64_t M, N, K; };
  // Odd sizes (tails shorter than 16 lanes, partial tiles), tiny-model and Qwen3-0.6B-like shapes.
  const Shape shapes[] = {{1, 1, 1},     {1, 8, 16},      {3, 17, 33},    {5, 67, 100},
                          {16, 256, 256}, {7, 130, 768},  {64, 96, 1024}, {2, 64, 3072}};
  std::vector<LinearCase> cases;
  for (Mode mode : {Mode::kDefault, Mode::kInvariant}) {
    for (const Shape& s : shapes) {
      for (bool f32_out : {false, true}) {
        cases.push_back({mode, s.M, s.N, s.K, s.M % 2 == 1, f32_out});
      }
    }
  }
  return cases;
}

class LinearCorrectness : public ::testing::TestWithParam<LinearCase> {};

TEST_P(LinearCorrectness, MatchesFp64Reference) {
  const LinearCase& c = GetParam();
  SCOPED_TRACE(c.name());
  auto x = random_bf16(size_t(c.M * c.K), 11 + c.M);
  auto w = random_bf16(size_t(c.N * c.K), 23 + c.N, 0.5f);
  auto bias = random_bf16(size_t(c.N), 37);
  const bf16* b = c.bias ? bias.data() : nullptr;
  LinearRun run = run_linear(make_ctx(c.mode, 2), x, w, b, c.M, c.N, c.K, c.f32_out);
  LinearReference ref = reference_linear(x, w, b, c.M, c.N, c.K);
  const int split_k = plan_matmul(c.mode, c.M, c.N, c.K, kDefaultParallelUnits).split_k;
  // fp32 error bound (first order): every product rounds once, each lane adds ceil(K/16) terms,
  // the lane tree adds 4 levels, the parts add split_k - 1 and the bias 1; each step costs at most
  // one unit roundoff of the running |sum| <= abs_sum. The bf16 output adds one bf16 rounding.
  const double depth = double((c.K + 15) / 16 + 4 + split_k + 2);
  for (int64_t i = 0; i < c.M * c.N; ++i) {
    const double f32_bound = depth * kF32Unit * ref.abs_sum[i] * 1.01;
    const double got = c.f32_out ? double(run.y_f32[i]) : double(to_float(run.y[i]));
    const double bound = c.f32_out ? f32_bound : f32_bound + kBf16Unit * (std::fabs(ref.y[i]) + f32_bound);
    ASSERT_LE(std::fabs(got - ref.y[i]), bound) << "output " << i << " (row " << i / c.N << ", column "
                                                << i % c.N << ") ref " << ref.y[i];
  }
}

TEST_P(LinearCorrectness, FollowsTheDocumentedLaneOrderBitForBit) {
  // The vectorised kernel against the order written out one scalar at a time (reference.cpp).
  const LinearCase& c = GetParam();
  auto x = random_bf16(size_t(c.M * c.K), 13 + c.M);
  auto w = random_bf16(size_t(c.N * c.K), 29 + c.N);
  auto bias = random_bf16(size_t(c.N), 31);
  const bf16* b = c.bias ? bias.data() : nullptr;
  LinearRun run = run_linear(make_ctx(c.mode, 2), x, w, b, c.M, c.N, c.K, true);
  const int split_k = plan_matmul(c.mode, c.M, c.N, c.K, kDefaultParallelUnits).split_k;
  for (int64_t m = 0; m < c.M; ++m) {
    for (int64_t n = 0; n < c.N; ++n) {
      float expected = lane_order_dot(x.data() + m * c.K, w.data() + n * c.K, c.K, split_k);
      if (b != nullptr) expected = expected + to_float(b[n]);
      ASSERT_EQ(float_bits(run.y_f32[m * c.N + n]), float_bits(expected)) << "row " << m << " column " << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, LinearCorrectness, ::testing::ValuesIn(correctness_cases()),
                         [](const auto& info) { return info.param.name(); });

// --- Invariance sweeps: one target row alone, then inside batches of many sizes and positions.

struct SweepCase {
  const char* shape;
  int64_t N, K;
  bool f32_out;
  std::string name() const { return absl::StrCat(shape, f32_out ? "_f32" : "_bf16"); }
};
// gtest prints parameters with this (ctest's test names show the readable case).
void PrintTo(const SweepCase& c, std::ostream* os) { *os << c.name(); }

const int64_t kBatchSizes[] = {1, 2, 3, 7, 8, 16, 31, 64, 100, 128, 255, 256, 512};
const int kThreadCounts[] = {1, 2, 16};

struct SweepResult {
  int compared = 0;
  std::vector<std::string> differing;  // "M=..,pos=.."
};

// The target row's output alone (1 thread) vs inside batches of every size in kBatchSizes at the
// first, a middle and the last position, with 1, 2 or 16 threads in turn.
// Rows whose second half is -0.97 x the first half, against weights whose halves are equal: every
// dot product cancels to a few percent of its partial sums, so the fp32 rounding of the partial
// sums weighs ~30x more in the result and a change of the reduction order reaches even bf16
// outputs (as near-ties in trained models do). With plain random data an fp32 difference of an
// ulp or two almost never crosses a bf16 rounding boundary.
std::vector<bf16> cancelling_rows(int64_t rows, int64_t K, uint64_t seed) {
  std::vector<bf16> x = random_bf16(size_t(rows * K), seed);
  const int64_t half = K / 2;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < half; ++k) x[r * K + half + k] = to_bf16(-0.97f * to_float(x[r * K + k]));
  }
  return x;
}

SweepResult sweep_linear(Mode mode, const SweepCase& c) {
  const int64_t N = c.N, K = c.K;
  auto w = random_bf16(size_t(N * K), 101, 0.25f);
  for (int64_t n = 0; n < N; ++n) {  // w's halves equal, so x's negated half cancels
    std::copy(w.begin() + n * K, w.begin() + n * K + K / 2, w.begin() + n * K + K / 2);
  }
  auto target = cancelling_rows(1, K, 202);
  auto pool = cancelling_rows(512, K, 303);
  const std::string alone = run_linear(make_ctx(mode, 1), target, w, nullptr, 1, N, K, c.f32_out).row_bytes(0, N);
  SweepResult result;
  int turn = 0;
  for (int64_t M : kBatchSizes) {
    std::vector<int64_t> positions = {0, M / 2, M - 1};
    positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
    for (int64_t pos : positions) {
      std::vector<bf16> x(pool.begin(), pool.begin() + M * K);
      std::copy(target.begin(), target.end(), x.begin() + pos * K);
      const int threads = kThreadCounts[turn++ % 3];
      LinearRun run = run_linear(make_ctx(mode, threads), x, w, nullptr, M, N, K, c.f32_out);
      ++result.compared;
      if (run.row_bytes(pos, N) != alone) {
        result.differing.push_back(absl::StrCat("M=", M, ",pos=", pos, ",threads=", threads));
      }
    }
  }
  return result;
}

class LinearSweep : public ::testing::TestWithParam<SweepCase> {};

TEST_P(LinearSweep, InvariantRowBitsIndependentOfBatch) {
  SweepResult r = sweep_linear(Mode::kInvariant, GetParam());
  EXPECT_GT(r.compared, 30);
  EXPECT_TRUE(r.differing.empty()) << GetParam().name() << ": row differs from alone at "
                                   << absl::StrJoin(r.differing, " ");
}

TEST_P(LinearSweep, DefaultRowBitsFollowBatch) {
  // The inverse test: a sweep that cannot see default mode's split-K change proves nothing.
  SweepResult r = sweep_linear(Mode::kDefault, GetParam());
  EXPECT_FALSE(r.differing.empty()) << GetParam().name() << ": default mode never differed in "
                                    << r.compared << " batches";
}

// Tiny model's down_proj (K = ffn 768) and q projection (N = 4 heads x 64), a Qwen-like 1024^2.
INSTANTIATE_TEST_SUITE_P(Shapes, LinearSweep,
                         ::testing::Values(SweepCase{"tiny_down_N256_K768", 256, 768, false},
                                           SweepCase{"tiny_down_N256_K768", 256, 768, true},
                                           SweepCase{"tiny_qkv_N512_K256", 512, 256, false},
                                           SweepCase{"qwen_N1024_K1024", 1024, 1024, false},
                                           SweepCase{"qwen_N1024_K1024", 1024, 1024, true}),
                         [](const auto& info) { return info.param.name(); });

// The kernel executes the plan in its arguments, whatever the context's mode: the model (and the
// mutation suite) decide, the kernel does not.
TEST(LinearPlan, ExecutesThePlanItIsGiven) {
  const int64_t M = 3, N = 5, K = 200;
  auto x = random_bf16(size_t(M * K), 41);
  auto w = random_bf16(size_t(N * K), 42);
  for (int split_k : {1, 2, 4}) {
    for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
      SCOPED_TRACE(absl::StrCat("split_k=", split_k, " ctx mode ", std::string(mode_name(mode))));
      std::vector<float> y(size_t(M * N));
      LinearArgs a{.x = x.data(), .w = w.data(), .M = M, .N = N, .K = K,
                   .plan = {MatmulPlan::Kind::kFixedOrder, split_k}, .y_f32 = y.data()};
      ASSERT_TRUE(cpu_linear(make_ctx(mode, 2), a).ok());
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t n = 0; n < N; ++n) {
          ASSERT_EQ(float_bits(y[m * N + n]), float_bits(lane_order_dot(x.data() + m * K, w.data() + n * K, K, split_k)))
              << "row " << m << " column " << n;
        }
      }
    }
  }
}

// The modes differ only in their plan: where default mode's plan has split_k = 1, its bits are
// invariant mode's bits.
TEST(LinearModes, DefaultWithoutSplitEqualsInvariant) {
  struct Shape { int64_t M, N, K; int parallel_units; };
  for (Shape s : {Shape{512, 2048, 256, kDefaultParallelUnits}, Shape{8, 300, 500, 1}, Shape{1, 64, 1000, 1}}) {
    SCOPED_TRACE(absl::StrCat("M=", s.M, " N=", s.N, " K=", s.K, " parallel_units=", s.parallel_units));
    ASSERT_EQ(plan_matmul(Mode::kDefault, s.M, s.N, s.K, s.parallel_units).split_k, 1);
    auto x = random_bf16(size_t(s.M * s.K), 5);
    auto w = random_bf16(size_t(s.N * s.K), 6);
    auto bias = random_bf16(size_t(s.N), 7);
    for (bool f32_out : {false, true}) {
      LinearRun d = run_linear(make_ctx(Mode::kDefault, 2, s.parallel_units), x, w, bias.data(), s.M, s.N, s.K, f32_out);
      LinearRun i = run_linear(make_ctx(Mode::kInvariant, 2), x, w, bias.data(), s.M, s.N, s.K, f32_out);
      ASSERT_EQ(d.y.size(), i.y.size());
      ASSERT_EQ(d.y_f32.size(), i.y_f32.size());
      EXPECT_TRUE(same_bytes(d.y.data(), i.y.data(), d.y.size())) << (f32_out ? "fp32" : "bf16");
      EXPECT_TRUE(same_bytes(d.y_f32.data(), i.y_f32.data(), d.y_f32.size())) << (f32_out ? "fp32" : "bf16");
    }
  }
}

// --- Argument validation: InvalidArgument naming the op and the field.

TEST(LinearArgs, RejectsBadArguments) {
  auto x = random_bf16(64, 1);
  auto w = random_bf16(64, 2);
  std::vector<bf16> y(16);
  std::vector<float> yf(16);
  auto base = [&] {
    LinearArgs a;
    a.x = x.data();
    a.w = w.data();
    a.M = 4;
    a.N = 4;
    a.K = 16;
    a.y = y.data();
    return a;
  };
  struct Bad { const char* what; LinearArgs args; };
  std::vector<Bad> bad;
  { auto a = base(); a.x = nullptr; bad.push_back({"x is null", a}); }
  { auto a = base(); a.w = nullptr; bad.push_back({"w is null", a}); }
  { auto a = base(); a.M = 0; bad.push_back({"M must be positive, got 0", a}); }
  { auto a = base(); a.N = -3; bad.push_back({"N must be positive, got -3", a}); }
  { auto a = base(); a.K = 0; bad.push_back({"K must be positive, got 0", a}); }
  { auto a = base(); a.y_f32 = yf.data(); bad.push_back({"got both", a}); }
  { auto a = base(); a.y = nullptr; bad.push_back({"got neither", a}); }
  for (const Bad& b : bad) {
    absl::Status s = cpu_linear(make_ctx(Mode::kInvariant), b.args);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << b.what;
    EXPECT_NE(s.message().find("linear: "), std::string::npos) << s;
    EXPECT_NE(s.message().find(b.what), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace samebits::testing
