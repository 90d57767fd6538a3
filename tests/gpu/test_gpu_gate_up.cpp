// gate_up_silu on the GPU. Invariant mode (fused into the invariant linear at small M, by parts
// above) bitwise equal to today's three ops (linear on gate, linear on up, silu_mul) at every M
// bucket of the automatic choice, and fused under every forced tile configuration; a row alone == the row inside a batch; the
// inverse: the planted K-order kernel with the same epilogue must be SEEN to differ. Both modes
// against the CPU backend (NMSE), guard memory.
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "kernels/gate_up_silu.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/test_support.h"
#if defined(SAMEBITS_HAVE_CUDA)
#include "kernels/cuda/cuda_ops.h"
#endif

namespace samebits::testing {
namespace {

struct MlpShape {
  int64_t M, F, K;
  std::string name() const { return absl::StrCat("M=", M, " F=", F, " K=", K); }
};

struct MlpInputs {
  std::vector<bf16> x, gate, up, w;  // w: gate and up interleaved
  MlpInputs(const MlpShape& s, uint64_t seed)
      : x(random_bf16(size_t(s.M * s.K), seed)), gate(random_bf16(size_t(s.F * s.K), seed + 1, 0.05f)),
        up(random_bf16(size_t(s.F * s.K), seed + 2, 0.05f)), w(size_t(2 * s.F * s.K)) {
    interleave_gate_up(gate.data(), up.data(), s.F, s.K, w.data());
  }
};

// Today's path on `backend`: two linears of F columns, silu_mul on the columns apart.
std::vector<bf16> three_ops(const Backend& backend, Mode mode, const MlpShape& s, const MlpInputs& in) {
  auto dx = device_copy(backend, in.x), dg = device_copy(backend, in.gate), du = device_copy(backend, in.up);
  DeviceBuffer<bf16> g(backend, size_t(s.M * s.F)), u(backend, size_t(s.M * s.F)), y(backend, size_t(s.M * s.F));
  ExecContext ctx;
  ctx.mode = mode;
  for (auto [w, out] : {std::pair{dg.get(), &g}, {du.get(), &u}}) {
    LinearArgs a;
    a.x = dx->data(), a.w = w->data(), a.M = s.M, a.N = s.F, a.K = s.K, a.y = out->data();
    a.plan = plan_matmul(mode, s.M, s.F, s.K, ctx.parallel_units);
    EXPECT_TRUE(backend.linear(ctx, a).ok());
  }
  EXPECT_TRUE(backend.silu_mul(ctx, SiluMulArgs{g.data(), u.data(), s.M, s.F, y.data()}).ok());
  EXPECT_TRUE(backend.synchronize(ctx).ok());
  return y.download();
}

constexpr int kBackendChoice = -1;

// The one op; config: kBackendChoice (the table's entry, the plan), else cuda_gate_up_silu_invariant's.
std::vector<bf16> one_op(const Backend& backend, Mode mode, const MlpShape& s, const MlpInputs& in,
                         int config = kBackendChoice) {
  auto dx = device_copy(backend, in.x), dw = device_copy(backend, in.w);
  DeviceBuffer<bf16> scratch(backend, size_t(2 * s.M * s.F)), y(backend, size_t(s.M * s.F));
  ExecContext ctx;
  ctx.mode = mode;
  GateUpSiluArgs a;
  a.x = dx->data(), a.w = dw->data(), a.M = s.M, a.F = s.F, a.K = s.K, a.gate_up = scratch.data(), a.y = y.data();
  a.plan = plan_matmul(mode, s.M, 2 * s.F, s.K, ctx.parallel_units);
  absl::Status st;
#if defined(SAMEBITS_HAVE_CUDA)
  st = config == kBackendChoice ? backend.gate_up_silu(ctx, a) : cuda_gate_up_silu_invariant(ctx, a, config);
#else
  (void)config;
  st = backend.gate_up_silu(ctx, a);
#endif
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_TRUE(backend.synchronize(ctx).ok());
  EXPECT_EQ(y.check_guards(), "");
  EXPECT_EQ(scratch.check_guards(), "");
  return y.download();
}

TEST(GpuGateUpSilu, MatchesCpuBackend) {
  SAMEBITS_REQUIRE_GPU();
  for (const MlpShape s : {MlpShape{1, 64, 256}, {37, 264, 1000}, {300, 128, 512}}) {
    const MlpInputs in(s, 3 + uint64_t(s.M));
    for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
      SCOPED_TRACE(absl::StrCat(s.name(), " ", mode_str(mode)));
      const double e = nmse(one_op(*gpu, mode, s, in), one_op(cpu_backend(), mode, s, in));
      EXPECT_LE(e, 1e-4) << "nmse " << e;
    }
  }
}

// Every M bucket of the automatic choice at two widths (2F = 3072: 48 weight tiles of 64, the deep
// swapped rings; 2F = 12288: the shallow ones), K not a multiple of 64; K % 8 != 0 (element loads).
TEST(GpuGateUpSilu, InvariantFusedEqualsThreeOpsAtEveryM) {
  SAMEBITS_REQUIRE_GPU();
  std::vector<MlpShape> shapes;
  for (int64_t F : {1536, 6144}) {
    for (int64_t M : sweep<int64_t>({1, 5, 16, 17, 32, 33, 64, 65, 100, 128, 129, 256, 300, 520, 1000},
                                    {1, 17, 65, 129})) {
      shapes.push_back({M, F, F == 1536 ? 1000 : 512});
    }
  }
  shapes.push_back({7, 64, 1001});
  for (const MlpShape& s : shapes) {
    SCOPED_TRACE(s.name());
    const MlpInputs in(s, 40 + uint64_t(s.M));
    const auto want = three_ops(*gpu, Mode::kInvariant, s, in);
    const auto got = one_op(*gpu, Mode::kInvariant, s, in);
    EXPECT_EQ(first_diff(want, got), -1);
  }
}

TEST(GpuGateUpSilu, InvariantRowAloneEqualsRowInBatch) {
  SAMEBITS_REQUIRE_GPU();
  const MlpShape alone{1, 1536, 1000}, batch{300, 1536, 1000};
  MlpInputs a(alone, 70), b(batch, 71);
  a.gate = b.gate, a.up = b.up, a.w = b.w;
  const int64_t at = 217;
  std::copy(a.x.begin(), a.x.end(), b.x.begin() + at * batch.K);
  const auto row = one_op(*gpu, Mode::kInvariant, alone, a), all = one_op(*gpu, Mode::kInvariant, batch, b);
  EXPECT_EQ(first_diff(row, std::vector<bf16>(all.begin() + at * batch.F, all.begin() + (at + 1) * batch.F)), -1);
}

#if defined(SAMEBITS_HAVE_CUDA)
std::vector<MlpShape> config_shapes() {
  return sweep<MlpShape>({{5, 264, 1000}, {33, 264, 1000}, {130, 768, 512}, {300, 2048, 1032}},
                         {{5, 264, 1000}, {130, 264, 512}});
}

TEST(GpuGateUpSilu, InvariantEveryTileConfigurationGivesTheSameBits) {
  SAMEBITS_REQUIRE_GPU();
  for (const MlpShape& s : config_shapes()) {
    const MlpInputs in(s, 90 + uint64_t(s.M));
    const auto want = three_ops(*gpu, Mode::kInvariant, s, in);
    for (int config = 0; config < cuda_linear_invariant_config_count(); ++config) {
      SCOPED_TRACE(absl::StrCat(s.name(), " config ", cuda_linear_invariant_config_name(config)));
      EXPECT_EQ(first_diff(want, one_op(*gpu, Mode::kInvariant, s, in, config)), -1);
    }
  }
}

// The inverse: the fused epilogue on the kernel that sums the k tiles last to first must differ.
TEST(GpuGateUpSilu, ComparisonSeesAPlantedKOrderChange) {
  SAMEBITS_REQUIRE_GPU();
  {
    DeviceBuffer<bf16> x(*gpu, 64), w(*gpu, 64 * 16), y(*gpu, 16);
    GateUpSiluArgs probe;
    probe.x = x.data(), probe.w = w.data(), probe.y = y.data(), probe.M = 1, probe.F = 8, probe.K = 64;
    if (cuda_gate_up_silu_invariant(ExecContext{}, probe, kGateUpPlantedKOrder).code() ==
        absl::StatusCode::kUnimplemented) {
      GTEST_SKIP() << "the planted kernel needs compute capability 9.0";
    }
    ASSERT_TRUE(gpu->synchronize(ExecContext{}).ok());
  }
  for (const MlpShape& s : config_shapes()) {
    SCOPED_TRACE(s.name());
    const MlpInputs in(s, 90 + uint64_t(s.M));
    const auto want = three_ops(*gpu, Mode::kInvariant, s, in);
    const auto planted = one_op(*gpu, Mode::kInvariant, s, in, kGateUpPlantedKOrder);
    int64_t count = 0;
    for (size_t i = 0; i < want.size(); ++i) count += want[i].bits != planted[i].bits;
    EXPECT_GT(count, 0) << "the fused comparison cannot see a K-order change";
    EXPECT_LE(nmse(planted, want), 1e-4);
  }
}
#endif

}  // namespace
}  // namespace samebits::testing
