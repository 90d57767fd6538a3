// fixed_math: fixed_expf within 2 ulp of exp over a dense sweep, specials, and variants seen to
// differ (the inverse); fixed_exp/log/sincos against glibc's double functions; the rope table
// against std::sin/cos; sampling_uniform; division through a refined reciprocal against IEEE
// division.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <set>

#include "kernels/fixed_math.h"
#include "tests/support/expf_accuracy.h"
#include "xxhash.h"

namespace samebits {
namespace {

using testing::ExpfAccuracy;

// A twice-rounded a * b + c: fixed_expf as a compiler that ignored the written-out fused
// multiply-adds would build it. The bitwise comparisons of the vector and device paths must see it.
struct UnfusedFma {
  float operator()(float a, float b, float c) const { return a * b + c; }
};
float unfused_expf(float x) { return fixed_math_detail::expf_with(x, UnfusedFma{}); }

TEST(FixedExpf, WithinTwoUlpOverADenseSweep) {
  // Every 61st float bit pattern of all 2^32 (~70M points; the device test covers all of them),
  // and every pattern near the bounds where the result changes kind.
  ExpfAccuracy acc;
  for (uint64_t b = 0; b <= 0xffffffffull; b += 61) {
    const float x = bits_float(uint32_t(b));
    acc.add(x, fixed_expf(x));
  }
  for (float edge : {88.72283935546875f, kExpUnderflow, -87.33654f, 0.3465736f, -0.3465736f, -104.f, 89.f}) {
    for (int64_t d = -4096; d <= 4096; ++d) {
      const float x = bits_float(uint32_t(int64_t(float_bits(edge)) + d));
      acc.add(x, fixed_expf(x));
    }
  }
  EXPECT_TRUE(acc.ok()) << acc.describe();
  EXPECT_GT(acc.checked, 70000000);
  std::cout << "[ info ] fixed_expf: " << acc.describe() << "\n";
}

TEST(FixedExpf, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fixed_expf(0.f), 1.f);
  EXPECT_EQ(fixed_expf(-0.f), 1.f);
  EXPECT_EQ(fixed_expf(inf), inf);
  EXPECT_EQ(float_bits(fixed_expf(-inf)), 0u);
  EXPECT_EQ(fixed_expf(89.f), inf);
  EXPECT_EQ(fixed_expf(88.72284f), inf);  // just above ln(FLT_MAX)
  EXPECT_LT(fixed_expf(88.7228f), inf);
  EXPECT_EQ(float_bits(fixed_expf(-104.f)), 0u);
  EXPECT_EQ(float_bits(fixed_expf(kExpUnderflow)), 0u);
  EXPECT_GT(fixed_expf(std::nextafter(kExpUnderflow, 0.f)), 0.f);  // the smallest subnormal, not flushed
  EXPECT_GT(fixed_expf(-103.f), 0.f);
  const float nan = std::nanf("");
  EXPECT_EQ(float_bits(fixed_expf(nan)), float_bits(nan));
  EXPECT_EQ(float_bits(fixed_expf(-nan)), float_bits(-nan));
}

// Inverse of every bitwise comparison with fixed_expf (vector paths, the device): a function that
// rounds its multiply-adds twice, or a correctly rounded exp, is seen to differ.
TEST(FixedExpf, TwiceRoundedAndCorrectlyRoundedVariantsDiffer) {
  int64_t unfused_differs = 0, rounded_differs = 0, checked = 0;
  for (uint64_t b = 0; b <= 0xffffffffull; b += 4099) {
    const float x = bits_float(uint32_t(b));
    if (std::isnan(x)) continue;
    ++checked;
    if (float_bits(unfused_expf(x)) != float_bits(fixed_expf(x))) ++unfused_differs;
    if (float_bits(float(std::exp(double(x)))) != float_bits(fixed_expf(x))) ++rounded_differs;
  }
  EXPECT_GT(unfused_differs, 0) << "of " << checked;
  EXPECT_GT(rounded_differs, 0) << "of " << checked;
  std::cout << "[ info ] of " << checked << " inputs the twice-rounded form differs at " << unfused_differs
            << ", the correctly rounded exp at " << rounded_differs << "\n";
}

TEST(FixedDoubleMath, ExpLogSinCosMatchGlibcToE15) {
  double worst_exp = 0, worst_log = 0, worst_sin = 0, worst_cos = 0;
  for (int i = 0; i <= 200000; ++i) {
    const double x = -700.0 + 1400.0 * i / 200000.0 + 1e-7 * i;
    worst_exp = std::max(worst_exp, std::fabs(fixed_exp(x) - std::exp(x)) / std::exp(x));
    const double y = std::exp(-690.0 + 1380.0 * i / 200000.0);  // 1e-300 .. 1e300
    worst_log = std::max(worst_log, std::fabs(fixed_log(y) - std::log(y)) / std::max(1.0, std::fabs(std::log(y))));
    const double z = 1.0 + (i - 100000) * 1e-9;  // near 1, where log is small
    worst_log = std::max(worst_log, std::fabs(fixed_log(z) - std::log(z)) / std::max(1e-300, std::fabs(std::log(z))));
    const double a = -1e5 + 2e5 * i / 200000.0 + 1e-6 * i;  // rope angles: up to ~max_position
    double s, c;
    fixed_sincos(a, &s, &c);
    worst_sin = std::max(worst_sin, std::fabs(s - std::sin(a)));
    worst_cos = std::max(worst_cos, std::fabs(c - std::cos(a)));
  }
  EXPECT_LT(worst_exp, 1e-15);
  EXPECT_LT(worst_log, 1e-15);
  // Absolute: sin/cos of |a| up to 1e5 after an exact three-part reduction by pi/2.
  EXPECT_LT(worst_sin, 1e-15);
  EXPECT_LT(worst_cos, 1e-15);
  EXPECT_TRUE(std::isnan(fixed_log(-1.0)));
  EXPECT_EQ(fixed_log(0.0), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(fixed_log(1.0), 0.0);
  EXPECT_NEAR(fixed_log(5e-320), std::log(5e-320), 1e-12);  // subnormal input
}

TEST(RopeTable, MatchesStdSinCos) {
  for (auto [theta, head_dim, max_pos] : {std::tuple{1e6, 128, int64_t(40960)}, std::tuple{1e4, 64, int64_t(4096)}}) {
    const auto table = make_rope_table(theta, head_dim, max_pos);
    ASSERT_EQ(table.size(), size_t(max_pos) * head_dim);
    const int half = head_dim / 2;
    double worst = 0.0;
    for (int64_t p = 0; p < max_pos; p += (p < 64 ? 1 : 37)) {
      for (int i = 0; i < half; ++i) {
        const double angle = double(p) * std::pow(theta, -2.0 * i / head_dim);
        worst = std::max(worst, std::fabs(table[p * head_dim + i] - std::cos(angle)));
        worst = std::max(worst, std::fabs(table[p * head_dim + half + i] - std::sin(angle)));
      }
    }
    EXPECT_LT(worst, 1e-6) << "theta " << theta << " head_dim " << head_dim;
  }
  EXPECT_TRUE(make_rope_table(1e4, 7, 10).empty());
  EXPECT_TRUE(make_rope_table(1e4, 8, 0).empty());
}

TEST(SamplingUniform, IsTheDocumentedHashAndLooksUniform) {
  double sum = 0.0;
  std::set<double> distinct;
  for (uint64_t step = 0; step < 100000; ++step) {
    const double u = sampling_uniform(1234, step);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    distinct.insert(u);
    if (step < 100) {  // the definition: XXH3_64bits_withSeed over 8 little-endian bytes of step
      unsigned char le[8];
      for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(step >> (8 * i));
      ASSERT_EQ(u, double(XXH3_64bits_withSeed(le, 8, 1234) >> 11) / 9007199254740992.0);
    }
  }
  EXPECT_NEAR(sum / 100000.0, 0.5, 0.005);  // sd of the mean is 0.0009
  EXPECT_EQ(distinct.size(), 100000u);
  EXPECT_NE(sampling_uniform(1, 0), sampling_uniform(2, 0));
  EXPECT_EQ(sampling_uniform(77, 5), sampling_uniform(77, 5));
}

// divide_by_reciprocal with the reciprocal refine_reciprocal(RN(1 / l), l) is a / l correctly
// rounded over 2^24 pairs of its range (exponents of a in [-64, 64), of l in [-60, 60], random
// mantissas and signs; every eighth divisor of all-ones mantissa). The inverse: the quotient
// without its correction step (q = r * a alone) is seen to differ.
TEST(ReciprocalDivision, CorrectlyRoundedWithTheRoundedReciprocal) {
  int64_t differ = 0, uncorrected_differ = 0;
  float first_a = 0, first_l = 0;
  for (uint64_t i = 0; i < (uint64_t(1) << 24); ++i) {
    const uint64_t x = XXH3_64bits_withSeed(&i, sizeof i, 2026), y = XXH3_64bits_withSeed(&x, sizeof x, 7);
    const float a = make_float(uint32_t(x >> 20) & 1, int(x % 128) - 64, uint32_t(y));
    const uint32_t ml = (x >> 22) % 8 == 0 ? 0x7fffffu : uint32_t(y >> 32);
    const float l = make_float(uint32_t(x >> 21) & 1, int((x >> 8) % 121) - 60, ml);
    const float want = a / l;  // IEEE division, round to nearest even
    const float r = refine_reciprocal(1.0f / l, l);
    if (float_bits(divide_by_reciprocal(a, l, r)) != float_bits(want) && differ++ == 0) {
      first_a = a;
      first_l = l;
    }
    if (float_bits(fma_rn(r, a, 0.0f)) != float_bits(want)) ++uncorrected_differ;
  }
  EXPECT_EQ(differ, 0) << "first at a = " << first_a << ", l = " << first_l;
  EXPECT_GT(uncorrected_differ, 0) << "a quotient without its correction step went unseen";
}

// Why the device's first reciprocal matters: refined from RN(1 / l), r is RN(1 / l) for every one of
// the 2^23 mantissas of l; refined from the neighbour above or below, it misses for some of them.
TEST(ReciprocalDivision, RefinementKeepsTheRoundedReciprocalOnlyFromItself) {
  int64_t from_rounded = 0, from_above = 0, from_below = 0;
  for (uint32_t m = 0; m < (1u << 23); ++m) {
    const float l = make_float(0, 0, m), rn = 1.0f / l;
    from_rounded += refine_reciprocal(rn, l) != rn;
    from_above += refine_reciprocal(std::nextafter(rn, 2.0f), l) != rn;
    from_below += refine_reciprocal(std::nextafter(rn, 0.0f), l) != rn;
  }
  EXPECT_EQ(from_rounded, 0);
  EXPECT_GT(from_above + from_below, 0);
  std::cout << "[ info ] refined from an ulp above / below RN(1/l): " << from_above << " / " << from_below
            << " of 2^23 mantissas miss RN(1/l)\n";
}

}  // namespace
}  // namespace samebits
