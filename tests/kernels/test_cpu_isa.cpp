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
#include "kernels/attention_math.h"
#include "kernels/cpu/attention_simd.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/lanes.h"
#include "tests/kernels/attention_reference.h"
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
    // {2, 4100, 520}: a weight of 4.3 MB, larger than one core's cache, which rows without a
    // panel read with prefetching (kernels/cpu/linear_simd.h). {7, 6, 1100} and {67, 5, 2072}: K
    // over several of the AVX2 panel's K chunks (kernels/cpu/linear_avx2_body.h), odd rows.
    for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {1, 5, 15}, {3, 7, 17}, {5, 67, 256},
                           {1, 512, 256}, {70, 9, 768}, {130, 66, 300}, {4, 258, 256}, {2, 4100, 520},
                           {7, 6, 1100}, {67, 5, 2072}}) {
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
                           std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min(),
                           -104.f, -104.00001f, 89.f, 89.00001f, -std::numeric_limits<float>::quiet_NaN()};
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

// silu_mul: every bf16 gate (NaN, inf, subnormal, both overflow sides) against seeded up values,
// in rows whose length leaves a tail (F = 4099), each vector path against the portable one.
class IsaSiluMul : public ::testing::TestWithParam<Isa> {};

std::vector<bf16> silu_mul_under(Isa isa, const std::vector<bf16>& g, const std::vector<bf16>& u, int64_t T,
                                 int64_t F) {
  ScopedIsa scoped(isa);
  std::vector<bf16> y(g.size());
  SiluMulArgs a;
  a.gate = g.data();
  a.up = u.data();
  a.y = y.data();
  a.T = T;
  a.F = F;
  ExecContext ctx;
  ctx.num_threads = 2;
  EXPECT_TRUE(cpu_silu_mul(ctx, a).ok());
  return y;
}

TEST_P(IsaSiluMul, SameBitsAsPortable) {
  const Isa isa = GetParam();
  if (!cpu::isa_supported(isa)) GTEST_SKIP() << "this CPU has no " << cpu::isa_name(isa);
  const int64_t T = 17, F = 4099;  // 69,683 values: every bf16 bit pattern once, then repeats
  std::vector<bf16> g(size_t(T * F));
  for (size_t i = 0; i < g.size(); ++i) g[i].bits = uint16_t(i * 40503u);  // odd step: a permutation
  const auto u = random_bf16(g.size(), 21, 3.f);
  const auto want = silu_mul_under(Isa::kPortable, g, u, T, F);
  const auto got = silu_mul_under(isa, g, u, T, F);
  int64_t differ = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (want[i].bits != got[i].bits && ++differ <= 5)
      ADD_FAILURE() << "g bits 0x" << std::hex << g[i].bits << " u bits 0x" << u[i].bits << ": portable 0x"
                    << want[i].bits << ", " << cpu::isa_name(isa) << " 0x" << got[i].bits << std::dec;
  }
  EXPECT_EQ(differ, 0) << "of " << g.size();
}

INSTANTIATE_TEST_SUITE_P(Paths, IsaSiluMul, ::testing::Values(Isa::kAvx2, Isa::kAvx512),
                         [](const auto& info) { return std::string(cpu::isa_name(info.param)); });

// attention: one mixed step (prefills with and without cached keys, decodes, ranges longer and
// shorter than a key block of the vector paths) per shape, mode and path; the outputs of the vector
// path against the portable one bitwise. Shapes: GQA groups of 2, 3 and 4 heads (odd groups leave
// a single head), head_dim with and without a tail below 16.
struct IsaAttentionCase {
  Isa isa;
  Mode mode;
  AttnShape shape;
  std::string name() const {
    return absl::StrCat(std::string(cpu::isa_name(isa)), "_", std::string(mode_name(mode)), "_", shape.name());
  }
};
void PrintTo(const IsaAttentionCase& c, std::ostream* os) { *os << c.name(); }

std::vector<IsaAttentionCase> isa_attention_cases() {
  std::vector<IsaAttentionCase> out;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512})
    for (Mode mode : {Mode::kDefault, Mode::kInvariant})
      for (AttnShape shape : {AttnShape{4, 2, 64, 16}, AttnShape{6, 2, 72, 8}, AttnShape{8, 2, 40, 16}, AttnShape{1, 1, 6, 4}})
        out.push_back({isa, mode, shape});
  return out;
}

// The outputs of one seeded mixed step under a path (and optionally a plan), concatenated.
std::vector<bf16> attention_step_under(Isa isa, const IsaAttentionCase& c) {
  ScopedIsa scoped(isa);
  PagedCache cache(c.shape, 400, 7);
  std::vector<SeqData> seqs;
  const int64_t lens[] = {300, 37, 129, 17, 90};
  for (int i = 0; i < 5; ++i) seqs.push_back(make_seq_data(c.shape, lens[i], 100 + i, 4.f));
  // (cached, q_len) per sequence: decode after a long context, prefill over cached keys, fresh
  // prefill, decode of a short one, prefill chunk in the middle.
  const std::pair<int64_t, int64_t> steps[] = {{299, 1}, {20, 17}, {0, 129}, {16, 1}, {40, 50}};
  std::vector<StepPart> parts;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<int> id = cache.add_sequence(seqs[i].len);
    EXPECT_TRUE(id.ok());
    EXPECT_TRUE(write_prefix(cache, *id, seqs[i], 0, steps[i].first).ok());
    parts.push_back({*id, &seqs[i], steps[i].first, steps[i].second});
  }
  StepOptions o;
  o.mode = c.mode;
  o.num_threads = 2;
  absl::StatusOr<StepResult> r = run_step(cache, parts, o);
  EXPECT_TRUE(r.ok()) << r.status();
  std::vector<bf16> all;
  if (r.ok())
    for (const auto& rows : r->outputs) all.insert(all.end(), rows.begin(), rows.end());
  return all;
}

class IsaAttention : public ::testing::TestWithParam<IsaAttentionCase> {};

TEST_P(IsaAttention, SameBitsAsPortable) {
  const IsaAttentionCase c = GetParam();
  if (!cpu::isa_supported(c.isa)) GTEST_SKIP() << "this CPU has no " << cpu::isa_name(c.isa);
  const std::vector<bf16> portable = attention_step_under(Isa::kPortable, c);
  const std::vector<bf16> vector = attention_step_under(c.isa, c);
  ASSERT_FALSE(portable.empty());
  EXPECT_TRUE(bitwise_equal(portable, vector)) << c.name() << ": first differing output " << first_difference(portable, vector);
}

INSTANTIATE_TEST_SUITE_P(Cases, IsaAttention, ::testing::ValuesIn(isa_attention_cases()),
                         [](const auto& info) { return info.param.name(); });

// The vector kernels' fp32 results before any bf16 rounding: scores equal dot_lanes(q, k) * scale
// and the value accumulators equal attention_accumulate_value's key-by-key sums, bitwise; the
// inverse: a plain sequential dot of the same rows differs from the lane order somewhere, so the
// fp32 comparison sees an order change.
class IsaAttentionFp32 : public ::testing::TestWithParam<Isa> {};

TEST_P(IsaAttentionFp32, ScoresAndValuesEqualTheLaneFormulas) {
  const Isa isa = GetParam();
  if (!cpu::isa_supported(isa)) GTEST_SKIP() << "this CPU has no " << cpu::isa_name(isa);
  const int group = 3, hd = 72, len = 37;
  const int64_t q_stride = 80;
  const auto qb = random_bf16(size_t(group * hd), 31, 4.f);
  const auto kb = random_bf16(size_t(len * hd), 32, 2.f);
  const auto vb = random_bf16(size_t(len * hd), 33, 2.f);
  std::vector<float> q(size_t(group * q_stride), 0.f);
  for (int g = 0; g < group; ++g)
    for (int d = 0; d < hd; ++d) q[g * q_stride + d] = to_float(qb[g * hd + d]);
  std::vector<const bf16*> k_rows, v_rows;
  for (int j = 0; j < len; ++j) {
    k_rows.push_back(&kb[size_t(j * hd)]);
    v_rows.push_back(&vb[size_t(j * hd)]);
  }
  const float scale = 0.117851130f;
  std::vector<float> scores(size_t(group * len));
  const cpu::AttentionScoresJob sj{q.data(), q_stride, group, hd, scale, k_rows.data(), len, scores.data()};
  isa == Isa::kAvx512 ? cpu::attention_scores_avx512(sj) : cpu::attention_scores_avx2(sj);
  int sequential_differs = 0;
  for (int g = 0; g < group; ++g) {
    for (int j = 0; j < len; ++j) {
      const float want = cpu::dot_lanes(&q[g * q_stride], k_rows[j], hd) * scale;
      EXPECT_EQ(float_bits(want), float_bits(scores[g * len + j])) << "head " << g << " key " << j;
      float sequential = 0.f;
      for (int d = 0; d < hd; ++d) sequential = sequential + q[g * q_stride + d] * to_float(k_rows[j][d]);
      sequential_differs += float_bits(sequential * scale) != float_bits(want);
    }
  }
  EXPECT_GT(sequential_differs, 0) << "a sequential dot gave the lane order's bits everywhere: the check is blind";

  std::vector<float> e(size_t(group * len));
  for (size_t i = 0; i < e.size(); ++i) e[i] = fixed_expf(-float(i % 17) * 0.37f);
  std::vector<float> acc(size_t(group * hd), 0.f), want(acc);
  std::vector<float*> heads;
  for (int g = 0; g < group; ++g) heads.push_back(&acc[size_t(g * hd)]);
  const cpu::AttentionValuesJob vj{e.data(), v_rows.data(), len, group, hd, heads.data()};
  isa == Isa::kAvx512 ? cpu::attention_values_avx512(vj) : cpu::attention_values_avx2(vj);
  for (int g = 0; g < group; ++g)
    for (int j = 0; j < len; ++j) attention_accumulate_value(e[g * len + j], v_rows[j], &want[size_t(g * hd)], hd);
  for (size_t i = 0; i < acc.size(); ++i) EXPECT_EQ(float_bits(want[i]), float_bits(acc[i])) << "value element " << i;
}

INSTANTIATE_TEST_SUITE_P(Paths, IsaAttentionFp32, ::testing::Values(Isa::kAvx2, Isa::kAvx512),
                         [](const auto& info) { return std::string(cpu::isa_name(info.param)); });

// rmsnorm: row blocks of every size (rows 1..40: partial blocks of 16 and of the AVX2 trees' 4),
// dims with and without tails, split parts 1..8 (default mode's plans; 1 is invariant mode's),
// with and without the fused residual add, in place and not; outputs and residual bitwise.
struct IsaNormCase {
  Isa isa;
  int64_t rows, dim;
  int parts;
  bool residual, in_place;
  std::string name() const {
    return absl::StrCat(std::string(cpu::isa_name(isa)), "_rows", rows, "_dim", dim, "_parts", parts,
                        residual ? "_residual" : "", in_place ? "_inplace" : "");
  }
};
void PrintTo(const IsaNormCase& c, std::ostream* os) { *os << c.name(); }

std::vector<IsaNormCase> isa_norm_cases() {
  std::vector<IsaNormCase> out;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512})
    for (auto [rows, dim] : {std::pair<int64_t, int64_t>{1, 256}, {5, 64}, {17, 72}, {40, 256}, {3, 37}, {33, 1000}})
      for (int parts : {1, 2, 8})
        out.push_back({isa, rows, dim, parts, (rows + parts) % 2 == 1, parts == 2});
  return out;
}

// y and the updated residual of one call under a path.
std::string norm_bytes(Isa isa, const IsaNormCase& c) {
  ScopedIsa scoped(isa);
  const size_t n = size_t(c.rows * c.dim);
  std::vector<bf16> x = random_bf16(n, 41, 3.f), res = random_bf16(n, 42, 3.f), w = random_bf16(size_t(c.dim), 43);
  std::vector<bf16> y(n);
  RmsNormArgs a;
  a.x = x.data();
  a.residual = c.residual ? res.data() : nullptr;
  a.weight = w.data();
  a.rows = c.rows;
  a.dim = c.dim;
  a.eps = 1e-6f;
  a.plan.parts = c.parts;
  a.y = c.in_place ? x.data() : y.data();
  ExecContext ctx;
  ctx.num_threads = 2;
  EXPECT_TRUE(cpu_rmsnorm(ctx, a).ok());
  const std::vector<bf16>& out = c.in_place ? x : y;
  std::string bytes(reinterpret_cast<const char*>(out.data()), n * sizeof(bf16));
  if (c.residual) bytes.append(reinterpret_cast<const char*>(res.data()), n * sizeof(bf16));
  return bytes;
}

class IsaNorm : public ::testing::TestWithParam<IsaNormCase> {};

TEST_P(IsaNorm, SameBitsAsPortable) {
  const IsaNormCase c = GetParam();
  if (!cpu::isa_supported(c.isa)) GTEST_SKIP() << "this CPU has no " << cpu::isa_name(c.isa);
  const std::string portable = norm_bytes(Isa::kPortable, c), vector = norm_bytes(c.isa, c);
  EXPECT_TRUE(portable == vector) << c.name() << ": first differing byte "
                                  << std::mismatch(portable.begin(), portable.end(), vector.begin()).first - portable.begin();
}

INSTANTIATE_TEST_SUITE_P(Cases, IsaNorm, ::testing::ValuesIn(isa_norm_cases()),
                         [](const auto& info) { return info.param.name(); });

// The comparison can see a difference: another part count changes some output of the same rows
// (a 1-ulp change of a sum of squares reaches a bf16 output only now and then: many rows).
TEST(IsaNorm, ComparisonSeesAnotherSplit) {
  const IsaNormCase one{Isa::kPortable, 2000, 1000, 1, false, false};
  IsaNormCase eight = one;
  eight.parts = 8;
  EXPECT_NE(norm_bytes(Isa::kPortable, one), norm_bytes(Isa::kPortable, eight));
}

TEST(CpuIsa, PortableAlwaysSupportedAndFirst) {
  const auto isas = cpu::supported_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), Isa::kPortable);
  for (Isa isa : isas) std::printf("supported CPU path: %s\n", std::string(cpu::isa_name(isa)).c_str());
}

}  // namespace
}  // namespace samebits::testing
