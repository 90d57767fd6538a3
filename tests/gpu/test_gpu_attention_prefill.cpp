// The wgmma prefill attention kernel (kernels/cuda/sm90a/attention_prefill.cu) forced for every
// tile of more than 16 rows (AttentionRoute::kPrefillKernel) must give the 64-row kernel's bits
// (kGeneralOnly) under every plan: both modes, fixed split sizes, split counts with and without
// separate new keys; head dims 64 and 128; GQA groups 2, 4 and 8; blocks of 8, 16, 24 and 128;
// fresh prefills, chunks over cached prefixes, ragged lengths, contexts ending at and around
// sub-block and split edges. Invariant mode: chunked prefill, prefix hits and decodes on it equal
// one whole prefill. Rows whose totals leave the output division's fast range (zeros, tiny, subnormal
// and huge values) too. A planted order change (the scores' head-dim steps reversed) must be SEEN.
// Skips visibly where the kernel cannot run (no GPU, or not compute capability 9.0).
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/gpu/gpu_attention_harness.h"
#include "tests/support/test_support.h"
#if defined(SAMEBITS_HAVE_CUDA)
#include "kernels/cuda/cuda_ops.h"
#endif

namespace samebits::testing {
namespace {

#if defined(SAMEBITS_HAVE_CUDA)
constexpr auto prefill_kernel = attention_routed<AttentionRoute::kPrefillKernel>;
constexpr auto planted_prefill_kernel = attention_routed<AttentionRoute::kPrefillKernelPlanted>;
constexpr auto general_kernel = attention_routed<AttentionRoute::kGeneralOnly>;

std::vector<AttnShapeG> shapes() {
  // Blocks of 8, 16, 24 and 128 slots: sub-blocks across pages whose boundaries fall inside them
  // (24) and within one page (128) too.
  return sweep<AttnShapeG>(
      {{4, 2, 64, 16}, {8, 1, 128, 8}, {32, 8, 128, 16}, {16, 4, 64, 8}, {8, 2, 128, 128}, {8, 2, 128, 24}},
      {{4, 2, 64, 16}, {8, 1, 128, 8}, {4, 2, 64, 24}});
}

// (length, cached): fresh prefills, chunks over prefixes (split-aligned and not), ragged lengths,
// a last tile of 1..16 rows (decode tile beside a wgmma tile), contexts ending at 64k, 64k +- 1.
const std::vector<std::pair<int64_t, int64_t>> kLayout = {
    {700, 0}, {640, 256}, {513, 300}, {333, 17}, {257, 0}, {129, 64}, {191, 190}, {400, 399}, {90, 70}, {65, 0}};

// The wgmma kernel divides a row's outputs by one shared reciprocal (OutputRow) and writes a row
// again by __fdiv_rn where a total lies outside [2^-64, 2^64) (kernels/cuda/attention_kernel.cuh);
// the 64-row kernel always divides by __fdiv_rn. Values that send rows down that rare path: in the
// first kv head the keys before position `quiet` carry exact zeros, tiny values (2^-100) and bf16
// subnormals (2^-128, quotients below 2^-126), so every row before `quiet` has totals out of range
// in that head; in the last kv head the keys from `loud` on are scaled by 2^100, so every row from
// `loud` on has totals above 2^64. Neither boundary falls on a 16-token edge, so that tiles which
// straddle one hold rows of both kinds (a tile is 128 / group tokens of one kv head, from the
// chunk's first token). OutOfRangeRowsEqualGeneralKernelBitwise
// also counts, in the outputs, that each kind of value was produced, and rows in range beside
// them: inputs that never left the range would fail it.
void plant_out_of_range_values(const AttnShapeG& shape, SeqG& s) {
  const int64_t quiet = (3 * s.len / 8 & ~int64_t(15)) + 5, loud = (3 * s.len / 4 & ~int64_t(15)) + 11;
  for (int64_t p = 0; p < s.len; ++p) {
    for (int d = 0; d < shape.hd; ++d) {
      bf16& first = s.v[size_t(p * shape.kv_row() + d)];
      if (p < quiet) {
        const float scale = d % 4 == 0 ? 0.0f : d % 4 == 1 ? 0x1p-100f : d % 4 == 2 ? 0x1p-128f : 1.0f;
        first = to_bf16(to_float(first) * scale);
      }
      bf16& last = s.v[size_t(p * shape.kv_row() + (shape.hkv - 1) * shape.hd + d)];
      if (p >= loud) last = to_bf16(to_float(last) * 0x1p100f);
    }
  }
}

// kLayout's sequences of one shape (seeds seed0 + i), with out-of-range values planted or not.
struct LayoutBatch {
  std::vector<SeqG> seqs;
  std::vector<int64_t> cached;
};
LayoutBatch layout_batch(const AttnShapeG& shape, uint64_t seed0, bool out_of_range) {
  LayoutBatch b;
  for (size_t i = 0; i < kLayout.size(); ++i) {
    b.seqs.push_back(make_seq_g(shape, kLayout[i].first, seed0 + i));
    if (out_of_range) plant_out_of_range_values(shape, b.seqs.back());
    b.cached.push_back(kLayout[i].second);
  }
  return b;
}

// One step of the batch under plan case pc on a kernel route (nullptr: the backend's own choice).
absl::StatusOr<std::vector<std::vector<bf16>>> run_plan_case(const Backend& gpu, const AttnShapeG& shape,
                                                             const LayoutBatch& b, const PlanCaseG& pc,
                                                             decltype(StepOptionsG::attention) route,
                                                             bool host_mirrors = true) {
  StepOptionsG o;
  o.mode = pc.mode;
  o.plan = pc.plan;
  o.attention = route;
  o.host_mirrors = host_mirrors;
  return route_step_g(gpu, shape, b.seqs, b.cached, o);
}

// Whether the forced wgmma route runs here; otherwise the reason to skip.
std::optional<std::string> prefill_kernel_missing(const Backend& gpu) {
  const AttnShapeG shape{4, 2, 64, 16};
  const std::vector<SeqG> seqs = {make_seq_g(shape, 130, 1)};
  StepOptionsG o;
  o.attention = prefill_kernel;
  auto r = route_step_g(gpu, shape, seqs, {0}, o);
  if (r.ok()) return std::nullopt;
  if (r.status().code() == absl::StatusCode::kUnimplemented) return std::string(r.status().message());
  ADD_FAILURE() << r.status();
  return std::string("failed");
}

#define SAMEBITS_REQUIRE_PREFILL_KERNEL()                                          \
  SAMEBITS_REQUIRE_GPU();                                                          \
  if (std::optional<std::string> why = prefill_kernel_missing(*gpu); why) {       \
    GTEST_SKIP() << "the wgmma prefill kernel does not run here: " << *why;        \
  }

TEST(GpuAttentionPrefill, WgmmaKernelEqualsGeneralKernelBitwise) {
  SAMEBITS_REQUIRE_PREFILL_KERNEL();
  for (const AttnShapeG& shape : shapes()) {
    const LayoutBatch batch = layout_batch(shape, 60, false);
    const auto& [seqs, cached] = batch;
    for (const PlanCaseG& pc : plan_cases_g()) {
      SCOPED_TRACE(absl::StrCat(shape.name(), " ", pc.name()));
      auto general = run_plan_case(*gpu, shape, batch, pc, general_kernel);
      auto wgmma = run_plan_case(*gpu, shape, batch, pc, prefill_kernel);
      // launches sized from the shapes alone
      auto bounded = run_plan_case(*gpu, shape, batch, pc, prefill_kernel, /*host_mirrors=*/false);
      auto automatic = run_plan_case(*gpu, shape, batch, pc, nullptr);
      ASSERT_TRUE(general.ok()) << general.status();
      ASSERT_TRUE(wgmma.ok()) << wgmma.status();
      ASSERT_TRUE(bounded.ok()) << bounded.status();
      ASSERT_TRUE(automatic.ok()) << automatic.status();
      for (size_t i = 0; i < seqs.size(); ++i) {
        SCOPED_TRACE(absl::StrCat("sequence ", i, " (length ", seqs[i].len, ", cached ", cached[i], ")"));
        EXPECT_EQ(first_diff((*general)[i], (*wgmma)[i]), -1) << "wgmma kernel";
        EXPECT_EQ(first_diff((*general)[i], (*bounded)[i]), -1) << "wgmma kernel without host mirrors";
        EXPECT_EQ(first_diff((*general)[i], (*automatic)[i]), -1) << "automatic route";
      }
    }
  }
}

struct OutputKinds {
  int64_t zero = 0, tiny = 0, subnormal = 0, huge = 0, rows_out = 0, rows_in = 0;
};
// Counts the values of each kind and the (token, q head) rows with and without any value out of
// OutputRow's range.
void count_output_kinds(const AttnShapeG& shape, const std::vector<bf16>& out, OutputKinds& k) {
  for (size_t row = 0; row * size_t(shape.hd) < out.size(); ++row) {
    bool out_of_range = false;
    for (int d = 0; d < shape.hd; ++d) {
      const float x = std::fabs(to_float(out[row * size_t(shape.hd) + size_t(d)]));
      k.zero += x == 0.0f;
      k.tiny += x > 0.0f && x < 0x1p-64f;
      k.subnormal += x > 0.0f && x < 0x1p-126f;
      k.huge += x >= 0x1p64f;
      out_of_range |= x < 0x1p-64f || x >= 0x1p64f;
    }
    (out_of_range ? k.rows_out : k.rows_in) += 1;
  }
}

TEST(GpuAttentionPrefill, OutOfRangeRowsEqualGeneralKernelBitwise) {
  SAMEBITS_REQUIRE_PREFILL_KERNEL();
  for (const AttnShapeG& shape : shapes()) {
    const LayoutBatch batch = layout_batch(shape, 80, true);
    const auto& [seqs, cached] = batch;
    for (const PlanCaseG& pc : plan_cases_g()) {
      SCOPED_TRACE(absl::StrCat(shape.name(), " ", pc.name()));
      auto general = run_plan_case(*gpu, shape, batch, pc, general_kernel);
      auto wgmma = run_plan_case(*gpu, shape, batch, pc, prefill_kernel);
      ASSERT_TRUE(general.ok()) << general.status();
      ASSERT_TRUE(wgmma.ok()) << wgmma.status();
      OutputKinds kinds;
      for (size_t i = 0; i < seqs.size(); ++i) {
        SCOPED_TRACE(absl::StrCat("sequence ", i, " (length ", seqs[i].len, ", cached ", cached[i], ")"));
        EXPECT_EQ(first_diff((*general)[i], (*wgmma)[i]), -1);
        count_output_kinds(shape, (*general)[i], kinds);
      }
      EXPECT_GT(kinds.zero, 0);
      EXPECT_GT(kinds.tiny, 0);
      EXPECT_GT(kinds.subnormal, 0);
      EXPECT_GT(kinds.huge, 0);
      EXPECT_GT(kinds.rows_out, 0);
      EXPECT_GT(kinds.rows_in, 0);
    }
  }
}

TEST(GpuAttentionPrefill, WgmmaKernelMatchesCpuBackend) {
  SAMEBITS_REQUIRE_PREFILL_KERNEL();
  for (const AttnShapeG& shape : shapes()) {
    const std::vector<SeqG> seqs = {make_seq_g(shape, 600, 3), make_seq_g(shape, 300, 4)};
    const std::vector<int64_t> cached = {0, 100};
    for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
      SCOPED_TRACE(absl::StrCat(shape.name(), " ", mode_str(mode)));
      StepOptionsG o;
      o.mode = mode;
      auto cpu = route_step_g(cpu_backend(), shape, seqs, cached, o);
      o.attention = prefill_kernel;
      auto wgmma = route_step_g(*gpu, shape, seqs, cached, o);
      ASSERT_TRUE(cpu.ok() && wgmma.ok());
      for (size_t i = 0; i < seqs.size(); ++i) {
        const double e = nmse((*wgmma)[i], (*cpu)[i]);
        EXPECT_LE(e, 1e-4) << "sequence " << i << " nmse " << e;
      }
    }
  }
}

// Invariant mode on the wgmma kernel: one whole prefill == chunks (over cached prefixes) == prefix
// hits == the decode kernel's decodes of the last positions.
TEST(GpuAttentionPrefill, InvariantChunkingPrefixHitsAndDecodeEqualWholePrefill) {
  SAMEBITS_REQUIRE_PREFILL_KERNEL();
  constexpr int64_t kLen = 1100;
  for (const AttnShapeG& shape : shapes()) {
    const SeqG seq = make_seq_g(shape, kLen, 9);
    StepOptionsG o;
    o.attention = prefill_kernel;
    auto whole = run_schedule_g(*gpu, shape, seq, 0, {kLen}, o, 0);
    ASSERT_TRUE(whole.ok()) << whole.status();
    std::vector<int64_t> then_decode{1050};
    for (int64_t p = 1050; p < kLen; ++p) then_decode.push_back(1);
    const std::pair<std::string, std::vector<int64_t>> schedules[] = {
        {"chunk 1024", chunks_g(kLen, 1024)}, {"chunk 256", chunks_g(kLen, 256)}, {"chunk 100", chunks_g(kLen, 100)},
        {"chunk 37", chunks_g(kLen, 37)}, {"prefill 1050 then decode", then_decode}};
    for (const auto& [name, steps] : schedules) {
      SCOPED_TRACE(absl::StrCat(shape.name(), " ", name));
      auto got = run_schedule_g(*gpu, shape, seq, 0, steps, o, 5);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(first_diff(*whole, *got), -1);
    }
    for (int64_t start : {16, 256, 512, 768}) {
      SCOPED_TRACE(absl::StrCat(shape.name(), " prefix hit of ", start));
      auto got = run_schedule_g(*gpu, shape, seq, start, chunks_g(kLen - start, 300), o, 7);
      ASSERT_TRUE(got.ok()) << got.status();
      const std::vector<bf16> want(whole->begin() + start * shape.q_row(), whole->end());
      EXPECT_EQ(first_diff(want, *got), -1);
    }
  }
}

// In both modes: invariant plans (fixed split sizes) run the kernel's fixed-split instantiation,
// default mode's split counts the general one; the planted order must be seen on each.
TEST(GpuAttentionPrefill, PlantedOrderChangeIsSeen) {
  SAMEBITS_REQUIRE_PREFILL_KERNEL();
  for (const AttnShapeG& shape : shapes()) {
    const std::vector<SeqG> seqs = {make_seq_g(shape, 500, 21), make_seq_g(shape, 300, 22)};
    const std::vector<int64_t> cached = {0, 44};
    for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
      StepOptionsG o;
      o.mode = mode;
      o.attention = general_kernel;
      auto general = route_step_g(*gpu, shape, seqs, cached, o);
      o.attention = planted_prefill_kernel;
      auto planted = route_step_g(*gpu, shape, seqs, cached, o);
      ASSERT_TRUE(general.ok() && planted.ok());
      int differing = 0;
      for (size_t i = 0; i < seqs.size(); ++i) differing += first_diff((*general)[i], (*planted)[i]) >= 0 ? 1 : 0;
      EXPECT_EQ(differing, 2) << shape.name() << " " << mode_str(mode) << ": the reversed head-dim order went unseen";
    }
  }
}

TEST(GpuAttentionPrefill, PlanNamesTheKernel) {
  SAMEBITS_REQUIRE_PREFILL_KERNEL();
  AttentionArgs a;
  const std::vector<int32_t> qs = {0, 40}, ctx = {40};
  a.host_query_start = qs.data();
  a.host_context_lens = ctx.data();
  a.num_seqs = 1;
  a.T = 40;
  a.num_q_heads = 32;
  a.num_kv_heads = 8;
  a.head_dim = 128;
  a.block_size = 16;
  a.max_blocks_per_seq = 3;
  const AttentionPrefillPlan forced = cuda_attention_prefill_plan(a, AttentionRoute::kPrefillKernel);
  EXPECT_TRUE(forced.wgmma) << forced.describe();
  EXPECT_EQ(forced.tile_rows, 128);
  EXPECT_EQ(forced.threads, 384);
  EXPECT_LE(forced.smem_bytes, 227 * 1024);
  EXPECT_FALSE(cuda_attention_prefill_plan(a, AttentionRoute::kGeneralOnly).wgmma);
  EXPECT_TRUE(cuda_attention_prefill_plan(a, AttentionRoute::kAuto).wgmma);  // 160 rows
  const std::vector<int32_t> few = {0, 20}, few_ctx = {40};
  a.host_query_start = few.data();
  a.host_context_lens = few_ctx.data();
  a.T = 20;
  EXPECT_FALSE(cuda_attention_prefill_plan(a, AttentionRoute::kAuto).wgmma);  // 80 rows: the 64-row kernel
}
#endif

}  // namespace
}  // namespace samebits::testing
