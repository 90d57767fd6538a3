// The CPU kernels' vector paths (kernels/cpu/isa.h): every path this machine supports gives the
// portable path's bits: linear in both modes (split-K parts 1..16), for shapes with and without
// tails, bf16 and fp32 outputs, with and without bias; fixed_expf_array (attention's exps) against
// fixed_expf over specials, the whole useful range and random bit patterns. Paths the CPU lacks are
// skipped visibly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/exp_simd.h"
#include "kernels/fixed_math.h"
#include "kernels/cpu/isa.h"
#include "tests/support/test_support.h"

namespace samebits::testing {
namespace {

using cpu::Isa;

// Restores the process's path when a test ends.
struct ScopedIsa {
  Isa saved = cpu::active_isa();
  explicit ScopedIsa(Isa isa) { cpu::set_active_isa(isa); }
  ~ScopedIsa() { cpu::set_active_isa(saved); }
};

struct IsaLinearCase {
  Isa isa;
  int64_t M, N, K;
  int split_k;
  bool bias, f32_out;
  std::string name() const {
    return absl::StrCat(std::string(cpu::isa_name(isa)), "_M", M, "_N", N, "_K", K, "_split", split_k, bias ? "_bias" : "",
                        f32_out ? "_f32" : "_bf16");
  }
};
void PrintTo(const IsaLinearCase& c, std::ostream* os) { *os << c.name(); }

std::vector<IsaLinearCase> isa_linear_cases() {
  std::vector<IsaLinearCase> out;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {1, 5, 15}, {3, 7, 17}, {5, 67, 256},
                           {1, 512, 256}, {70, 9, 768}, {130, 66, 300}, {4, 258, 256}}) {
      for (int split_k : {1, 2, 3, 16}) {
        out.push_back({isa, M, N, K, split_k, (M + split_k) % 2 == 0, N % 3 == 0});
      }
    }
  }
  return out;
}

class IsaLinear : public ::testing::TestWithParam<IsaLinearCase> {};

// Output bytes of one linear call under a path.
std::string linear_bytes(Isa isa, const IsaLinearCase& c, const std::vector<bf16>& x, const std::vector<bf16>& w,
                         const std::vector<bf16>& bias) {
  ScopedIsa scoped(isa);
  std::vector<bf16> y(c.f32_out ? 0 : size_t(c.M * c.N));
  std::vector<float> y_f32(c.f32_out ? size_t(c.M * c.N) : 0);
  LinearArgs a;
  a.x = x.data();
  a.w = w.data();
  a.bias = c.bias ? bias.data() : nullptr;
  a.M = c.M;
  a.N = c.N;
  a.K = c.K;
  a.plan = {MatmulPlan::Kind::kFixedOrder, c.split_k};
  a.y = c.f32_out ? nullptr : y.data();
  a.y_f32 = c.f32_out ? y_f32.data() : nullptr;
  ExecContext ctx;
  ctx.num_threads = 2;
  EXPECT_TRUE(cpu_linear(ctx, a).ok());
  return c.f32_out ? std::string(reinterpret_cast<const char*>(y_f32.data()), y_f32.size() * sizeof(float))
                   : std::string(reinterpret_cast<const char*>(y.data()), y.size() * sizeof(bf16));
}

TEST_P(IsaLinear, SameBitsAsPortable) {
  const IsaLinearCase c = GetParam();
  if (!cpu::isa_supported(c.isa)) GTEST_SKIP() << "this CPU has no " << cpu::isa_name(c.isa);
  // Values of mixed magnitude, so that any change of summation order would change the bits.
  auto x = random_bf16(size_t(c.M * c.K), 11, 4.f);
  auto w = random_bf16(size_t(c.N * c.K), 12, 0.5f);
  auto bias = random_bf16(size_t(c.N), 13);
  const std::string portable = linear_bytes(Isa::kPortable, c, x, w, bias);
  const std::string vector = linear_bytes(c.isa, c, x, w, bias);
  ASSERT_EQ(portable.size(), vector.size());
  EXPECT_TRUE(portable == vector) << c.name() << ": first differing byte "
                                  << std::mismatch(portable.begin(), portable.end(), vector.begin()).first -
                                         portable.begin();
}

INSTANTIATE_TEST_SUITE_P(Cases, IsaLinear, ::testing::ValuesIn(isa_linear_cases()),
                         [](const auto& info) { return info.param.name(); });

// The comparison can see a difference: the same inputs with another split count differ somewhere
// (so equal bytes above mean equal arithmetic, not an insensitive check).
TEST(IsaLinear, ComparisonSeesAnotherOrder) {
  const IsaLinearCase one{Isa::kPortable, 4, 258, 256, 1, false, true};
  IsaLinearCase two = one;
  two.split_k = 2;
  auto x = random_bf16(size_t(one.M * one.K), 11, 4.f);
  auto w = random_bf16(size_t(one.N * one.K), 12, 0.5f);
  EXPECT_NE(linear_bytes(Isa::kPortable, one, x, w, {}), linear_bytes(Isa::kPortable, two, x, w, {}));
}

class IsaExp : public ::testing::TestWithParam<Isa> {};

TEST_P(IsaExp, SameBitsAsFixedExpf) {
  const Isa isa = GetParam();
  if (!cpu::isa_supported(isa)) GTEST_SKIP() << "this CPU has no " << cpu::isa_name(isa);
  std::vector<float> in = {0.f, -0.f, 1.f, -1.f, 88.72283935546875f, 88.7228469848632812f, -103.972084045410156f,
                           -103.97209167480469f, -87.33654f, -87.5f, -100.f, 88.f, 1e-30f, -1e-30f, 3.4e38f, -3.4e38f,
                           std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()};
  for (float x = -110.f; x < 95.f; x += 0.00731f) in.push_back(x);  // overflow, normal and subnormal results
  std::mt19937 rng(5);
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = rng();
    float x;
    std::memcpy(&x, &bits, sizeof x);
    in.push_back(x);
  }
  std::vector<float> out(in.size());
  {
    ScopedIsa scoped(isa);
    cpu::fixed_expf_array(in.data(), out.data(), int64_t(in.size()));
  }
  int64_t differ = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const float want = fixed_expf(in[i]);
    if (std::memcmp(&want, &out[i], sizeof want) != 0 && ++differ <= 5)
      ADD_FAILURE() << "x=" << in[i] << " (" << i << "): vector " << out[i] << ", fixed_expf " << want;
  }
  EXPECT_EQ(differ, 0) << "of " << in.size();
}

INSTANTIATE_TEST_SUITE_P(Paths, IsaExp, ::testing::Values(Isa::kPortable, Isa::kAvx2, Isa::kAvx512),
                         [](const auto& info) { return std::string(cpu::isa_name(info.param)); });

TEST(CpuIsa, PortableAlwaysSupportedAndFirst) {
  const auto isas = cpu::supported_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), Isa::kPortable);
  for (Isa isa : isas) std::printf("supported CPU path: %s\n", std::string(cpu::isa_name(isa)).c_str());
}

}  // namespace
}  // namespace samebits::testing
