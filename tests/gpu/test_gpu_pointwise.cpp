// The ops without a floating-point reduction on the GPU: rope, silu_mul, embedding, kv_write,
// argmax, sample and the synthetic-weight fill run the CPU's arithmetic, so they must equal the CPU
// backend BIT FOR BIT (tolerance 0), in both modes, with guard memory; bad indices found on the
// device are reported by the next synchronize.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "kernels/fixed_math.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/test_support.h"
#if defined(SAMEBITS_HAVE_CUDA)
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/silu_mul_route.h"
#endif
#if defined(SAMEBITS_GPU_TESTS_HAVE_MODEL)
#include "models/tiny_qwen/weights.h"
#include "xxhash.h"
#endif

namespace samebits::testing {
namespace {

std::vector<int32_t> random_ints(size_t n, uint64_t seed, int32_t lo, int32_t hi) {
  std::vector<float> u = random_f32(n, seed, 1.f);
  std::vector<int32_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = lo + int32_t(std::fabs(u[i]) * float(hi - lo - 1) + 0.5f) % (hi - lo);
  return out;
}

TEST(GpuPointwise, RopeEqualsCpuBitwise) {
  SAMEBITS_REQUIRE_GPU();
  for (int D : {64, 128}) {
    const int64_t T = 37, max_pos = 4096;
    const int hq = 4, hkv = 2;
    const auto q = random_bf16(size_t(T * hq * D), 1, 4.f);
    const auto k = random_bf16(size_t(T * hkv * D), 2, 4.f);
    const auto pos = random_ints(size_t(T), 3, 0, int32_t(max_pos));
    const std::vector<float> table = make_rope_table(1e6, D, max_pos);
    std::vector<std::vector<bf16>> results[2];
    for (int b = 0; b < 2; ++b) {
      const Backend& be = b == 0 ? *gpu : cpu_backend();
      auto dq = device_copy(be, q);
      auto dk = device_copy(be, k);
      auto dp = device_copy(be, pos);
      auto dt = device_copy(be, table);
      RopeArgs a{dq->data(), dk->data(), dp->data(), T, hq, hkv, D, dt->data(), max_pos};
      ExecContext ctx;
      SAMEBITS_ASSERT_OK(be.rope(ctx, a));
      SAMEBITS_ASSERT_OK(be.synchronize(ctx));
      results[b] = {dq->download(), dk->download()};
      EXPECT_EQ(dq->check_guards() + dk->check_guards(), "");
    }
    EXPECT_TRUE(same_bits(results[0][0], results[1][0])) << "q, head_dim " << D;
    EXPECT_TRUE(same_bits(results[0][1], results[1][1])) << "k, head_dim " << D;
  }
}

TEST(GpuPointwise, RopeBadPositionIsReported) {
  SAMEBITS_REQUIRE_GPU();
  const int D = 64;
  auto dq = device_copy(*gpu, random_bf16(size_t(2 * D), 4));
  auto dk = device_copy(*gpu, random_bf16(size_t(2 * D), 5));
  auto dp = device_copy(*gpu, std::vector<int32_t>{3, 99});
  auto dt = device_copy(*gpu, make_rope_table(1e6, D, 16));
  RopeArgs a{dq->data(), dk->data(), dp->data(), 2, 1, 1, D, dt->data(), 16};
  ExecContext ctx;
  SAMEBITS_ASSERT_OK(gpu->rope(ctx, a));
  const absl::Status st = gpu->synchronize(ctx);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_NE(st.message().find("position 99"), std::string::npos) << st;
  SAMEBITS_ASSERT_OK(gpu->synchronize(ctx));  // reported once
}

TEST(GpuPointwise, SiluMulEqualsCpuBitwise) {
  SAMEBITS_REQUIRE_GPU();
  const int64_t T = 5;
  // F = 3000: 16-byte vectors (T * F % 8 == 0); F = 3001: one element per thread.
  for (auto [F, scale] : {std::pair<int64_t, float>{3000, 1.f}, {3000, 12.f}, {3000, 120.f}, {3001, 12.f}}) {
    const auto g = random_bf16(size_t(T * F), 6, scale);
    const auto u = random_bf16(size_t(T * F), 7, 2.f);
    std::vector<bf16> out[2];
    for (int b = 0; b < 2; ++b) {
      const Backend& be = b == 0 ? *gpu : cpu_backend();
      auto dg = device_copy(be, g);
      auto du = device_copy(be, u);
      DeviceBuffer<bf16> y(be, size_t(T * F));
      ExecContext ctx;
      SAMEBITS_ASSERT_OK(be.silu_mul(ctx, SiluMulArgs{dg->data(), du->data(), T, F, y.data()}));
      out[b] = y.download();
      EXPECT_EQ(y.check_guards(), "");
    }
    EXPECT_TRUE(same_bits(out[0], out[1])) << "F " << F << " gate scale " << scale << " first diff "
                                           << first_diff(out[0], out[1]);
  }
}

#if defined(SAMEBITS_HAVE_CUDA)
// silu_mul's 16-byte path: the current kernel (two pieces per thread, cvt rounding) and the previous
// one (SiluMulRoute) bit for bit, and against the CPU backend (bit for bit but NaN payloads): gate
// and up apart and interleaved in groups of 8 (gate_up by parts), sizes that leave a block partly
// idle, the burst's 1000 x 12288 (1 x 12288 under the sanitizers), and gate / up values at the
// edges: NaNs of both signs with payloads, infinities, zeros of both signs, subnormals, the exp's
// clamp bounds, the largest finite.
TEST(GpuPointwise, SiluMulCurrentEqualsPreviousAndCpuBitwise) {
  SAMEBITS_REQUIRE_GPU();
  const uint16_t edges[] = {0x7fc1, 0xffa5, 0x7f80, 0xff80, 0x0000, 0x8000, 0x0001, 0x8071, 0x7f7f, 0xff7f,
                            0x42d0, 0xc2d0, 0x42b2, 0xc2b2, 0x3f80, 0xbf80, 0x4380, 0xc380};
  const int64_t burst_rows = sanitizer_shapes() ? 1 : 1000;
  const int64_t shapes[][2] = {{5, 3000}, {1, 8}, {3, 1368}, {burst_rows, 12288}};
  uint64_t seed = 400;
  for (const auto& s : shapes) {
    for (int64_t group : {0, 8}) {
      const int64_t T = s[0], F = s[1];
      SCOPED_TRACE(absl::StrCat("T=", T, " F=", F, " group=", group));
      // group 0: gate [T, F] then up [T, F]; group 8: one [T, 2F] buffer, gate and up pieces alternating.
      std::vector<bf16> in = random_bf16(size_t(2 * T * F), ++seed, 12.f);
      for (size_t i = 0; i < in.size(); i += 97) in[i] = bf16{edges[(i / 97) % std::size(edges)]};
      std::vector<bf16> out[3];
      for (int b = 0; b < 3; ++b) {
        const Backend& be = b == 2 ? cpu_backend() : *gpu;
        auto din = device_copy(be, in);
        DeviceBuffer<bf16> y(be, size_t(T * F));
        SiluMulArgs a{din->data(), din->data() + (group == 0 ? T * F : group), T, F, y.data(), group};
        ExecContext ctx;
        if (b == 2) {
          SAMEBITS_ASSERT_OK(be.silu_mul(ctx, a));
        } else {
          SAMEBITS_ASSERT_OK(cuda_silu_mul_routed(ctx, a, b == 0 ? SiluMulRoute::kCurrent : SiluMulRoute::kPrevious));
        }
        SAMEBITS_ASSERT_OK(be.synchronize(ctx));
        out[b] = y.download();
        EXPECT_EQ(y.check_guards(), "");
      }
      EXPECT_TRUE(same_bits(out[0], out[1])) << "current vs previous, first diff " << first_diff(out[0], out[1]);
      // The CPU keeps a NaN operand's sign and payload where the GPU's arithmetic gives the canonical
      // NaN (the contract leaves NaN bits between backends open): there, both NaN.
      int64_t cpu_diffs = 0, first_cpu_diff = -1;
      for (size_t i = 0; i < out[2].size(); ++i) {
        const bool both_nan = std::isnan(to_float(out[0][i])) && std::isnan(to_float(out[2][i]));
        if (out[0][i].bits != out[2][i].bits && !both_nan) {
          if (cpu_diffs++ == 0) first_cpu_diff = int64_t(i);
        }
      }
      EXPECT_EQ(cpu_diffs, 0) << "current vs cpu, first diff " << first_cpu_diff;
    }
  }
}
#endif

TEST(GpuPointwise, EmbeddingEqualsCpuAndReportsBadIds) {
  SAMEBITS_REQUIRE_GPU();
  const int64_t vocab = 1000, dim = 256, T = 19;
  const auto table = random_bf16(size_t(vocab * dim), 8);
  const auto ids = random_ints(size_t(T), 9, 0, int32_t(vocab));
  std::vector<bf16> out[2];
  for (int b = 0; b < 2; ++b) {
    const Backend& be = b == 0 ? *gpu : cpu_backend();
    auto dt = device_copy(be, table);
    auto di = device_copy(be, ids);
    DeviceBuffer<bf16> y(be, size_t(T * dim));
    ExecContext ctx;
    SAMEBITS_ASSERT_OK(be.embedding(ctx, EmbeddingArgs{di->data(), T, dt->data(), vocab, dim, y.data()}));
    out[b] = y.download();
    EXPECT_EQ(y.check_guards(), "");
  }
  EXPECT_TRUE(same_bits(out[0], out[1]));
  auto dt = device_copy(*gpu, table);
  auto bad = device_copy(*gpu, std::vector<int32_t>{1, int32_t(vocab)});
  DeviceBuffer<bf16> y(*gpu, size_t(2 * dim));
  ExecContext ctx;
  SAMEBITS_ASSERT_OK(gpu->embedding(ctx, EmbeddingArgs{bad->data(), 2, dt->data(), vocab, dim, y.data()}));
  EXPECT_EQ(gpu->synchronize(ctx).code(), absl::StatusCode::kInvalidArgument);
}

TEST(GpuPointwise, KvWriteEqualsCpuIncludingSkipsAndRepeatedSlots) {
  SAMEBITS_REQUIRE_GPU();
  const int hkv = 2, D = 128;
  const int64_t slots = 64, T = 9, row = hkv * D;
  const auto k = random_bf16(size_t(T * row), 10);
  const auto v = random_bf16(size_t(T * row), 11);
  const auto cache0 = random_bf16(size_t(slots * row), 12);
  const std::vector<int64_t> mapping = {5, -1, 7, 63, 0, 7, 12, -1, 5};  // 5 and 7 named twice: last wins
  std::vector<bf16> kc[2], vc[2];
  for (int b = 0; b < 2; ++b) {
    const Backend& be = b == 0 ? *gpu : cpu_backend();
    auto dk = device_copy(be, k);
    auto dv = device_copy(be, v);
    auto dm = device_copy(be, mapping);
    auto dkc = device_copy(be, cache0);
    auto dvc = device_copy(be, cache0);
    KvWriteArgs a{dk->data(), dv->data(), dm->data(), T, hkv, D, dkc->data(), dvc->data(), slots};
    ExecContext ctx;
    SAMEBITS_ASSERT_OK(be.kv_write(ctx, a));
    SAMEBITS_ASSERT_OK(be.synchronize(ctx));
    kc[b] = dkc->download();
    vc[b] = dvc->download();
    EXPECT_EQ(dkc->check_guards() + dvc->check_guards(), "");
  }
  EXPECT_TRUE(same_bits(kc[0], kc[1]));
  EXPECT_TRUE(same_bits(vc[0], vc[1]));
  // A slot outside [-1, num_slots) is reported.
  auto dk = device_copy(*gpu, k);
  auto dm = device_copy(*gpu, std::vector<int64_t>{1, slots, 2, 3, 4, 5, 6, 7, 8});
  auto dkc = device_copy(*gpu, cache0);
  KvWriteArgs a{dk->data(), dk->data(), dm->data(), T, hkv, D, dkc->data(), dkc->data(), slots};
  ExecContext ctx;
  SAMEBITS_ASSERT_OK(gpu->kv_write(ctx, a));
  EXPECT_EQ(gpu->synchronize(ctx).code(), absl::StatusCode::kInvalidArgument);
}

// Logits with ties at the maximum, NaNs, infinities, and a row of NaN only.
std::vector<float> tricky_logits(int64_t rows, int64_t vocab, uint64_t seed) {
  std::vector<float> l = random_f32(size_t(rows * vocab), seed, 8.f);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = l.data() + r * vocab;
    if (r % 4 == 1) row[vocab / 3] = row[vocab / 2] = row[vocab - 1] = 9.f;   // ties: lowest id wins
    if (r % 4 == 2) row[7] = std::numeric_limits<float>::quiet_NaN();
    if (r % 4 == 3) row[11] = -std::numeric_limits<float>::infinity();
    if (r % 8 == 5) row[vocab / 4] = 0.0f, row[vocab / 5] = -0.0f;
  }
  if (rows > 6) {
    for (int64_t i = 0; i < vocab; ++i) l[size_t(6 * vocab + i)] = std::numeric_limits<float>::quiet_NaN();
  }
  return l;
}

TEST(GpuPointwise, ArgmaxEqualsCpu) {
  SAMEBITS_REQUIRE_GPU();
  for (int64_t vocab : {int64_t(1000), int64_t(151936)}) {
    const int64_t rows = 9;
    const auto logits = tricky_logits(rows, vocab, 13);
    std::vector<int32_t> out[2];
    for (int b = 0; b < 2; ++b) {
      const Backend& be = b == 0 ? *gpu : cpu_backend();
      auto dl = device_copy(be, logits);
      DeviceBuffer<int32_t> o(be, size_t(rows));
      ExecContext ctx;
      SAMEBITS_ASSERT_OK(be.argmax(ctx, ArgmaxArgs{dl->data(), rows, vocab, o.data()}));
      out[b] = o.download();
      EXPECT_EQ(o.check_guards(), "");
    }
    EXPECT_EQ(out[0], out[1]) << "vocab " << vocab;
  }
}

TEST(GpuPointwise, SampleEqualsCpu) {
  SAMEBITS_REQUIRE_GPU();
  for (int64_t vocab : {int64_t(1000), int64_t(151936)}) {
    const int64_t rows = 40;
    // Logits of a peaky softmax (scale 8) and a flat one (scale 0.5) alternate.
    std::vector<float> logits = tricky_logits(rows, vocab, 14);
    for (int64_t r = 0; r < rows; r += 2) {
      for (int64_t i = 0; i < vocab; ++i) logits[size_t(r * vocab + i)] *= 0.0625f;
    }
    std::vector<SamplingRow> params(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      SamplingRow& p = params[size_t(r)];
      p.temperature = r % 5 == 0 ? 0.f : 0.3f + 0.2f * float(r % 4);
      p.top_k = r % 3 == 0 ? 0 : int32_t(1 + 17 * (r % 7));
      p.top_p = r % 4 == 0 ? 1.f : 0.5f + 0.1f * float(r % 5);
      p.uniform = sampling_uniform(1234, uint64_t(r));
    }
    std::vector<int32_t> out[2];
    for (int b = 0; b < 2; ++b) {
      const Backend& be = b == 0 ? *gpu : cpu_backend();
      auto dl = device_copy(be, logits);
      DeviceBuffer<int32_t> o(be, size_t(rows));
      ExecContext ctx;
      SAMEBITS_ASSERT_OK(be.sample(ctx, SampleArgs{dl->data(), rows, vocab, params.data(), o.data()}));
      out[b] = o.download();
      EXPECT_EQ(o.check_guards(), "");
    }
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_EQ(out[0][size_t(r)], out[1][size_t(r)])
          << "vocab " << vocab << " row " << r << " T=" << params[size_t(r)].temperature
          << " top_k=" << params[size_t(r)].top_k << " top_p=" << params[size_t(r)].top_p;
    }
  }
}

#if defined(SAMEBITS_HAVE_CUDA) && defined(SAMEBITS_GPU_TESTS_HAVE_MODEL)
TEST(GpuPointwise, SyntheticFillEqualsHostGenerator) {
  SAMEBITS_REQUIRE_GPU();
  ASSERT_NE(gpu->fill_synthetic, nullptr);
  const std::string name = "model.layers.3.mlp.down_proj.weight";
  const uint64_t seed = 2026;
  const int64_t n = 100003;
  const uint64_t key = XXH3_64bits_withSeed(name.data(), name.size(), seed);
  DeviceBuffer<bf16> buf(*gpu, size_t(n));
  SAMEBITS_ASSERT_OK(gpu->fill_synthetic(buf.data(), n, key, 0.02f, 0.5f));
  const std::vector<bf16> got = buf.download();
  EXPECT_EQ(buf.check_guards(), "");
  for (int64_t i = 0; i < n; ++i) {
    const float want = synthetic_weight_value(seed, name, i, 0.02f, 0.5f);
    ASSERT_EQ(to_bf16(want).bits, got[size_t(i)].bits) << "index " << i;
  }
}
#endif

}  // namespace
}  // namespace samebits::testing
