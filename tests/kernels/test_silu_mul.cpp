// silu_mul: correctness vs fp64 in both modes (bitwise equal: pointwise), extremes, guards, checks.
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

std::vector<bf16> run_silu_mul(const ExecContext& ctx, const std::vector<bf16>& g,
                               const std::vector<bf16>& u, int64_t T, int64_t F) {
  Guarded<bf16> y(g.size());
  SiluMulArgs a;
  a.gate = g.data();
  a.up = u.data();
  a.T = T;
  a.F = F;
  a.y = y.data();
  absl::Status s = cpu_silu_mul(ctx, a);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(y.check_guards(), "");
  return std::vector<bf16>(y.data(), y.data() + g.size());
}

struct SiluCase {
  int64_t T, F;
  float gate_scale;
  std::string name() const { return absl::StrCat("T", T, "_F", F, "_gate", int(gate_scale)); }
};
// gtest prints parameters with this (ctest's test names show the readable case).
void PrintTo(const SiluCase& c, std::ostream* os) { *os << c.name(); }

class SiluMulCorrectness : public ::testing::TestWithParam<SiluCase> {};

TEST_P(SiluMulCorrectness, MatchesFp64ReferenceInBothModes) {
  const SiluCase& c = GetParam();
  auto g = random_bf16(size_t(c.T * c.F), 81, c.gate_scale);
  auto u = random_bf16(size_t(c.T * c.F), 83, 2.0f);
  if (c.gate_scale > 50) {  // where exp(-g) overflows fp32 (silu -> -0) and where it underflows
    g[0] = to_bf16(-100.f);
    g[1] = to_bf16(100.f);
    g[2] = to_bf16(-88.f);
  }
  auto d = run_silu_mul(make_ctx(Mode::kDefault, 2), g, u, c.T, c.F);
  auto i = run_silu_mul(make_ctx(Mode::kInvariant, 2), g, u, c.T, c.F);
  EXPECT_TRUE(same_bytes(d.data(), i.data(), d.size()));
  auto ref = reference_silu_mul(g, u);
  for (size_t j = 0; j < g.size(); ++j) {
    // fixed_expf (< 2 ulp), 1 + e and the division (2 roundings) give ~4 fp32 units on silu; then
    // two bf16 roundings (silu, then the product). Where exp(-g) overflows fp32, silu(g) is below
    // 1e-36 and the kernel gives -0: an absolute 1e-30 covers it.
    const double bound = (2 * kBf16Unit + 6 * kF32Unit) * std::fabs(ref[j]) * 1.01 + 1e-30;
    ASSERT_LE(std::fabs(to_float(i[j]) - ref[j]), bound) << "element " << j << " gate " << to_float(g[j]);
  }
}

TEST(SiluMul, EqualsTheScalarFormulaBitForBit) {
  // Every bf16 gate value (all 65536 bit patterns: NaN, inf, subnormals, the vector and the scalar
  // paths), against the documented formula with the scalar fixed_expf, one value at a time.
  const int64_t F = 65536;
  std::vector<bf16> g(F), u = random_bf16(F, 89, 3.0f);
  for (int64_t i = 0; i < F; ++i) g[i] = bf16{uint16_t(i)};
  auto y = run_silu_mul(make_ctx(Mode::kInvariant, 2), g, u, 1, F);
  for (int64_t i = 0; i < F; ++i) {
    const float gv = to_float(g[i]);
    const bf16 expected = to_bf16(round_bf16(gv / (1.0f + fixed_expf(-gv))) * to_float(u[i]));
    ASSERT_EQ(y[i].bits, expected.bits) << "gate bits 0x" << std::hex << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, SiluMulCorrectness,
                         ::testing::Values(SiluCase{1, 768, 4.f}, SiluCase{7, 3072, 8.f},
                                           SiluCase{3, 33, 100.f}, SiluCase{1, 1, 1.f}),
                         [](const auto& info) { return info.param.name(); });

TEST(SiluMulArgs, RejectsBadArguments) {
  auto g = random_bf16(8, 1);
  std::vector<bf16> y(8);
  auto base = [&] {
    SiluMulArgs a;
    a.gate = g.data();
    a.up = g.data();
    a.T = 2;
    a.F = 4;
    a.y = y.data();
    return a;
  };
  struct Bad { const char* what; SiluMulArgs args; };
  std::vector<Bad> bad;
  { auto a = base(); a.gate = nullptr; bad.push_back({"gate is null", a}); }
  { auto a = base(); a.up = nullptr; bad.push_back({"up is null", a}); }
  { auto a = base(); a.y = nullptr; bad.push_back({"y is null", a}); }
  { auto a = base(); a.T = 0; bad.push_back({"T must be positive, got 0", a}); }
  { auto a = base(); a.F = -2; bad.push_back({"F must be positive, got -2", a}); }
  for (const Bad& b : bad) {
    absl::Status s = cpu_silu_mul(make_ctx(Mode::kInvariant), b.args);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << b.what;
    EXPECT_NE(s.message().find(absl::StrCat("silu_mul: ", b.what)), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace samebits::testing
