// qkv_prep on the GPU (kernels/cuda/qkv_prep.cu): the fused kernel must give BIT FOR BIT what the
// separate ops give (rmsnorm over head rows, rope, kv_write on dense q, k, v), and what the op's
// own stages give one call at a time (the model's observed path); the inverse: a one-ulp change of
// a norm weight must show in the comparison. Inputs are read from fused q|k|v rows with a padded
// stride; slot mappings skip tokens and name slots twice (last wins), or name each slot once and
// say so (QkvPrepArgs::slots_distinct: the fused kernel skips its last-wins scan). Head sizes 16-256 put 16, 8,
// 4, 2 or 1 heads side by side in a warp (48: one head, lanes idle), odd head counts put q, k and v
// heads in one warp.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "kernels/fixed_math.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/test_support.h"

namespace samebits::testing {
namespace {

struct Shape {
  int64_t T;
  int hq, hkv, D;
};

struct Outputs {
  std::vector<bf16> q, k, v, k_cache, v_cache;
  bool operator==(const Outputs& o) const {
    return same_bits(q, o.q) && same_bits(k, o.k) && same_bits(v, o.v) && same_bits(k_cache, o.k_cache) &&
           same_bits(v_cache, o.v_cache);
  }
};

enum class Route { kFused, kSeparateOps, kStages };
enum class Slots { kOneNamedTwice, kDistinctDeclared };

// The head norms' plans (QkvPrepArgs::q_plan / k_plan): default mode splits the rows' sums of
// squares into parts where there are few rows (one token: 32 q head rows of 128, 4 parts each).
struct NormParts {
  int q = 1, k = 1;
};

// Runs one shape on the GPU by `route`; norm_ulp adds one ulp to q_norm[0] (the inverse test).
Outputs run(const Backend& gpu, const Shape& s, Route route, bool norm_ulp = false,
            Slots slot_kind = Slots::kOneNamedTwice, NormParts parts = {}) {
  const int64_t q_dim = int64_t(s.hq) * s.D, kv_dim = int64_t(s.hkv) * s.D;
  const int64_t stride = q_dim + 2 * kv_dim + 8, slots = 4 * s.T + 16, max_pos = 4096;
  const auto qkv = random_bf16(size_t(s.T * stride), 21, 3.f);
  auto qn = random_bf16(size_t(s.D), 22, 1.f);
  if (norm_ulp) qn[0].bits ^= 1;
  const auto kn = random_bf16(size_t(s.D), 23, 1.f);
  std::vector<int32_t> pos(size_t(s.T));
  std::vector<int64_t> map(size_t(s.T));
  for (int64_t t = 0; t < s.T; ++t) {
    pos[size_t(t)] = int32_t((t * 977 + 13) % max_pos);
    map[size_t(t)] = t % 7 == 3 ? -1 : (t * 5 + 1) % slots;
  }
  if (s.T > 4 && slot_kind == Slots::kOneNamedTwice) map[size_t(s.T - 1)] = map[0];  // the later token wins
  const auto cache0 = random_bf16(size_t(slots * kv_dim), 24);
  auto d_qkv = device_copy(gpu, qkv);
  auto d_qn = device_copy(gpu, qn), d_kn = device_copy(gpu, kn);
  auto d_pos = device_copy(gpu, pos);
  auto d_map = device_copy(gpu, map);
  auto d_table = device_copy(gpu, make_rope_table(1e6, s.D, max_pos));
  auto d_kc = device_copy(gpu, cache0), d_vc = device_copy(gpu, cache0);
  DeviceBuffer<bf16> q(gpu, size_t(s.T * q_dim)), k(gpu, size_t(s.T * kv_dim)), v(gpu, size_t(s.T * kv_dim));
  QkvPrepArgs a;
  a.q_in = d_qkv->data(), a.k_in = a.q_in + q_dim, a.v_in = a.k_in + kv_dim, a.q_stride = a.kv_stride = stride;
  a.T = s.T, a.num_q_heads = s.hq, a.num_kv_heads = s.hkv, a.head_dim = s.D;
  a.q_norm = d_qn->data(), a.k_norm = d_kn->data(), a.eps = 1e-6f;
  a.positions = d_pos->data(), a.table = d_table->data(), a.max_position = max_pos;
  a.slot_mapping = d_map->data(), a.k_cache = d_kc->data(), a.v_cache = d_vc->data(), a.num_slots = slots;
  a.q = q.data(), a.k = k.data(), a.v = v.data();
  a.slots_distinct = slot_kind == Slots::kDistinctDeclared;
  a.q_plan.parts = parts.q, a.k_plan.parts = parts.k;
  ExecContext ctx;
  auto ok = [](const absl::Status& st) { EXPECT_TRUE(st.ok()) << st; };
  if (route == Route::kFused) {
    ok(gpu.qkv_prep(ctx, a));
  } else if (route == Route::kStages) {
    QkvPrepArgs split = a;
    split.q_norm = split.k_norm = nullptr, split.positions = nullptr, split.k_cache = split.v_cache = nullptr;
    ok(gpu.qkv_prep(ctx, split));
    QkvPrepArgs dense = split;
    dense.q_in = a.q, dense.k_in = a.k, dense.v_in = a.v, dense.q_stride = q_dim, dense.kv_stride = kv_dim;
    QkvPrepArgs norm = dense, rope = dense, write = dense;
    norm.q_norm = a.q_norm, norm.k_norm = a.k_norm;
    rope.positions = a.positions;
    write.slot_mapping = a.slot_mapping, write.k_cache = a.k_cache, write.v_cache = a.v_cache;
    for (const QkvPrepArgs* st : {&norm, &rope, &write}) ok(gpu.qkv_prep(ctx, *st));
  } else {
    // The separate ops on dense copies of the heads.
    std::vector<bf16> hq(size_t(s.T * q_dim)), hk(size_t(s.T * kv_dim)), hv(size_t(s.T * kv_dim));
    for (int64_t t = 0; t < s.T; ++t) {
      std::copy_n(&qkv[size_t(t * stride)], q_dim, &hq[size_t(t * q_dim)]);
      std::copy_n(&qkv[size_t(t * stride + q_dim)], kv_dim, &hk[size_t(t * kv_dim)]);
      std::copy_n(&qkv[size_t(t * stride + q_dim + kv_dim)], kv_dim, &hv[size_t(t * kv_dim)]);
    }
    q.upload(hq), k.upload(hk), v.upload(hv);
    for (auto [x, w, rows, plan] :
         {std::tuple{q.data(), a.q_norm, s.T * s.hq, a.q_plan}, {k.data(), a.k_norm, s.T * s.hkv, a.k_plan}}) {
      RmsNormArgs r;
      r.x = x, r.weight = w, r.rows = rows, r.dim = s.D, r.eps = a.eps, r.y = x, r.plan = plan;
      ok(gpu.rmsnorm(ctx, r));
    }
    ok(gpu.rope(ctx, RopeArgs{q.data(), k.data(), a.positions, s.T, s.hq, s.hkv, s.D, a.table, max_pos}));
    ok(gpu.kv_write(ctx, KvWriteArgs{k.data(), v.data(), a.slot_mapping, s.T, s.hkv, s.D, a.k_cache, a.v_cache, slots}));
  }
  ok(gpu.synchronize(ctx));
  EXPECT_EQ(q.check_guards() + k.check_guards() + v.check_guards() + d_kc->check_guards() + d_vc->check_guards(), "");
  return Outputs{q.download(), k.download(), v.download(), d_kc->download(), d_vc->download()};
}

TEST(GpuQkvPrep, FusedEqualsSeparateOpsAndStagesBitwise) {
  SAMEBITS_REQUIRE_GPU();
  for (const Shape& s : sweep<Shape>({{1, 4, 2, 64}, {37, 4, 2, 64}, {37, 32, 8, 128}, {300, 32, 8, 128},
                                      {5, 16, 16, 256}, {9, 4, 4, 32}, {7, 2, 1, 40}, {13, 5, 3, 128},
                                      {11, 3, 1, 16}, {6, 3, 1, 48}},
                                     {{37, 4, 2, 64}, {9, 32, 8, 128}})) {
    SCOPED_TRACE(::testing::Message() << "T " << s.T << " heads " << s.hq << "/" << s.hkv << " head_dim " << s.D);
    const Outputs fused = run(*gpu, s, Route::kFused);
    EXPECT_TRUE(fused == run(*gpu, s, Route::kSeparateOps)) << "fused vs separate ops";
    EXPECT_TRUE(fused == run(*gpu, s, Route::kStages)) << "fused vs one stage per call";
    // Inverse: the comparison sees a one-ulp change of one norm weight.
    EXPECT_FALSE(fused == run(*gpu, s, Route::kFused, /*norm_ulp=*/true)) << "a changed q_norm weight went unseen";
    // Distinct slots, declared so (the model's batches): the kernel without its scan writes what the
    // separate ops write.
    EXPECT_TRUE(run(*gpu, s, Route::kFused, false, Slots::kDistinctDeclared) ==
                run(*gpu, s, Route::kSeparateOps, false, Slots::kDistinctDeclared))
        << "fused with slots_distinct vs separate ops";
  }
}

// Default mode's split head-norm plans (few rows): the fused kernel sums each part of a head row
// in its own lane sub-group and adds the parts in part order, which must give the bits of
// rmsnorm's split kernel through the separate ops and the stages. Plans of 1-8 parts, q and k
// heads of different plans sharing a warp, one head per warp (48, 112: ragged last parts), and a
// plan whose parts the kernel cannot hold (96: parts of 6 chunks, the staged form). The inverse:
// the same rows under one part give other bits (the split is really taken).
TEST(GpuQkvPrep, SplitNormPlansFusedEqualsSeparateOpsBitwise) {
  SAMEBITS_REQUIRE_GPU();
  struct Case {
    Shape s;
    NormParts parts;
  };
  for (const Case& c : sweep<Case>({{{1, 32, 8, 128}, {4, 4}}, {{4, 32, 8, 128}, {1, 4}}, {{9, 32, 8, 128}, {2, 1}},
                                    {{37, 4, 2, 64}, {2, 2}}, {{5, 16, 16, 256}, {8, 2}}, {{5, 16, 16, 256}, {4, 4}},
                                    {{3, 5, 3, 112}, {2, 2}}, {{6, 3, 1, 48}, {2, 1}}, {{7, 2, 1, 40}, {2, 2}},
                                    {{13, 5, 3, 96}, {2, 2}}},
                                   {{{1, 32, 8, 128}, {4, 4}}, {{9, 32, 8, 128}, {2, 1}}})) {
    const Shape& s = c.s;
    SCOPED_TRACE(::testing::Message() << "T " << s.T << " heads " << s.hq << "/" << s.hkv << " head_dim " << s.D
                                      << " parts q " << c.parts.q << " k " << c.parts.k);
    const Outputs fused = run(*gpu, s, Route::kFused, false, Slots::kOneNamedTwice, c.parts);
    EXPECT_TRUE(fused == run(*gpu, s, Route::kSeparateOps, false, Slots::kOneNamedTwice, c.parts))
        << "fused vs separate ops";
    EXPECT_TRUE(fused == run(*gpu, s, Route::kStages, false, Slots::kOneNamedTwice, c.parts))
        << "fused vs one stage per call";
  }
  const Shape many{300, 32, 8, 128};
  EXPECT_FALSE(run(*gpu, many, Route::kFused, false, Slots::kOneNamedTwice, {4, 4}) == run(*gpu, many, Route::kFused))
      << "4-part head norms gave the bits of 1-part ones: the split plan was not taken";
}

TEST(GpuQkvPrep, BadPositionAndSlotAreReported) {
  SAMEBITS_REQUIRE_GPU();
  const int D = 64;
  auto qkv = device_copy(*gpu, random_bf16(size_t(2 * 3 * D), 25));
  auto table = device_copy(*gpu, make_rope_table(1e6, D, 16));
  auto cache = device_copy(*gpu, random_bf16(size_t(8 * D), 26));
  DeviceBuffer<bf16> q(*gpu, size_t(2 * D)), k(*gpu, size_t(2 * D)), v(*gpu, size_t(2 * D));
  for (bool bad_position : {true, false}) {
    auto pos = device_copy(*gpu, std::vector<int32_t>{3, bad_position ? 99 : 4});
    auto map = device_copy(*gpu, std::vector<int64_t>{1, bad_position ? 2 : 8});
    QkvPrepArgs a;
    a.q_in = qkv->data(), a.k_in = a.q_in + D, a.v_in = a.k_in + D, a.q_stride = a.kv_stride = 3 * D;
    a.T = 2, a.num_q_heads = a.num_kv_heads = 1, a.head_dim = D;
    a.positions = pos->data(), a.table = table->data(), a.max_position = 16;
    a.slot_mapping = map->data(), a.k_cache = cache->data(), a.v_cache = cache->data(), a.num_slots = 8;
    a.q = q.data(), a.k = k.data(), a.v = v.data();
    ExecContext ctx;
    SAMEBITS_ASSERT_OK(gpu->qkv_prep(ctx, a));
    const absl::Status st = gpu->synchronize(ctx);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_NE(st.message().find(bad_position ? "position 99" : "slot_mapping = 8"), std::string::npos) << st;
  }
  QkvPrepArgs half_norm;
  half_norm.T = 1, half_norm.num_q_heads = half_norm.num_kv_heads = 1, half_norm.head_dim = D;
  half_norm.q_stride = half_norm.kv_stride = D;
  half_norm.q_in = half_norm.k_in = half_norm.v_in = q.data(), half_norm.q = half_norm.k = half_norm.v = q.data();
  half_norm.q_norm = q.data();
  const absl::Status st = gpu->qkv_prep(ExecContext{}, half_norm);
  EXPECT_NE(st.message().find("qkv_prep: k_norm is null"), std::string::npos) << st;
}

}  // namespace
}  // namespace samebits::testing
