// Invariance sweeps of paged attention, invariant mode, bitwise (memcmp): the per-position outputs
// of one sequence must not depend on how its prompt is chunked, which physical blocks hold it,
// the block size, whether its prefix came from the cache, decode vs prefill, the other sequences of
// the batch (and its row in it), or the thread count. Contexts of 560 keys cross the 256-key split
// boundary twice. The baseline is one prefill over the whole sequence, alone, one thread.
// The inverse sweeps (default mode must be SEEN to differ) live in test_attention_inverse.cpp.
#include <gtest/gtest.h>

#include <random>

#include "absl/strings/str_cat.h"
#include "tests/kernels/attention_reference.h"

namespace samebits::testing {
namespace {

constexpr int64_t kLen = 560;

StepOptions invariant_options(int threads = 1) {
  StepOptions o;
  o.mode = Mode::kInvariant;
  o.num_threads = threads;
  return o;
}

// Outputs of positions [0, kLen): one prefill over the whole sequence, alone, in-order blocks.
std::vector<bf16> baseline(const AttnShape& shape, const SeqData& seq) {
  absl::StatusOr<std::vector<bf16>> r = run_schedule(shape, seq, 0, {seq.len}, invariant_options(), 0);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : std::vector<bf16>{};
}

std::vector<bf16> rows(const std::vector<bf16>& all, const AttnShape& shape, int64_t from, int64_t to) {
  return {all.begin() + from * shape.q_row(), all.begin() + to * shape.q_row()};
}

void expect_same(const std::vector<bf16>& want, const absl::StatusOr<std::vector<bf16>>& got,
                 const AttnShape& shape, int64_t first_position) {
  ASSERT_TRUE(got.ok()) << got.status();
  const int64_t at = first_difference(want, *got);
  EXPECT_TRUE(bitwise_equal(want, *got))
      << "first difference at position " << first_position + at / shape.q_row() << " element "
      << at % shape.q_row();
}

// The sweeps run at both GQA shapes of the correctness tests.
class AttentionInvariance : public ::testing::TestWithParam<AttnShape> {};

TEST_P(AttentionInvariance, ChunkingAndDecodeVsWholePrefill) {
  {
    const AttnShape& shape = GetParam();
    const SeqData seq = make_seq_data(shape, kLen, 7, 2.f);
    const std::vector<bf16> want = baseline(shape, seq);
    struct Schedule {
      std::string name;
      std::vector<int64_t> steps;
    };
    std::vector<Schedule> schedules = {{"chunk 1 (decode every token)", chunks_of(kLen, 1)},
                                       {"chunk 7", chunks_of(kLen, 7)},
                                       {"chunk 64", chunks_of(kLen, 64)},
                                       {"chunk 256", chunks_of(kLen, 256)}};
    std::vector<int64_t> prefill_then_decode{300};
    for (int64_t p = 300; p < kLen; ++p) prefill_then_decode.push_back(1);
    schedules.push_back({"prefill 300 then decode", prefill_then_decode});
    for (const Schedule& s : schedules) {
      SCOPED_TRACE(absl::StrCat(shape.name(), " ", s.name));
      expect_same(want, run_schedule(shape, seq, 0, s.steps, invariant_options(), 0), shape, 0);
    }
  }
}

TEST_P(AttentionInvariance, BlockTablesAndBlockSizes) {
  {
    const AttnShape& base = GetParam();
    const SeqData seq = make_seq_data(base, kLen, 8, 2.f);
    const std::vector<bf16> want = baseline(base, seq);  // block size 16, blocks in order
    for (int block_size : {8, 16, 32, 64}) {
      for (uint64_t shuffle : {uint64_t(0), uint64_t(block_size + 1)}) {
        AttnShape shape = base;
        shape.block_size = block_size;
        SCOPED_TRACE(absl::StrCat(shape.name(), " shuffle seed ", shuffle));
        StepOptions o = invariant_options();
        o.extra_table_width = int(shuffle % 3);
        expect_same(want, run_schedule(shape, seq, 0, chunks_of(kLen, 64), o, shuffle), shape, 0);
      }
    }
  }
}

TEST_P(AttentionInvariance, PrefixFromCacheVsComputed) {
  {
    const AttnShape& shape = GetParam();
    const SeqData seq = make_seq_data(shape, kLen, 9, 2.f);
    const std::vector<bf16> want = baseline(shape, seq);
    for (int64_t hit : {16, 240, 256, 272, 512}) {  // block-aligned hit lengths
      SCOPED_TRACE(absl::StrCat(shape.name(), " prefix hit ", hit));
      expect_same(rows(want, shape, hit, kLen),
                  run_schedule(shape, seq, hit, {kLen - hit}, invariant_options(), 5), shape, hit);
    }
  }
}

TEST_P(AttentionInvariance, ThreadCounts) {
  {
    const AttnShape& shape = GetParam();
    const SeqData seq = make_seq_data(shape, kLen, 10, 2.f);
    const std::vector<bf16> want = baseline(shape, seq);
    for (int threads : {2, 16}) {
      SCOPED_TRACE(absl::StrCat(shape.name(), " threads ", threads));
      expect_same(want, run_schedule(shape, seq, 0, chunks_of(kLen, 100), invariant_options(threads), 0),
                  shape, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionInvariance,
                         ::testing::Values(AttnShape{4, 2, 64, 16}, AttnShape{8, 1, 128, 16}),
                         [](const auto& info) { return info.param.name(); });

// The sequence's step (a decode or a chunk at a random position) inside random batches of other
// sequences (random lengths, decodes and chunks, random rows), random block sizes, block-table
// shuffles and widths, and thread counts. Its rows must equal the baseline's.
TEST(AttentionInvarianceBatches, AloneVsInsideRandomBatches) {
  const AttnShape base{4, 2, 64, 16};
  const SeqData seq = make_seq_data(base, kLen, 11, 2.f);
  const std::vector<bf16> want = baseline(base, seq);
  std::mt19937_64 rng(2024);
  auto pick = [&](int64_t lo, int64_t hi) { return lo + int64_t(rng() % uint64_t(hi - lo + 1)); };
  std::vector<SeqData> others;
  for (int i = 0; i < 16; ++i) others.push_back(make_seq_data(base, 600, 200 + i, 2.f));
  const int kMixes = 40;
  for (int mix = 0; mix < kMixes; ++mix) {
    AttnShape shape = base;
    shape.block_size = 8 << pick(0, 3);
    const int64_t target_q = std::vector<int64_t>{1, 1, 7, 64}[pick(0, 3)];
    const int64_t target_cached = pick(0, kLen - target_q);
    const int batch = int(pick(1, 16));
    const int row = int(pick(0, batch - 1));
    StepOptions o = invariant_options(int(std::vector<int64_t>{1, 2, 16}[pick(0, 2)]));
    o.extra_table_width = int(pick(0, 2));
    const std::string name = absl::StrCat("mix ", mix, ": ", shape.name(), " target cached ", target_cached,
                                          " q_len ", target_q, " at row ", row, " of ", batch, " threads ",
                                          o.num_threads);
    SCOPED_TRACE(name);
    PagedCache cache(shape, 16 * 600 / shape.block_size + 200, pick(1, 1000000));
    std::vector<StepPart> parts;
    for (int b = 0; b < batch; ++b) {
      if (b == row) {
        absl::StatusOr<int> id = cache.add_sequence(kLen);
        ASSERT_TRUE(id.ok());
        ASSERT_TRUE(write_prefix(cache, *id, seq, 0, target_cached).ok());
        parts.push_back({*id, &seq, target_cached, target_q});
        continue;
      }
      const SeqData& other = others[size_t(pick(0, 15))];
      const int64_t q_len = pick(0, 2) == 0 ? pick(2, 64) : 1;
      const int64_t cached = pick(0, other.len - q_len);
      absl::StatusOr<int> id = cache.add_sequence(other.len);
      ASSERT_TRUE(id.ok());
      ASSERT_TRUE(write_prefix(cache, *id, other, 0, cached).ok());
      parts.push_back({*id, &other, cached, q_len});
    }
    absl::StatusOr<StepResult> r = run_step(cache, parts, o);
    ASSERT_TRUE(r.ok()) << r.status();
    expect_same(rows(want, base, target_cached, target_cached + target_q), r->outputs[size_t(row)], base,
                target_cached);
  }
}

}  // namespace
}  // namespace samebits::testing
