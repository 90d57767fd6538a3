// The inverse of the invariance sweeps: default mode (split COUNT chosen from the batch, cached and
// new keys reduced separately) must be SEEN to change bits with the batch and with the prefix
// cache; a harness that cannot see variance proves nothing. Also: default mode is still
// deterministic for the same batch (any thread count), and the plan object, not the mode, decides.
#include <gtest/gtest.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "tests/kernels/attention_reference.h"

namespace samebits::testing {
namespace {

constexpr int64_t kLen = 560;
const AttnShape kShape{4, 2, 64, 16};

StepOptions options(Mode mode, int threads = 1) {
  StepOptions o;
  o.mode = mode;
  o.num_threads = threads;
  return o;
}

// Decodes of sequences[0..batch) in one step, sequence b at position positions[b].
absl::StatusOr<StepResult> decode_batch(const std::vector<SeqData>& sequences,
                                        const std::vector<int64_t>& positions, int batch,
                                        const StepOptions& o) {
  PagedCache cache(kShape, int64_t(batch) * (kLen / kShape.block_size + 1), 3);
  std::vector<StepPart> parts;
  for (int b = 0; b < batch; ++b) {
    absl::StatusOr<int> id = cache.add_sequence(sequences[size_t(b)].len);
    if (!id.ok()) return id.status();
    const int64_t cached = positions[size_t(b)];
    if (absl::Status st = write_prefix(cache, *id, sequences[size_t(b)], 0, cached); !st.ok()) return st;
    parts.push_back({*id, &sequences[size_t(b)], cached, 1});
  }
  return run_step(cache, parts, o);
}

// Each decode of a batch of B (B = 2..64, so the default plan's split count shrinks from the
// single-sequence count to 1) is compared with the same decode alone. One output row is 256 bf16
// values, and a different split order moves the fp32 result by a few ulp, which crosses a bf16
// rounding boundary only now and then: the sweep therefore looks at many decodes.
TEST(AttentionInverse, DefaultDecodeDiffersWithBatchSize) {
  constexpr int kMaxBatch = 64;
  std::vector<SeqData> sequences;
  std::vector<int64_t> positions;
  for (int b = 0; b < kMaxBatch; ++b) {
    sequences.push_back(make_seq_data(kShape, kLen, 300 + b, 2.f));
    positions.push_back(257 + (b * 37) % (kLen - 257));
  }
  for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
    std::vector<std::vector<bf16>> alone;
    std::string alone_plan;
    for (int b = 0; b < kMaxBatch; ++b) {
      absl::StatusOr<StepResult> r = decode_batch({sequences[size_t(b)]}, {positions[size_t(b)]}, 1, options(mode));
      ASSERT_TRUE(r.ok()) << r.status();
      alone.push_back(r->outputs[0]);
      alone_plan = r->plan.describe();
    }
    int differing = 0, compared = 0;
    for (int batch : {2, 4, 16, 64}) {
      SCOPED_TRACE(absl::StrCat(std::string(mode_name(mode)), " batch ", batch));
      absl::StatusOr<StepResult> inside = decode_batch(sequences, positions, batch, options(mode));
      ASSERT_TRUE(inside.ok()) << inside.status();
      int here = 0;
      for (int b = 0; b < batch; ++b) here += bitwise_equal(alone[size_t(b)], inside->outputs[size_t(b)]) ? 0 : 1;
      std::printf("[ case ] %s decode alone (last plan %s) vs inside batch %d (plan %s): %d of %d rows differ\n",
                  std::string(mode_name(mode)).c_str(), alone_plan.c_str(), batch,
                  inside->plan.describe().c_str(), here, batch);
      differing += here;
      compared += batch;
    }
    if (mode == Mode::kInvariant) {
      EXPECT_EQ(differing, 0) << "invariant decodes changed bits with the batch";
    } else {
      EXPECT_GT(differing, 0) << "default mode never changed bits with the batch in " << compared
                              << " decodes: the sweep cannot see variance";
    }
  }
}

TEST(AttentionInverse, DefaultPrefillDiffersWithCachedPrefixAndChunking) {
  const SeqData seq = make_seq_data(kShape, kLen, 22, 2.f);
  const StepOptions o = options(Mode::kDefault);
  absl::StatusOr<std::vector<bf16>> whole = run_schedule(kShape, seq, 0, {kLen}, o, 0);
  ASSERT_TRUE(whole.ok()) << whole.status();
  int differing_chunkings = 0, differing_hits = 0;
  for (int64_t chunk : {7, 64, 256}) {
    absl::StatusOr<std::vector<bf16>> chunked = run_schedule(kShape, seq, 0, chunks_of(kLen, chunk), o, 0);
    ASSERT_TRUE(chunked.ok()) << chunked.status();
    const int64_t at = first_difference(*whole, *chunked);
    std::printf("[ case ] default whole prefill vs chunk %lld: first difference at position %lld\n",
                (long long)chunk, at < 0 ? -1LL : (long long)(at / kShape.q_row()));
    differing_chunkings += at >= 0 ? 1 : 0;
  }
  for (int64_t hit : {128, 256, 384, 512}) {
    absl::StatusOr<std::vector<bf16>> from_cache = run_schedule(kShape, seq, hit, {kLen - hit}, o, 0);
    ASSERT_TRUE(from_cache.ok()) << from_cache.status();
    std::vector<bf16> tail(whole->begin() + hit * kShape.q_row(), whole->end());
    const int64_t at = first_difference(tail, *from_cache);
    std::printf("[ case ] default whole prefill vs prefix hit %lld: first difference at position %lld\n",
                (long long)hit, at < 0 ? -1LL : (long long)(hit + at / kShape.q_row()));
    differing_hits += at >= 0 ? 1 : 0;
  }
  EXPECT_GT(differing_chunkings, 0) << "no chunking changed default-mode bits";
  EXPECT_GT(differing_hits, 0) << "no prefix-cache hit changed default-mode bits";
}

TEST(AttentionInverse, DefaultModeIsDeterministicForTheSameBatchAndAnyThreadCount) {
  const SeqData seq = make_seq_data(kShape, kLen, 23, 2.f);
  std::vector<SeqData> sequences{seq};
  for (int i = 0; i < 3; ++i) sequences.push_back(make_seq_data(kShape, kLen, 400 + i));
  const std::vector<int64_t> positions{500, 3, 257, 130};
  for (Mode mode : {Mode::kDefault, Mode::kInvariant}) {
    absl::StatusOr<StepResult> first = decode_batch(sequences, positions, 4, options(mode, 1));
    ASSERT_TRUE(first.ok()) << first.status();
    absl::StatusOr<std::vector<bf16>> chunked1 = run_schedule(kShape, seq, 0, chunks_of(kLen, 64), options(mode, 1), 0);
    ASSERT_TRUE(chunked1.ok());
    for (int threads : {1, 2, 16}) {
      SCOPED_TRACE(absl::StrCat(std::string(mode_name(mode)), " threads ", threads));
      absl::StatusOr<StepResult> again = decode_batch(sequences, positions, 4, options(mode, threads));
      ASSERT_TRUE(again.ok()) << again.status();
      for (size_t i = 0; i < first->outputs.size(); ++i) {
        EXPECT_TRUE(bitwise_equal(first->outputs[i], again->outputs[i])) << "row " << i;
      }
      absl::StatusOr<std::vector<bf16>> chunked = run_schedule(kShape, seq, 0, chunks_of(kLen, 64), options(mode, threads), 0);
      ASSERT_TRUE(chunked.ok());
      EXPECT_TRUE(bitwise_equal(*chunked1, *chunked));
    }
  }
}

// The plan decides, not ctx.mode: a split-count plan with one split over a whole prefill (no
// cached prefix) reduces keys [0, p] in one partial, which is exactly what the fixed-size plan does
// for p < 256; beyond, the fixed-size plan has two splits and the bits must differ somewhere.
TEST(AttentionPlanDecides, OneSplitPrefillEqualsInvariantWhereTheyCoverTheSameKeys) {
  const SeqData seq = make_seq_data(kShape, kLen, 24, 2.f);
  absl::StatusOr<std::vector<bf16>> invariant = run_schedule(kShape, seq, 0, {kLen}, options(Mode::kInvariant), 0);
  ASSERT_TRUE(invariant.ok()) << invariant.status();
  const int64_t split = kInvariantAttentionSplit;
  for (bool separate_new_keys : {true, false}) {
    SCOPED_TRACE(absl::StrCat("separate_new_keys ", separate_new_keys));
    AttentionPlan one;
    one.kind = AttentionPlan::Kind::kSplitCount;
    one.split_count = 1;
    one.separate_new_keys = separate_new_keys;
    StepOptions o = options(Mode::kInvariant);  // the mode says invariant; the plan says otherwise
    o.plan = one;
    absl::StatusOr<std::vector<bf16>> single = run_schedule(kShape, seq, 0, {kLen}, o, 0);
    ASSERT_TRUE(single.ok()) << single.status();
    const size_t boundary = size_t(split * kShape.q_row());
    EXPECT_EQ(std::memcmp(invariant->data(), single->data(), boundary * sizeof(bf16)), 0)
        << "positions below " << split << " must match";
    EXPECT_NE(std::memcmp(invariant->data() + boundary, single->data() + boundary,
                          (invariant->size() - boundary) * sizeof(bf16)),
              0)
        << "positions from " << split << " on are reduced in one split vs two: must differ";
  }
  // And an invariant plan handed to a default-mode context gives the invariant bits everywhere.
  StepOptions o = options(Mode::kDefault);
  o.plan = plan_attention(Mode::kInvariant, 1, kShape.num_kv_heads, kLen, kDefaultParallelUnits);
  absl::StatusOr<std::vector<bf16>> fixed = run_schedule(kShape, seq, 0, chunks_of(kLen, 64), o, 0);
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_TRUE(bitwise_equal(*invariant, *fixed));
}

}  // namespace
}  // namespace samebits::testing
