// fixed_math: fixed_expf within 2 ulp of exp over a dense sweep, specials; fixed_exp/log/sincos
// against glibc's double functions; the rope table against std::sin/cos; sampling_uniform.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "kernels/fixed_math.h"
#include "xxhash.h"

namespace samebits {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// |got - exact| in units of the fp32 ulp at the exact value (subnormal ulp 2^-149 at the bottom).
double ulp_error(float got, double exact) {
  int e;
  std::frexp(exact, &e);  // exact = m * 2^e, m in [0.5, 1): ulp = 2^(e - 24)
  double ulp = std::ldexp(1.0, std::max(e - 24, -149));
  return std::fabs(double(got) - exact) / ulp;
}

TEST(FixedExpf, WithinTwoUlpOverADenseSweep) {
  // Every 61st float bit pattern from 0 to the overflow bound on both signs: ~36M points.
  double worst = 0.0;
  float worst_x = 0.f;
  for (float sign : {1.f, -1.f}) {
    const uint32_t last = bits_of(sign > 0 ? 88.72283f : 103.9720f);
    for (uint32_t b = 0; b <= last; b += 61) {
      const float x = sign * float_of(b);
      const double err = ulp_error(fixed_expf(x), std::exp(double(x)));
      if (err > worst) {
        worst = err;
        worst_x = x;
      }
    }
  }
  EXPECT_LE(worst, 2.0) << "worst at x = " << worst_x;
  std::cout << "[ info ] fixed_expf worst error " << worst << " ulp at x = " << worst_x << "\n";
}

TEST(FixedExpf, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fixed_expf(0.f), 1.f);
  EXPECT_EQ(fixed_expf(-0.f), 1.f);
  EXPECT_EQ(fixed_expf(inf), inf);
  EXPECT_EQ(fixed_expf(-inf), 0.f);
  EXPECT_EQ(fixed_expf(89.f), inf);
  EXPECT_EQ(fixed_expf(88.72284f), inf);  // just above ln(FLT_MAX)
  EXPECT_LT(fixed_expf(88.7228f), inf);
  EXPECT_EQ(fixed_expf(-104.f), 0.f);
  EXPECT_GT(fixed_expf(-103.f), 0.f);  // subnormal, not flushed
  EXPECT_TRUE(std::isnan(fixed_expf(std::nanf(""))));
}

// The CUDA softmax uses the select form; it must give fixed_expf's bits for every input: here
// every 251st bit pattern of all 2^32 (both signs, NaNs and infinities included) and every
// pattern near the bounds where fixed_expf changes path (overflow, underflow, the two scalings).
TEST(FixedExpf, SelectFormEqualsBranchForm) {
  int64_t checked = 0, differ = 0;
  uint32_t first_bad = 0;
  auto check = [&](uint32_t b) {
    const float x = float_of(b);
    ++checked;
    if (bits_of(fixed_expf_select(x)) != bits_of(fixed_expf(x)) && differ++ == 0) first_bad = b;
  };
  for (uint64_t b = 0; b <= 0xffffffffull; b += 251) check(uint32_t(b));
  for (float edge : {88.72283935546875f, -103.972084045410156f, 88.0f, -87.33654f, -87.68f, 0.3465736f, -0.3465736f}) {
    for (int64_t d = -4096; d <= 4096; ++d) check(uint32_t(int64_t(bits_of(edge)) + d));
  }
  for (float special : {0.f, -0.f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                        std::nanf(""), -std::nanf("")}) {
    check(bits_of(special));
  }
  EXPECT_EQ(differ, 0) << "of " << checked << "; first at bit pattern 0x" << std::hex << first_bad;
  EXPECT_GT(checked, 17000000);
  // Inverse: the same comparison sees a function that differs by a rounding (correctly rounded exp).
  int64_t mutant_differs = 0;
  for (uint64_t b = 0; b <= 0xffffffffull; b += 4099) {
    const float x = float_of(uint32_t(b));
    if (!std::isnan(x) && bits_of(float(std::exp(double(x)))) != bits_of(fixed_expf_select(x))) ++mutant_differs;
  }
  EXPECT_GT(mutant_differs, 0);
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

}  // namespace
}  // namespace samebits
