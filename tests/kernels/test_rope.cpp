// rope: correctness vs fp64 (std::pow/cos/sin angles) in both modes, position checks, guards.
// Pointwise: one order in both modes (bitwise equality of the modes is asserted here; thread
// counts in test_threads.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/fixed_math.h"
#include "tests/kernels/reference.h"
#include "tests/support/test_support.h"

namespace samebits::testing {
namespace {

struct RopeCase {
  int64_t T;
  int q_heads, kv_heads, head_dim;
  double theta;
  int64_t max_position;
  std::string name() const {
    return absl::StrCat("T", T, "_", q_heads, "q", kv_heads, "kv_d", head_dim, "_theta",
                        int64_t(theta), "_maxpos", max_position);
  }
};
// gtest prints parameters with this (ctest's test names show the readable case).
void PrintTo(const RopeCase& c, std::ostream* os) { *os << c.name(); }

struct RopeRun {
  std::vector<bf16> q, k;
  absl::Status status;
};

RopeRun run_rope(const ExecContext& ctx, const RopeCase& c, const std::vector<bf16>& q,
                 const std::vector<bf16>& k, const std::vector<int32_t>& positions,
                 const std::vector<float>& table) {
  Guarded<bf16> qb(q.size()), kb(k.size());
  std::copy(q.begin(), q.end(), qb.data());
  std::copy(k.begin(), k.end(), kb.data());
  RopeArgs a;
  a.q = qb.data();
  a.k = kb.data();
  a.positions = positions.data();
  a.T = c.T;
  a.num_q_heads = c.q_heads;
  a.num_kv_heads = c.kv_heads;
  a.head_dim = c.head_dim;
  a.table = table.data();
  a.max_position = c.max_position;
  RopeRun run;
  run.status = cpu_rope(ctx, a);
  EXPECT_EQ(qb.check_guards(), "");
  EXPECT_EQ(kb.check_guards(), "");
  run.q.assign(qb.data(), qb.data() + q.size());
  run.k.assign(kb.data(), kb.data() + k.size());
  return run;
}

class RopeCorrectness : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeCorrectness, MatchesFp64ReferenceInBothModes) {
  const RopeCase& c = GetParam();
  auto q = random_bf16(size_t(c.T * c.q_heads * c.head_dim), 71, 3.0f);
  auto k = random_bf16(size_t(c.T * c.kv_heads * c.head_dim), 73, 3.0f);
  std::vector<int32_t> positions(size_t(c.T));
  for (int64_t t = 0; t < c.T; ++t) positions[t] = int32_t((t * 7919 + 13) % c.max_position);
  positions.back() = int32_t(c.max_position - 1);  // the last row of the table
  const auto table = make_rope_table(c.theta, c.head_dim, c.max_position);
  RopeRun d = run_rope(make_ctx(Mode::kDefault, 2), c, q, k, positions, table);
  RopeRun i = run_rope(make_ctx(Mode::kInvariant, 2), c, q, k, positions, table);
  ASSERT_TRUE(d.status.ok()) << d.status;
  ASSERT_TRUE(i.status.ok()) << i.status;
  EXPECT_TRUE(same_bytes(d.q.data(), i.q.data(), q.size()));
  EXPECT_TRUE(same_bytes(d.k.data(), i.k.data(), k.size()));
  const int half = c.head_dim / 2;
  for (auto [in, out, heads, what] : {std::tuple{&q, &i.q, c.q_heads, "q"}, std::tuple{&k, &i.k, c.kv_heads, "k"}}) {
    const auto ref = reference_rope(*in, positions, heads, c.head_dim, c.theta);
    for (size_t j = 0; j < in->size(); ++j) {
      const size_t base = j - j % size_t(c.head_dim), d_i = j % size_t(c.head_dim) % size_t(half);
      const double lo = std::fabs(to_float((*in)[base + d_i])), hi = std::fabs(to_float((*in)[base + d_i + half]));
      // Table entries: fp32 roundings of cos/sin (< 6e-8) plus fixed_sincos error (~1e-15); two
      // fp32 products and one sum (3 roundings of at most lo + hi); then one bf16 rounding.
      const double bound = kBf16Unit * std::fabs(ref[j]) + (4 * kF32Unit + 1.2e-7) * (lo + hi);
      ASSERT_LE(std::fabs(to_float((*out)[j]) - ref[j]), bound * 1.01)
          << what << " element " << j << " token " << j / (size_t(heads) * c.head_dim);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, RopeCorrectness,
                         ::testing::Values(RopeCase{1, 4, 2, 64, 1e6, 4096},     // tiny model
                                           RopeCase{5, 16, 8, 128, 1e6, 40960},  // Qwen3-0.6B
                                           RopeCase{33, 2, 1, 8, 1e4, 64},
                                           RopeCase{3, 1, 1, 2, 1e4, 5}),
                         [](const auto& info) { return info.param.name(); });

TEST(RopeArgs, RejectsPositionsOutsideTableAndLeavesInputsUntouched) {
  RopeCase c{4, 2, 1, 8, 1e4, 16};
  auto q = random_bf16(size_t(c.T * c.q_heads * c.head_dim), 1);
  auto k = random_bf16(size_t(c.T * c.kv_heads * c.head_dim), 2);
  const auto table = make_rope_table(c.theta, c.head_dim, c.max_position);
  for (int32_t bad : {-1, 16, 1000}) {
    std::vector<int32_t> positions = {0, 3, bad, 5};
    RopeRun run = run_rope(make_ctx(Mode::kInvariant), c, q, k, positions, table);
    EXPECT_EQ(run.status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(run.status.message().find(absl::StrCat("token 2 has position ", bad)), std::string::npos)
        << run.status;
    EXPECT_TRUE(same_bytes(run.q.data(), q.data(), q.size()));
    EXPECT_TRUE(same_bytes(run.k.data(), k.data(), k.size()));
  }
}

TEST(RopeArgs, RejectsBadShapes) {
  RopeCase c{2, 2, 1, 8, 1e4, 16};
  auto q = random_bf16(32, 1);
  auto k = random_bf16(16, 2);
  const auto table = make_rope_table(c.theta, c.head_dim, c.max_position);
  std::vector<int32_t> positions = {0, 1};
  for (auto [field, mutate] : std::vector<std::pair<const char*, void (*)(RopeCase&)>>{
           {"T must be positive", [](RopeCase& r) { r.T = 0; }},
           {"num_q_heads must be positive", [](RopeCase& r) { r.q_heads = 0; }},
           {"num_kv_heads must be positive", [](RopeCase& r) { r.kv_heads = -1; }},
           {"head_dim must be positive and even, got 7", [](RopeCase& r) { r.head_dim = 7; }},
           {"max_position must be positive", [](RopeCase& r) { r.max_position = 0; }}}) {
    RopeCase bad = c;
    mutate(bad);
    RopeRun run = run_rope(make_ctx(Mode::kInvariant), bad, q, k, positions, table);
    EXPECT_EQ(run.status.code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_NE(run.status.message().find(absl::StrCat("rope: ", field)), std::string::npos) << run.status;
  }
}

}  // namespace
}  // namespace samebits::testing
