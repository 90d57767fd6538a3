// Paged attention on the GPU. Against the CPU backend in the same mode and plan: NMSE <= 1e-4
// (P is rounded to bf16 for the tensor cores, the CPU keeps fp32; outputs are bf16), guard memory.
// Invariant mode bitwise (memcmp): one sequence's outputs must not depend on prompt chunking,
// decode vs prefill, prefix-cache hits, block tables, block sizes, or the other sequences of the
// batch and its row in it. Contexts of 560 keys cross the 256-key split boundary twice. Default
// mode must be SEEN to differ (split count from the batch; cached/new keys merged separately).
// The CUDA backend's kernel routes for a sequence's last tile of 1..16 rows (one warp per segment,
// in blocks of one or more warps or in the few-warps kernel at each ring depth; or the 64-row
// kernel) must give the same bits under every plan, with launches sized from host mirrors or from
// shape bounds, and with blocks that take several segments of their tile; a bad layout without host
// mirrors is reported by the device. A batch of more sequences than one round of the kernels' work
// item search covers gives each sequence the bits of a small batch.
#include <gtest/gtest.h>

#include <cstdio>
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

constexpr int64_t kLen = 560;
const AttnShapeG kShapes[] = {{4, 2, 64, 16}, {8, 1, 128, 16}, {32, 8, 128, 16}};

// The sweeps' shapes; under racecheck (sanitizer_shapes()) both head dims with few heads.
std::vector<AttnShapeG> shapes() { return sweep<AttnShapeG>({kShapes[0], kShapes[1], kShapes[2]}, {kShapes[0], kShapes[1]}); }

StepOptionsG opts(Mode mode) {
  StepOptionsG o;
  o.mode = mode;
  return o;
}

std::vector<bf16> baseline(const Backend& be, const AttnShapeG& shape, const SeqG& seq, Mode mode = Mode::kInvariant) {
  absl::StatusOr<std::vector<bf16>> r = run_schedule_g(be, shape, seq, 0, {seq.len}, opts(mode), 0);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : std::vector<bf16>{};
}

void expect_same_rows(const std::vector<bf16>& want, const absl::StatusOr<std::vector<bf16>>& got,
                      const AttnShapeG& shape, int64_t first_position) {
  ASSERT_TRUE(got.ok()) << got.status();
  const int64_t at = first_diff(want, *got);
  EXPECT_EQ(at, -1) << "first difference at position " << first_position + at / shape.q_row() << " element "
                    << at % shape.q_row();
}

std::vector<bf16> rows_of(const std::vector<bf16>& all, const AttnShapeG& shape, int64_t from, int64_t to) {
  return {all.begin() + from * shape.q_row(), all.begin() + to * shape.q_row()};
}

// A mixed step: a fresh prefill, a chunk over a cached prefix, long and short decodes.
TEST(GpuAttention, MixedBatchMatchesCpuBackend) {
  SAMEBITS_REQUIRE_GPU();
  for (const AttnShapeG& shape : shapes()) {
    for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
      SCOPED_TRACE(absl::StrCat(shape.name(), " ", mode_str(mode)));
      const SeqG a = make_seq_g(shape, 300, 1), b = make_seq_g(shape, 320, 2), c = make_seq_g(shape, 601, 3),
                 d = make_seq_g(shape, 6, 4);
      std::vector<std::vector<bf16>> results[2];
      for (int which = 0; which < 2; ++which) {
        const Backend& be = which == 0 ? *gpu : cpu_backend();
        PagedCacheG cache(be, shape, 160, 77);
        const int ia = *cache.add_sequence(300), ib = *cache.add_sequence(320), ic = *cache.add_sequence(601),
                  id = *cache.add_sequence(6);
        StepOptionsG prefix = opts(mode);
        prefix.skip_attention = true;
        ASSERT_TRUE(run_step_g(cache, {{ib, &b, 0, 270}, {ic, &c, 0, 600}, {id, &d, 0, 5}}, prefix).ok());
        auto r = run_step_g(cache, {{ia, &a, 0, 300}, {ib, &b, 270, 50}, {ic, &c, 600, 1}, {id, &d, 5, 1}}, opts(mode));
        ASSERT_TRUE(r.ok()) << r.status();
        results[which] = *r;
      }
      for (size_t p = 0; p < results[0].size(); ++p) {
        const double e = nmse(results[0][p], results[1][p]);
        EXPECT_LE(e, 1e-4) << "part " << p << " nmse " << e;
      }
    }
  }
}

TEST(GpuAttention, InvariantChunkingDecodeAndPrefixHitsEqualWholePrefill) {
  SAMEBITS_REQUIRE_GPU();
  for (const AttnShapeG& shape : shapes()) {
    const SeqG seq = make_seq_g(shape, kLen, 7);
    const std::vector<bf16> want = baseline(*gpu, shape, seq);
    std::vector<int64_t> prefill_then_decode{300};
    for (int64_t p = 300; p < kLen; ++p) prefill_then_decode.push_back(1);
    const std::pair<std::string, std::vector<int64_t>> schedules[] = {
        {"chunk 1 (decode every token)", chunks_g(kLen, 1)}, {"chunk 7", chunks_g(kLen, 7)},
        {"chunk 64", chunks_g(kLen, 64)}, {"chunk 256", chunks_g(kLen, 256)},
        {"prefill 300 then decode", prefill_then_decode}};
    for (const auto& [name, steps] : schedules) {
      SCOPED_TRACE(absl::StrCat(shape.name(), " ", name));
      expect_same_rows(want, run_schedule_g(*gpu, shape, seq, 0, steps, opts(Mode::kInvariant), 0), shape, 0);
    }
    for (int64_t start : {16, 256, 272, 512}) {
      SCOPED_TRACE(absl::StrCat(shape.name(), " prefix hit of ", start, " tokens"));
      expect_same_rows(rows_of(want, shape, start, kLen),
                       run_schedule_g(*gpu, shape, seq, start, chunks_g(kLen - start, 33), opts(Mode::kInvariant), 0),
                       shape, start);
    }
  }
}

TEST(GpuAttention, InvariantBlockTablesAndBlockSizes) {
  SAMEBITS_REQUIRE_GPU();
  for (const AttnShapeG& base : shapes()) {
    const SeqG seq = make_seq_g(base, kLen, 8);
    const std::vector<bf16> want = baseline(*gpu, base, seq);
    for (int block_size : {8, 16, 32, 64, 256}) {
      for (uint64_t shuffle : {uint64_t(0), uint64_t(block_size + 1)}) {
        AttnShapeG shape = base;
        shape.block_size = block_size;
        SCOPED_TRACE(absl::StrCat(shape.name(), " shuffle ", shuffle));
        expect_same_rows(want, run_schedule_g(*gpu, shape, seq, 0, chunks_g(kLen, 100), opts(Mode::kInvariant), shuffle),
                         shape, 0);
      }
    }
  }
}

// The target sequence's step inside batches of other sequences (prefill chunks and decodes of
// random lengths), at several rows of the batch.
absl::StatusOr<std::vector<bf16>> target_in_batch(const Backend& be, const AttnShapeG& shape, const SeqG& target,
                                                  int64_t cached, int64_t q_len, int others, int position,
                                                  Mode mode, uint64_t seed) {
  std::vector<SeqG> other_data;
  std::vector<int64_t> other_cached, other_q;
  for (int i = 0; i < others; ++i) {
    const int64_t len = 2 + int64_t((seed * 7919 + uint64_t(i) * 104729) % 300);
    other_data.push_back(make_seq_g(shape, len, seed * 100 + uint64_t(i)));
    const bool decode = i % 3 != 0;
    other_q.push_back(decode ? 1 : std::min<int64_t>(len, 1 + (len * 3) / 7));
    other_cached.push_back(len - other_q.back());
  }
  int64_t blocks = (target.len + shape.block_size - 1) / shape.block_size + 4;
  for (const SeqG& s : other_data) blocks += (s.len + shape.block_size - 1) / shape.block_size + 1;
  PagedCacheG cache(be, shape, blocks, seed);
  std::vector<int> ids;
  for (const SeqG& s : other_data) ids.push_back(*cache.add_sequence(s.len));
  const int tid = *cache.add_sequence(target.len);
  StepOptionsG prefix = opts(mode);
  prefix.skip_attention = true;
  std::vector<StepPartG> pre, step;
  for (int i = 0; i < others; ++i) pre.push_back({ids[size_t(i)], &other_data[size_t(i)], 0, other_cached[size_t(i)]});
  pre.push_back({tid, &target, 0, cached});
  if (absl::StatusOr<std::vector<std::vector<bf16>>> r = run_step_g(cache, pre, prefix); !r.ok()) return r.status();
  for (int i = 0; i < others; ++i) {
    step.push_back({ids[size_t(i)], &other_data[size_t(i)], other_cached[size_t(i)], other_q[size_t(i)]});
  }
  const int at = std::min(position, others);
  step.insert(step.begin() + at, StepPartG{tid, &target, cached, q_len});
  absl::StatusOr<std::vector<std::vector<bf16>>> r = run_step_g(cache, step, opts(mode));
  if (!r.ok()) return r.status();
  return (*r)[size_t(at)];
}

TEST(GpuAttention, InvariantBatchCompositionAndRow) {
  SAMEBITS_REQUIRE_GPU();
  for (const AttnShapeG& shape : shapes()) {
    const SeqG seq = make_seq_g(shape, kLen, 9);
    const std::vector<bf16> want = baseline(*gpu, shape, seq);
    for (int64_t p : {0, 255, 256, 300, 559}) {
      for (int others : {1, 40}) {
        for (int position : {0, others / 2, others}) {
          SCOPED_TRACE(absl::StrCat(shape.name(), " decode of position ", p, " among ", others, " others at row ",
                                    position));
          expect_same_rows(rows_of(want, shape, p, p + 1),
                           target_in_batch(*gpu, shape, seq, p, 1, others, position, Mode::kInvariant, 10 + p + others),
                           shape, p);
        }
      }
    }
    SCOPED_TRACE(absl::StrCat(shape.name(), " chunk [200, 330) among 13 others"));
    expect_same_rows(rows_of(want, shape, 200, 330),
                     target_in_batch(*gpu, shape, seq, 200, 130, 13, 5, Mode::kInvariant, 99), shape, 200);
  }
}

TEST(GpuAttention, DefaultModeDiffersWithBatchAndChunking) {
  SAMEBITS_REQUIRE_GPU();
  for (const AttnShapeG& shape : shapes()) {
    const SeqG seq = make_seq_g(shape, kLen, 11);
    // Decode alone (one split per 64 keys) vs inside 255 others (a few splits: the default plan
    // wants 8 items per unit, so 64 sequences of 1-2 kv heads still split 8-16 ways).
    int batch_differs = 0;
    for (int64_t p : {200, 300, 400, 559}) {
      auto alone = target_in_batch(*gpu, shape, seq, p, 1, 0, 0, Mode::kDefault, 5);
      auto crowded = target_in_batch(*gpu, shape, seq, p, 1, 255, 17, Mode::kDefault, 6);
      ASSERT_TRUE(alone.ok() && crowded.ok());
      batch_differs += same_bits(*alone, *crowded) ? 0 : 1;
    }
    // Whole prefill vs prefill in chunks (cached and new keys merged separately).
    const std::vector<bf16> whole = baseline(*gpu, shape, seq, Mode::kDefault);
    auto chunked = run_schedule_g(*gpu, shape, seq, 0, chunks_g(kLen, 100), opts(Mode::kDefault), 0);
    ASSERT_TRUE(chunked.ok()) << chunked.status();
    const bool chunk_differs = !same_bits(whole, *chunked);
    std::printf("default attention %s: decode alone vs in 256 differs at %d of 4 positions; chunked prefill %s\n",
                shape.name().c_str(), batch_differs, chunk_differs ? "differs" : "equal");
    EXPECT_GT(batch_differs, 0) << shape.name();
    EXPECT_TRUE(chunk_differs) << shape.name();
  }
}

TEST(GpuAttention, RunToRunAndHostMirrorsDoNotMatter) {
  SAMEBITS_REQUIRE_GPU();
  const AttnShapeG shape = kShapes[2];
  const SeqG seq = make_seq_g(shape, kLen, 12);
  for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
    auto a = target_in_batch(*gpu, shape, seq, 300, 64, 9, 3, mode, 21);
    auto b = target_in_batch(*gpu, shape, seq, 300, 64, 9, 3, mode, 21);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(same_bits(*a, *b)) << mode_str(mode);
  }
  StepOptionsG no_mirror = opts(Mode::kInvariant);
  no_mirror.host_mirrors = false;
  auto with = run_schedule_g(*gpu, shape, seq, 0, chunks_g(kLen, 200), opts(Mode::kInvariant), 3);
  auto without = run_schedule_g(*gpu, shape, seq, 0, chunks_g(kLen, 200), no_mirror, 3);
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_TRUE(same_bits(*with, *without));
}

// The arguments of one small call with device-side layout checks only (no host mirrors): tables
// of two blocks over a cache of four, head shape `shape`.
AttentionArgs layout_check_args(const AttnShapeG& shape, const bf16* q, const bf16* cache, const int32_t* query_start,
                                const int32_t* context_lens, const int32_t* tables, int num_seqs, int64_t T,
                                bf16* out) {
  AttentionArgs a;
  a.q = q;
  a.k_cache = a.v_cache = cache;
  a.query_start = query_start;
  a.context_lens = context_lens;
  a.block_tables = tables;
  a.num_seqs = num_seqs;
  a.max_blocks_per_seq = 2;
  a.T = T;
  a.num_q_heads = shape.hq;
  a.num_kv_heads = shape.hkv;
  a.head_dim = shape.hd;
  a.block_size = shape.block_size;
  a.num_blocks = 4;
  a.scale = 0.125f;
  a.out = out;
  return a;
}

#if defined(SAMEBITS_HAVE_CUDA)

// The decode plan of the last call through attention_recording_plan.
AttentionDecodePlan g_last_decode_plan;
absl::Status attention_recording_plan(const ExecContext& ctx, const AttentionArgs& a) {
  g_last_decode_plan = cuda_attention_decode_plan(a);
  return cuda_attention_routed(ctx, a, AttentionRoute::kAuto);
}

// Large batches of long decodes get fewer segment slots than segments at head_dim 64, so that a
// block takes several of its tile's segments one after the other (cuda/attention.cu,
// decode_slot_count); at head_dim 128 a slot per segment. Either way, with host mirrors or without,
// the bits of the 64-row kernel.
TEST(GpuAttention, DecodeSlotsTakingSeveralSegmentsBitwise) {
  SAMEBITS_REQUIRE_GPU();
  AttentionPlan size64, count40;
  size64.kind = AttentionPlan::Kind::kFixedSplitSize;
  size64.split_size = 64;
  count40.kind = AttentionPlan::Kind::kSplitCount;
  count40.split_count = 40;
  for (const AttnShapeG& shape : {kShapes[0], kShapes[1]}) {
    std::vector<SeqG> seqs;
    std::vector<int64_t> cached;
    for (int i = 0; i < 200; ++i) {  // 400 (sequence, kv head) tiles at head_dim 64, 200 at 128
      seqs.push_back(make_seq_g(shape, 240 + i % 61, 500 + i));
      cached.push_back(seqs.back().len - 1);
    }
    for (const PlanCaseG& rc : {PlanCaseG{Mode::kInvariant, size64}, PlanCaseG{Mode::kDefault, count40}}) {
      SCOPED_TRACE(absl::StrCat(shape.name(), " ", rc.name()));
      StepOptionsG o = opts(rc.mode);
      o.plan = rc.plan;
      o.attention = attention_recording_plan;
      std::vector<absl::StatusOr<std::vector<std::vector<bf16>>>> sized;
      for (bool mirrors : {true, false}) {
        o.host_mirrors = mirrors;
        sized.push_back(route_step_g(*gpu, shape, seqs, cached, o));
        ASSERT_TRUE(sized.back().ok()) << sized.back().status();
        const AttentionDecodePlan& plan = g_last_decode_plan;
        std::printf("%s %s, host mirrors %s: %s\n", shape.name().c_str(), rc.name().c_str(), mirrors ? "on" : "off",
                    plan.describe().c_str());
        EXPECT_EQ(plan.tiles, int64_t(seqs.size()) * shape.hkv);
        EXPECT_GT(plan.segments, 1);
        if (shape.hd == 64) {
          EXPECT_LT(plan.slots, plan.segments);
        } else {
          EXPECT_EQ(plan.slots, plan.segments);
        }
      }
      o.host_mirrors = true;
      o.attention = attention_routed<AttentionRoute::kGeneralOnly>;
      auto general = route_step_g(*gpu, shape, seqs, cached, o);
      ASSERT_TRUE(general.ok()) << general.status();
      for (size_t i = 0; i < seqs.size(); ++i) {
        for (size_t k = 0; k < sized.size(); ++k) {
          const int64_t at = first_diff((*general)[i], (*sized[k])[i]);
          EXPECT_EQ(at, -1) << "sequence " << i << (k == 0 ? " with" : " without")
                            << " host mirrors: first difference at element " << at;
        }
      }
    }
  }
}

TEST(GpuAttention, DecodeKernelEqualsGeneralKernelBitwise) {
  SAMEBITS_REQUIRE_GPU();
  const std::vector<PlanCaseG> cases = plan_cases_g();
  for (const AttnShapeG& shape : shapes()) {
    const int group = shape.hq / shape.hkv;
    // Decodes across split boundaries; chunks whose last tile holds 1..16 rows; fresh prefills.
    const std::vector<std::pair<int64_t, int64_t>> mixed = {
        {1, 0}, {256, 255}, {257, 256}, {560, 559}, {2000, 1999}, {300, 283}, {600, 600 - 16 / group},
        {90, 0}, {513, 510}, {70, 0}};
    // Decodes alone (tiles of group <= 8 rows: the decode kernel without mma rows 8..15), short
    // contexts around the 32-key halves of a sub-block that are skipped or zero-filled.
    const std::vector<std::pair<int64_t, int64_t>> decodes = {
        {1, 0},   {17, 16},   {31, 30},   {32, 31},   {33, 32},   {63, 62},   {64, 63},   {65, 64},   {82, 81},
        {96, 95}, {97, 96},   {127, 126}, {128, 127}, {129, 128}, {148, 147}, {300, 299}, {560, 559}};
    for (const auto* batch : {&mixed, &decodes}) {
      const std::vector<std::pair<int64_t, int64_t>>& layout = *batch;
      std::vector<SeqG> seqs;
      std::vector<int64_t> cached;
      for (size_t i = 0; i < layout.size(); ++i) {
        seqs.push_back(make_seq_g(shape, layout[i].first, 40 + i));
        cached.push_back(layout[i].second);
      }
      for (const PlanCaseG& rc : cases) {
        SCOPED_TRACE(absl::StrCat(shape.name(), " ", rc.name(), batch == &mixed ? " mixed" : " decodes"));
        StepOptionsG o = opts(rc.mode);
        o.plan = rc.plan;
        auto automatic = route_step_g(*gpu, shape, seqs, cached, o);
        auto cpu = route_step_g(cpu_backend(), shape, seqs, cached, o);
        o.host_mirrors = false;  // launches sized from the shapes alone
        auto bounded = route_step_g(*gpu, shape, seqs, cached, o);
        o.host_mirrors = true;
        // kAuto may give small batches to the 64-row kernel.
        o.attention = attention_routed<AttentionRoute::kDecodeKernel>;
        auto decode = route_step_g(*gpu, shape, seqs, cached, o);
        // Blocks of up to 8 warps, as large batches get.
        o.attention = attention_routed<AttentionRoute::kDecodeKernelWide>;
        auto wide = route_step_g(*gpu, shape, seqs, cached, o);
        // The few-warps decode kernels at each ring depth (kAuto picks one by the launch's size).
        std::vector<absl::StatusOr<std::vector<std::vector<bf16>>>> rings;
        const char* ring_names[] = {"the chain kernel with ring 2", "the chain kernel with ring 4",
                                    "the chain kernel with ring 8", "the split kernel with ring 4",
                                    "the split kernel with ring 8", "the decode kernel in blocks of 4 warps",
                                    "the segment kernel"};
        for (auto ring : {attention_routed<AttentionRoute::kDecodeChainRing2>,
                          attention_routed<AttentionRoute::kDecodeChainRing4>,
                          attention_routed<AttentionRoute::kDecodeChainRing8>,
                          attention_routed<AttentionRoute::kDecodeSplitRing4>,
                          attention_routed<AttentionRoute::kDecodeSplitRing8>,
                          attention_routed<AttentionRoute::kDecodeKernelFourWarps>,
                          attention_routed<AttentionRoute::kDecodeSegment>}) {
          o.attention = ring;
          rings.push_back(route_step_g(*gpu, shape, seqs, cached, o));
          ASSERT_TRUE(rings.back().ok()) << rings.back().status();
        }
        o.attention = attention_routed<AttentionRoute::kGeneralOnly>;
        auto general = route_step_g(*gpu, shape, seqs, cached, o);
        ASSERT_TRUE(automatic.ok()) << automatic.status();
        ASSERT_TRUE(bounded.ok()) << bounded.status();
        ASSERT_TRUE(general.ok()) << general.status();
        ASSERT_TRUE(decode.ok()) << decode.status();
        ASSERT_TRUE(wide.ok()) << wide.status();
        ASSERT_TRUE(cpu.ok()) << cpu.status();
        for (size_t i = 0; i < seqs.size(); ++i) {
          const int64_t at = first_diff((*general)[i], (*automatic)[i]);
          EXPECT_EQ(at, -1) << "sequence " << i << " (length " << seqs[i].len << ", cached " << cached[i]
                            << "): first difference at element " << at;
          const int64_t at_decode = first_diff((*general)[i], (*decode)[i]);
          EXPECT_EQ(at_decode, -1) << "sequence " << i << " on the decode kernel: first difference at element "
                                   << at_decode;
          const int64_t at_wide = first_diff((*general)[i], (*wide)[i]);
          EXPECT_EQ(at_wide, -1) << "sequence " << i << " on the decode kernel's widest blocks: first difference at "
                                 << "element " << at_wide;
          for (size_t k = 0; k < rings.size(); ++k) {
            const int64_t at_ring = first_diff((*general)[i], (*rings[k])[i]);
            EXPECT_EQ(at_ring, -1) << "sequence " << i << " on " << ring_names[k]
                                   << ": first difference at element " << at_ring;
          }
          const int64_t at_bounded = first_diff((*general)[i], (*bounded)[i]);
          EXPECT_EQ(at_bounded, -1) << "sequence " << i << " without host mirrors: first difference at element "
                                    << at_bounded;
          const double e = nmse((*automatic)[i], (*cpu)[i]);
          EXPECT_LE(e, 1e-4) << "sequence " << i << " nmse vs cpu " << e;
        }
      }
    }
  }
}
// Each block of the 64-row and wgmma prefill kernels finds its work item on the device, scanning
// the sequences a block's threads at a time (128 for the 64-row kernel, 384 for the wgmma one). A
// batch of 1100 sequences (nine rounds and three; fresh prefills of one to three 128-row items,
// chunks over a cached prefix, decodes that have no item) must give each sequence the bits it gets
// in batches of 100 (one round), on every route that has items, with and without host mirrors. A
// tile that no block takes or two take, or one given another sequence's rows, changes some
// sequence's outputs (their buffers are guarded and start as garbage, not as the expected rows).
TEST(GpuAttention, WorkListAcrossRoundsOfSequencesBitwise) {
  SAMEBITS_REQUIRE_GPU();
  const AttnShapeG shape = kShapes[0];
  constexpr int kSeqs = 1100, kSmallBatch = 100;
  std::vector<SeqG> seqs;
  std::vector<int64_t> cached;
  for (int i = 0; i < kSeqs; ++i) {
    const int64_t len = 20 + (int64_t(i) * 37) % 170;
    seqs.push_back(make_seq_g(shape, len, 700 + uint64_t(i)));
    cached.push_back(i % 3 == 0 ? len - 1 : i % 3 == 1 ? 0 : len / 2);
  }
  const std::pair<const char*, absl::Status (*)(const ExecContext&, const AttentionArgs&)> routes[] = {
      {"automatic", nullptr},
      {"the 64-row kernel", attention_routed<AttentionRoute::kGeneralOnly>},
      {"the wgmma prefill kernel", attention_routed<AttentionRoute::kPrefillKernel>}};
  for (const auto& [route_name, route] : routes) {
    StepOptionsG o = opts(Mode::kInvariant);
    o.attention = route;
    std::vector<std::vector<bf16>> want;
    for (int first = 0; first < kSeqs; first += kSmallBatch) {
      const std::vector<SeqG> part(seqs.begin() + first, seqs.begin() + first + kSmallBatch);
      const std::vector<int64_t> part_cached(cached.begin() + first, cached.begin() + first + kSmallBatch);
      auto r = route_step_g(*gpu, shape, part, part_cached, o);
      if (r.status().code() == absl::StatusCode::kUnimplemented) break;  // the wgmma kernel on another GPU
      ASSERT_TRUE(r.ok()) << r.status();
      want.insert(want.end(), r->begin(), r->end());
    }
    if (want.size() < size_t(kSeqs)) {
      std::printf("work list across rounds: %s does not run on this GPU, not compared\n", route_name);
      continue;
    }
    for (bool mirrors : {true, false}) {
      SCOPED_TRACE(absl::StrCat(route_name, mirrors ? ", host mirrors" : ", launches sized from the shapes"));
      o.host_mirrors = mirrors;
      auto all = route_step_g(*gpu, shape, seqs, cached, o);
      ASSERT_TRUE(all.ok()) << all.status();
      int differ = 0;
      for (int i = 0; i < kSeqs; ++i) {
        const int64_t at = first_diff(want[size_t(i)], (*all)[size_t(i)]);
        differ += at == -1 ? 0 : 1;
        EXPECT_EQ(at, -1) << "sequence " << i << " (length " << seqs[size_t(i)].len << ", cached " << cached[size_t(i)]
                          << "): first difference at element " << at;
        if (differ >= 5) break;
      }
    }
  }
}

// The inverse of the route comparisons above for the decode kernels' shared-exponentials softmax
// (tiles of at most 4 rows: kExpsShared, taken by every decode route on these batches): the same
// path with two columns' exponentials swapped (kDecodeSharedExpsPlanted) must be seen to differ,
// and only where the tiles take it.
TEST(GpuAttention, PlantedSharedExpsSlipIsSeen) {
  SAMEBITS_REQUIRE_GPU();
  for (const AttnShapeG& shape : shapes()) {
    const int group = shape.hq / shape.hkv;
    std::vector<SeqG> seqs;
    std::vector<int64_t> cached;
    for (int64_t len : {17, 82, 148, 300, 560}) {
      seqs.push_back(make_seq_g(shape, len, 60 + len));
      cached.push_back(len - 1);
    }
    for (const PlanCaseG& rc : plan_cases_g()) {
      SCOPED_TRACE(absl::StrCat(shape.name(), " ", rc.name()));
      StepOptionsG o = opts(rc.mode);
      o.plan = rc.plan;
      o.attention = attention_routed<AttentionRoute::kGeneralOnly>;
      auto general = route_step_g(*gpu, shape, seqs, cached, o);
      o.attention = attention_routed<AttentionRoute::kDecodeSharedExpsPlanted>;
      auto planted = route_step_g(*gpu, shape, seqs, cached, o);
      ASSERT_TRUE(general.ok()) << general.status();
      ASSERT_TRUE(planted.ok()) << planted.status();
      int differing = 0;
      for (size_t i = 0; i < seqs.size(); ++i) differing += first_diff((*general)[i], (*planted)[i]) >= 0 ? 1 : 0;
      if (group <= 4) {
        EXPECT_GT(differing, 0) << "the planted sum order went unseen";
      } else {
        EXPECT_EQ(differing, 0) << "tiles of " << group << " rows do not take the shared path";
      }
    }
  }
}

TEST(GpuAttention, BadLayoutWithoutHostMirrorsIsReportedByTheDevice) {
  SAMEBITS_REQUIRE_GPU();
  const AttnShapeG shape = kShapes[0];
  const int32_t bs = shape.block_size;
  auto dq = device_copy(*gpu, random_bf16(size_t(2 * shape.q_row()), 1));
  auto dc = device_copy(*gpu, random_bf16(size_t(4 * shape.block_size * shape.kv_row()), 2));
  auto dtab = device_copy(*gpu, std::vector<int32_t>{1, 2, 1, 2});  // two sequences of two blocks
  DeviceBuffer<bf16> out(*gpu, size_t(2 * shape.q_row()));
  // One call over T = 2 query tokens with these query_start / context_lens (tables of 2 blocks);
  // the status the next synchronize returns.
  auto run = [&](std::vector<int32_t> qs, std::vector<int32_t> ctx) {
    auto dqs = device_copy(*gpu, qs);
    auto dctx = device_copy(*gpu, ctx);
    const AttentionArgs a = layout_check_args(shape, dq->data(), dc->data(), dqs->data(), dctx->data(), dtab->data(),
                                              int(ctx.size()), 2, out.data());
    ExecContext ctx_exec;
    const absl::Status launched = gpu->attention(ctx_exec, a);
    return launched.ok() ? gpu->synchronize(ctx_exec) : launched;
  };
  // Each of the device's layout checks, and the context that fills the table exactly (valid).
  const struct {
    std::vector<int32_t> qs, ctx;
    const char* message;  // nullptr: no error
  } cases[] = {
      {{0, 2}, {1}, "context_lens is below the sequence's query tokens (value 1)"},
      {{0, 2}, {2 * bs + 1}, "context_lens needs more blocks than max_blocks_per_seq"},
      {{0, 3, 2}, {4, 4}, "query_start is out of order or outside [0, T]"},
      {{0, 2}, {2 * bs}, nullptr},
  };
  for (const auto& c : cases) {
    const absl::Status st = run(c.qs, c.ctx);
    if (c.message == nullptr) {
      EXPECT_TRUE(st.ok()) << "context " << c.ctx[0] << ": " << st;
      continue;
    }
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.message << ": " << st;
    EXPECT_NE(std::string(st.message()).find(c.message), std::string::npos) << st;
  }
}
#endif

TEST(GpuAttention, BadBlockTableEntryIsReported) {
  SAMEBITS_REQUIRE_GPU();
  const AttnShapeG shape = kShapes[0];
  auto dq = device_copy(*gpu, random_bf16(size_t(shape.q_row()), 1));
  auto dc = device_copy(*gpu, random_bf16(size_t(4 * shape.block_size * shape.kv_row()), 2));
  auto dqs = device_copy(*gpu, std::vector<int32_t>{0, 1});
  auto dctx = device_copy(*gpu, std::vector<int32_t>{20});
  auto dtab = device_copy(*gpu, std::vector<int32_t>{1, 9});  // 9 >= num_blocks
  DeviceBuffer<bf16> out(*gpu, size_t(shape.q_row()));
  const AttentionArgs a =
      layout_check_args(shape, dq->data(), dc->data(), dqs->data(), dctx->data(), dtab->data(), 1, 1, out.data());
  ExecContext ctx;
  SAMEBITS_ASSERT_OK(gpu->attention(ctx, a));
  const absl::Status st = gpu->synchronize(ctx);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
}

}  // namespace
}  // namespace samebits::testing
