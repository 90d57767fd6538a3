// argmax: lowest id among the maxima, NaN never wins, all-NaN -> 0; both modes; guards; checks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "tests/kernels/reference.h"
#include "tests/support/test_support.h"

namespace samebits::testing {
namespace {

std::vector<int32_t> run_argmax(Mode mode, const std::vector<float>& logits, int64_t rows, int64_t vocab) {
  Guarded<int32_t> out(static_cast<size_t>(rows));
  ArgmaxArgs a;
  a.logits = logits.data();
  a.rows = rows;
  a.vocab = vocab;
  a.out = out.data();
  absl::Status s = cpu_argmax(make_ctx(mode, 2), a);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(out.check_guards(), "");
  return std::vector<int32_t>(out.data(), out.data() + rows);
}

// The obvious definition, written differently: collect the maximum, then the first index holding it.
int32_t expected_argmax(const float* row, int64_t vocab) {
  float best = -std::numeric_limits<float>::infinity();
  bool any = false;
  for (int64_t i = 0; i < vocab; ++i) {
    if (!std::isnan(row[i])) {
      best = any ? std::max(best, row[i]) : row[i];
      any = true;
    }
  }
  if (!any) return 0;
  for (int64_t i = 0; i < vocab; ++i) {
    if (row[i] == best) return int32_t(i);
  }
  return -1;
}

TEST(Argmax, MatchesDefinitionWithTiesNanAndInfinities) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (int64_t vocab : {int64_t(1), int64_t(258), int64_t(151936)}) {
    const int64_t rows = vocab > 1000 ? 3 : 40;
    auto logits = random_f32(size_t(rows * vocab), 97 + vocab, 8.0f);
    for (int64_t r = 0; r < rows && vocab > 1; ++r) {
      float* row = logits.data() + r * vocab;
      switch (r % 8) {
        case 1: row[vocab - 1] = 100.f; row[vocab / 2] = 100.f; break;   // tie: lower id wins
        case 2: row[0] = nan; row[1] = 50.f; row[2] = 50.f; break;       // NaN first, then a tie
        case 3: for (int64_t i = 0; i < vocab; ++i) row[i] = nan; break; // all NaN -> 0
        case 4: row[vocab - 1] = inf; row[3] = inf; break;               // +inf tie
        case 5: for (int64_t i = 0; i < vocab; ++i) row[i] = -inf; break;
        case 6: row[5] = nan; row[vocab - 2] = 1e30f; break;
        default: break;
      }
    }
    for (Mode mode : {Mode::kDefault, Mode::kInvariant}) {
      auto got = run_argmax(mode, logits, rows, vocab);
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_EQ(got[r], expected_argmax(logits.data() + r * vocab, vocab))
            << mode_name(mode) << " vocab " << vocab << " row " << r << " (case " << r % 8 << ")";
      }
    }
  }
}

TEST(Argmax, RejectsBadArguments) {
  std::vector<float> logits(8, 1.f);
  std::vector<int32_t> out(2);
  auto base = [&] {
    ArgmaxArgs a;
    a.logits = logits.data();
    a.rows = 2;
    a.vocab = 4;
    a.out = out.data();
    return a;
  };
  struct Bad { const char* what; ArgmaxArgs args; };
  std::vector<Bad> bad;
  { auto a = base(); a.logits = nullptr; bad.push_back({"logits is null", a}); }
  { auto a = base(); a.out = nullptr; bad.push_back({"out is null", a}); }
  { auto a = base(); a.rows = 0; bad.push_back({"rows must be positive, got 0", a}); }
  { auto a = base(); a.vocab = 0; bad.push_back({"vocab must be in [1, 2^31), got 0", a}); }
  for (const Bad& b : bad) {
    absl::Status s = cpu_argmax(make_ctx(Mode::kInvariant), b.args);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << b.what;
    EXPECT_NE(s.message().find(absl::StrCat("argmax: ", b.what)), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace samebits::testing
