// rmsnorm (with and without the fused residual add, also as per-head q/k norm): correctness vs
// fp64 in both modes, invariance sweeps (bitwise), inverse sweeps (default mode must differ).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/cpu/cpu_ops.h"
#include "tests/kernels/reference.h"
#include "tests/support/sensitive_rows.h"
#include "tests/support/test_support.h"

namespace samebits::testing {
namespace {

struct NormCase {
  Mode mode;
  int64_t rows, dim;
  bool residual, in_place;  // in_place: y aliases x
  std::string name() const {
    return absl::StrCat(std::string(mode_name(mode)), "_rows", rows, "_dim", dim,
                        residual ? "_residual" : "", in_place ? "_inplace" : "");
  }
};
// gtest prints parameters with this (ctest's test names show the readable case).
void PrintTo(const NormCase& c, std::ostream* os) { *os << c.name(); }

struct NormRun {
  std::vector<bf16> y, residual;  // residual: the updated residual stream (empty without one)
};

// One rmsnorm call on copies of the inputs, outputs in guarded buffers.
NormRun run_rmsnorm(const ExecContext& ctx, const std::vector<bf16>& x, const std::vector<bf16>* residual,
                    const std::vector<bf16>& weight, int64_t rows, int64_t dim, bool in_place,
                    float eps = 1e-6f) {
  const size_t n = size_t(rows * dim);
  Guarded<bf16> xbuf(n), ybuf(n), rbuf(residual ? n : 0);
  std::copy(x.begin(), x.end(), xbuf.data());
  if (residual) std::copy(residual->begin(), residual->end(), rbuf.data());
  RmsNormArgs a;
  a.x = xbuf.data();
  a.residual = residual ? rbuf.data() : nullptr;
  a.weight = weight.data();
  a.rows = rows;
  a.dim = dim;
  a.eps = eps;
  a.plan = plan_row_reduce(ctx.mode, rows, dim, ctx.parallel_units);
  a.y = in_place ? xbuf.data() : ybuf.data();
  absl::Status s = cpu_rmsnorm(ctx, a);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(xbuf.check_guards(), "");
  EXPECT_EQ(ybuf.check_guards(), "");
  EXPECT_EQ(rbuf.check_guards(), "");
  NormRun run;
  const bf16* y = in_place ? xbuf.data() : ybuf.data();
  run.y.assign(y, y + n);
  if (residual) run.residual.assign(rbuf.data(), rbuf.data() + n);
  return run;
}

std::vector<NormCase> correctness_cases() {
  struct Shape { int64_t rows, dim; };
  // Tails shorter than 16 lanes (dim 100, 33), head_dim 64/128 (q/k norm), hidden 256/1024.
  const Shape shapes[] = {{1, 1}, {1, 256}, {3, 33}, {5, 100}, {16, 128}, {64, 64}, {7, 1024}, {130, 256}};
  std::vector<NormCase> cases;
  for (Mode mode : {Mode::kDefault, Mode::kInvariant}) {
    for (const Shape& s : shapes) {
      for (bool residual : {false, true}) cases.push_back({mode, s.rows, s.dim, residual, s.rows % 2 == 1});
    }
  }
  return cases;
}

class RmsNormCorrectness : public ::testing::TestWithParam<NormCase> {};

TEST_P(RmsNormCorrectness, MatchesFp64Reference) {
  const NormCase& c = GetParam();
  const size_t n = size_t(c.rows * c.dim);
  auto x = random_bf16(n, 41 + c.dim, 2.0f);
  auto residual = random_bf16(n, 43 + c.rows, 2.0f);
  auto weight = random_bf16(size_t(c.dim), 47, 1.5f);
  NormRun run = run_rmsnorm(make_ctx(c.mode, 2), x, c.residual ? &residual : nullptr, weight, c.rows,
                            c.dim, c.in_place);
  RmsNormReference ref = reference_rmsnorm(x, c.residual ? &residual : nullptr, weight, c.rows, c.dim, 1e-6);
  // The new residual is bf16(x + residual): exact apart from one fp32 and one bf16 rounding, and
  // the reference rounds the same way, so it must match exactly.
  if (c.residual) {
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(double(to_float(run.residual[i])), ref.h[i]) << "residual " << i;
  }
  // y: the sum of squares carries ~(dim/16 + 4 + parts) fp32 roundings, the mean/eps/sqrt/divide
  // four more (halved by the square root); then two bf16 roundings (h * inv, then * weight), each
  // at most 2^-8 relative.
  const int parts = plan_row_reduce(c.mode, c.rows, c.dim, kDefaultParallelUnits).parts;
  const double rel = 2 * kBf16Unit + double(c.dim / 16 + 4 + parts + 4) * kF32Unit;
  for (size_t i = 0; i < n; ++i) {
    const double got = to_float(run.y[i]);
    ASSERT_LE(std::fabs(got - ref.y[i]), rel * std::fabs(ref.y[i]) * 1.01)
        << c.name() << " output " << i << " (row " << i / c.dim << ") ref " << ref.y[i];
  }
}

TEST_P(RmsNormCorrectness, FollowsTheDocumentedOrderBitForBit) {
  // The kernel against its documented fp32 arithmetic, one scalar at a time.
  const NormCase& c = GetParam();
  const size_t n = size_t(c.rows * c.dim);
  auto x = random_bf16(n, 51 + c.dim, 2.0f);
  auto residual = random_bf16(n, 53 + c.rows, 2.0f);
  auto weight = random_bf16(size_t(c.dim), 57, 1.5f);
  NormRun run = run_rmsnorm(make_ctx(c.mode, 2), x, c.residual ? &residual : nullptr, weight, c.rows,
                            c.dim, c.in_place);
  const int parts = plan_row_reduce(c.mode, c.rows, c.dim, kDefaultParallelUnits).parts;
  std::vector<float> h(static_cast<size_t>(c.dim));
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t i = 0; i < c.dim; ++i) {
      float v = to_float(x[r * c.dim + i]);
      h[i] = c.residual ? round_bf16(v + to_float(residual[r * c.dim + i])) : v;
    }
    const float ss = lane_order_sum_squares(h.data(), c.dim, parts);
    const float inv = 1.0f / std::sqrt(ss / float(c.dim) + 1e-6f);
    for (int64_t i = 0; i < c.dim; ++i) {
      const bf16 expected = to_bf16(round_bf16(h[i] * inv) * to_float(weight[i]));
      ASSERT_EQ(run.y[r * c.dim + i].bits, expected.bits) << "row " << r << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, RmsNormCorrectness, ::testing::ValuesIn(correctness_cases()),
                         [](const auto& info) { return info.param.name(); });

const int64_t kBatchSizes[] = {1, 2, 3, 7, 8, 16, 31, 64, 100, 128, 255, 256, 512};
const int kThreadCounts[] = {1, 2, 16};
constexpr int64_t kPool = 256;

// --- Invariance sweeps. For each batch size M, ceil(1024 / M) batches hold consecutive rows of a
// pool of 256 from a moving offset (so rows visit many positions), and EVERY row of every batch is
// compared with the same pool row normalised alone. The pool holds "sensitive" rows
// (tests/support/sensitive_rows.h), on which a change of reduction order shows in the bf16 output.

struct NormSweepCase {
  int64_t dim;
  bool residual;
  std::string name() const { return absl::StrCat("dim", dim, residual ? "_residual" : ""); }
};
// gtest prints parameters with this (ctest's test names show the readable case).
void PrintTo(const NormSweepCase& c, std::ostream* os) { *os << c.name(); }


struct NormSweepResult {
  int64_t rows_compared = 0;
  std::vector<std::string> differing;  // "M=..,row=.."
};

NormSweepResult sweep_rmsnorm(Mode mode, const NormSweepCase& c) {
  const int64_t dim = c.dim;
  const SensitiveRows sensitive = sensitive_rmsnorm_rows(kPool, dim, c.residual, 1e-6);
  const std::vector<bf16>& pool = sensitive.x;
  const std::vector<bf16>& pool_res = sensitive.residual;
  auto weight = random_bf16(size_t(dim), 707, 1.0f);
  std::vector<NormRun> alone(kPool);
  for (int64_t r = 0; r < kPool; ++r) {
    std::vector<bf16> x(pool.begin() + r * dim, pool.begin() + (r + 1) * dim);
    std::vector<bf16> res(pool_res.begin() + r * dim, pool_res.begin() + (r + 1) * dim);
    alone[r] = run_rmsnorm(make_ctx(mode, 1), x, c.residual ? &res : nullptr, weight, 1, dim, false);
  }
  NormSweepResult result;
  int turn = 0;
  for (int64_t M : kBatchSizes) {
    for (int64_t rep = 0; rep * M < 1024; ++rep) {
      const int64_t offset = (M * 37 + rep * M) % kPool;
      std::vector<bf16> x(size_t(M * dim)), res(size_t(M * dim));
      for (int64_t i = 0; i < M; ++i) {
        int64_t r = (i + offset) % kPool;
        std::copy(pool.begin() + r * dim, pool.begin() + (r + 1) * dim, x.begin() + i * dim);
        std::copy(pool_res.begin() + r * dim, pool_res.begin() + (r + 1) * dim, res.begin() + i * dim);
      }
      const int threads = kThreadCounts[turn++ % 3];
      NormRun batch = run_rmsnorm(make_ctx(mode, threads), x, c.residual ? &res : nullptr, weight, M,
                                  dim, rep % 2 == 1);
      for (int64_t i = 0; i < M; ++i) {
        const NormRun& one = alone[(i + offset) % kPool];
        ++result.rows_compared;
        bool same = same_bytes(batch.y.data() + i * dim, one.y.data(), size_t(dim));
        if (c.residual) {
          same = same && same_bytes(batch.residual.data() + i * dim, one.residual.data(), size_t(dim));
        }
        if (!same) result.differing.push_back(absl::StrCat("M=", M, ",row=", i, ",threads=", threads));
      }
    }
  }
  return result;
}

class RmsNormSweep : public ::testing::TestWithParam<NormSweepCase> {};

TEST_P(RmsNormSweep, InvariantRowBitsIndependentOfBatch) {
  NormSweepResult r = sweep_rmsnorm(Mode::kInvariant, GetParam());
  EXPECT_GT(r.rows_compared, 10000);
  EXPECT_TRUE(r.differing.empty()) << r.differing.size() << " rows differ from alone, first: "
                                   << r.differing.front();
}

TEST_P(RmsNormSweep, DefaultRowBitsFollowBatch) {
  // The inverse test: split row reductions for small batches must be seen to change bits.
  NormSweepResult r = sweep_rmsnorm(Mode::kDefault, GetParam());
  EXPECT_FALSE(r.differing.empty()) << "default mode never differed over " << r.rows_compared << " rows";
  std::cout << "[ info ] " << GetParam().name() << ": default mode differs in " << r.differing.size()
            << " of " << r.rows_compared << " rows\n";
}

// Hidden sizes 256 (tiny) and 1024 (Qwen3-0.6B), and head_dim 128 (q/k norm over T * heads rows).
INSTANTIATE_TEST_SUITE_P(Dims, RmsNormSweep,
                         ::testing::Values(NormSweepCase{256, false}, NormSweepCase{256, true},
                                           NormSweepCase{1024, false}, NormSweepCase{1024, true},
                                           NormSweepCase{128, false}),
                         [](const auto& info) { return info.param.name(); });

TEST(RmsNormModes, DefaultWithoutSplitEqualsInvariant) {
  for (int64_t rows : {int64_t(200), int64_t(600)}) {
    const int64_t dim = 256;
    ASSERT_EQ(plan_row_reduce(Mode::kDefault, rows, dim, kDefaultParallelUnits).parts, 1);
    auto x = random_bf16(size_t(rows * dim), 9);
    auto res = random_bf16(size_t(rows * dim), 10);
    auto w = random_bf16(size_t(dim), 11);
    NormRun d = run_rmsnorm(make_ctx(Mode::kDefault, 2), x, &res, w, rows, dim, false);
    NormRun i = run_rmsnorm(make_ctx(Mode::kInvariant, 2), x, &res, w, rows, dim, false);
    EXPECT_TRUE(same_bytes(d.y.data(), i.y.data(), d.y.size())) << "rows " << rows;
    EXPECT_TRUE(same_bytes(d.residual.data(), i.residual.data(), d.residual.size())) << "rows " << rows;
  }
}

TEST(RmsNormArgs, RejectsBadArguments) {
  auto x = random_bf16(64, 1);
  auto w = random_bf16(16, 2);
  std::vector<bf16> y(64);
  auto base = [&] {
    RmsNormArgs a;
    a.x = x.data();
    a.weight = w.data();
    a.rows = 4;
    a.dim = 16;
    a.y = y.data();
    return a;
  };
  struct Bad { const char* what; RmsNormArgs args; };
  std::vector<Bad> bad;
  { auto a = base(); a.x = nullptr; bad.push_back({"x is null", a}); }
  { auto a = base(); a.weight = nullptr; bad.push_back({"weight is null", a}); }
  { auto a = base(); a.y = nullptr; bad.push_back({"y is null", a}); }
  { auto a = base(); a.rows = 0; bad.push_back({"rows must be positive, got 0", a}); }
  { auto a = base(); a.dim = -1; bad.push_back({"dim must be positive, got -1", a}); }
  { auto a = base(); a.eps = -1.f; bad.push_back({"eps must be finite and >= 0", a}); }
  for (const Bad& b : bad) {
    absl::Status s = cpu_rmsnorm(make_ctx(Mode::kInvariant), b.args);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << b.what;
    EXPECT_NE(s.message().find("rmsnorm: "), std::string::npos) << s;
    EXPECT_NE(s.message().find(b.what), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace samebits::testing
