// sample: greedy == argmax, same (seed, step) same token whatever the row, different seeds differ,
// the empirical distribution matches softmax(logits / T) (chi-square over 20k draws), top-k and
// top-p respected, ties ordered by id, argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/fixed_math.h"
#include "tests/kernels/reference.h"
#include "tests/support/test_support.h"

namespace samebits::testing {
namespace {

// Samples every row of `params` from the same logits row (repeated), returns the tokens.
std::vector<int32_t> draw(const std::vector<float>& logits_row, const std::vector<SamplingRow>& params,
                          Mode mode = Mode::kInvariant) {
  const int64_t vocab = int64_t(logits_row.size()), rows = int64_t(params.size());
  std::vector<float> logits(size_t(rows * vocab));
  for (int64_t r = 0; r < rows; ++r) std::copy(logits_row.begin(), logits_row.end(), logits.begin() + r * vocab);
  Guarded<int32_t> out(static_cast<size_t>(rows));
  SampleArgs a;
  a.logits = logits.data();
  a.rows = rows;
  a.vocab = vocab;
  a.params = params.data();
  a.out = out.data();
  absl::Status s = cpu_sample(make_ctx(mode, 2), a);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(out.check_guards(), "");
  return std::vector<int32_t>(out.data(), out.data() + rows);
}

std::vector<SamplingRow> seeded_rows(int64_t n, uint64_t seed, float temperature, int top_k = 0, float top_p = 1.f) {
  std::vector<SamplingRow> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) rows[i] = {temperature, top_k, top_p, sampling_uniform(seed, uint64_t(i))};
  return rows;
}

// Pearson's chi-square of observed counts against expected probabilities (over ids with p > 0).
double chi_square(const std::vector<int32_t>& tokens, const std::vector<double>& p) {
  std::vector<double> counts(p.size(), 0.0);
  for (int32_t t : tokens) counts.at(size_t(t)) += 1.0;
  double chi = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0.0) {
      EXPECT_EQ(counts[i], 0.0) << "id " << i << " has probability 0 but was drawn";
      continue;
    }
    const double e = p[i] * double(tokens.size());
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

// softmax(logits / T) in double, restricted to `keep` (ids), renormalised.
std::vector<double> softmax_over(const std::vector<float>& logits, double T, const std::set<int>& keep) {
  std::vector<double> p(logits.size(), 0.0);
  double sum = 0.0;
  for (int i : keep) sum += (p[i] = std::exp(double(logits[i]) / T));
  for (double& v : p) v /= sum;
  return p;
}

const std::vector<float> kLogits = {1.0f, 2.5f, 0.3f, 2.5f, -1.0f, 1.7f, 0.0f, 3.1f};

TEST(Sample, TemperatureZeroIsArgmax) {
  auto logits = random_f32(258, 3, 4.f);
  logits[200] = 9.f;
  logits[100] = 9.f;
  auto got = draw(logits, seeded_rows(50, 1, 0.f));
  for (int32_t t : got) EXPECT_EQ(t, 100);
}

TEST(Sample, SameSeedAndStepGiveSameTokenInAnyRowAndMode) {
  auto logits = random_f32(258, 5, 2.f);
  auto rows = seeded_rows(64, 42, 1.f, 0, 0.95f);
  auto first = draw(logits, rows);
  // The same parameters in reverse row order, and in default mode: every row keeps its token.
  std::vector<SamplingRow> reversed(rows.rbegin(), rows.rend());
  auto second = draw(logits, reversed, Mode::kDefault);
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(first[i], second[rows.size() - 1 - i]) << "step " << i;
  EXPECT_EQ(sampling_uniform(42, 7), sampling_uniform(42, 7));
}

TEST(Sample, DifferentSeedsGiveDifferentTokens) {
  // The inverse of the test above: the seed must actually steer the draw.
  auto logits = random_f32(258, 7, 1.f);
  std::vector<SamplingRow> rows;
  for (uint64_t seed = 0; seed < 200; ++seed) rows.push_back({1.f, 0, 1.f, sampling_uniform(seed, 0)});
  auto got = draw(logits, rows);
  std::set<int32_t> distinct(got.begin(), got.end());
  EXPECT_GT(distinct.size(), 50u) << "200 seeds drew only " << distinct.size() << " distinct tokens";
}

// 20k draws; for these degrees of freedom (<= 7) a chi-square above 30 has probability < 1e-4,
// and the draws are seeded, so the test is deterministic: a pass is not luck-dependent run to run.
constexpr int kDraws = 20000;
constexpr double kChiSquareBound = 30.0;

TEST(Sample, DistributionMatchesSoftmax) {
  std::set<int> all;
  for (int i = 0; i < int(kLogits.size()); ++i) all.insert(i);
  for (float T : {1.0f, 0.7f, 2.0f}) {
    auto got = draw(kLogits, seeded_rows(kDraws, 11, T));
    EXPECT_LT(chi_square(got, softmax_over(kLogits, T, all)), kChiSquareBound) << "T=" << T;
  }
}

TEST(Sample, TopKKeepsTheKLargest) {
  // Order: 7 (3.1), 1 (2.5), 3 (2.5: tie, higher id after 1), 5 (1.7), 0, 2, 6, 4.
  auto got = draw(kLogits, seeded_rows(kDraws, 13, 1.f, 3));
  EXPECT_LT(chi_square(got, softmax_over(kLogits, 1.0, {7, 1, 3})), kChiSquareBound);
  auto got2 = draw(kLogits, seeded_rows(kDraws, 14, 1.f, 2));  // the tie is cut by id: 3 is out
  EXPECT_LT(chi_square(got2, softmax_over(kLogits, 1.0, {7, 1})), kChiSquareBound);
}

TEST(Sample, TopPKeepsTheSmallestPrefixReachingP) {
  std::set<int> all;
  for (int i = 0; i < int(kLogits.size()); ++i) all.insert(i);
  const auto p = softmax_over(kLogits, 1.0, all);
  const int order[] = {7, 1, 3, 5, 0, 2, 6, 4};
  for (float top_p : {0.3f, 0.6f, 0.9f}) {
    std::set<int> prefix;
    double mass = 0.0;
    for (int id : order) {
      prefix.insert(id);
      mass += p[id];
      if (mass >= top_p) break;
    }
    auto got = draw(kLogits, seeded_rows(kDraws, 17, 1.f, 0, top_p));
    EXPECT_LT(chi_square(got, softmax_over(kLogits, 1.0, prefix)), kChiSquareBound) << "top_p=" << top_p;
  }
}

TEST(Sample, UniformNearZeroPicksLowestIdOfTheMaximum) {
  std::vector<SamplingRow> rows = {{1.f, 0, 1.f, 0.0}};
  EXPECT_EQ(draw({0.f, 5.f, 5.f, 1.f}, rows)[0], 1);
}

TEST(Sample, NonFiniteRowsFallBackToArgmax) {
  const float nan = std::nanf(""), inf = INFINITY;
  std::vector<SamplingRow> rows = {{1.f, 0, 1.f, 0.99}};
  EXPECT_EQ(draw({nan, nan, nan}, rows)[0], 0);
  EXPECT_EQ(draw({1.f, inf, 2.f, inf}, rows)[0], 1);
  EXPECT_EQ(draw({nan, 1.f, nan, 0.f}, rows)[0] % 2, 1);  // NaN never drawn
}

TEST(Sample, RejectsBadParameters) {
  std::vector<float> logits = {1.f, 2.f};
  struct Bad { const char* what; SamplingRow row; };
  const Bad bad[] = {{"row 0 temperature must be finite and >= 0, got -1", {-1.f, 0, 1.f, 0.5}},
                     {"row 0 top_k must be >= 0, got -2", {1.f, -2, 1.f, 0.5}},
                     {"row 0 top_p must be in (0, 1], got 0", {1.f, 0, 0.f, 0.5}},
                     {"row 0 top_p must be in (0, 1], got 1.5", {1.f, 0, 1.5f, 0.5}},
                     {"row 0 uniform must be in [0, 1), got 1", {1.f, 0, 1.f, 1.0}}};
  for (const Bad& b : bad) {
    int32_t out = -5;
    SampleArgs a;
    a.logits = logits.data();
    a.rows = 1;
    a.vocab = 2;
    a.params = &b.row;
    a.out = &out;
    absl::Status s = cpu_sample(make_ctx(Mode::kInvariant), a);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << b.what;
    EXPECT_NE(s.message().find(absl::StrCat("sample: ", b.what)), std::string::npos) << s;
    EXPECT_EQ(out, -5);
  }
}

}  // namespace
}  // namespace samebits::testing
