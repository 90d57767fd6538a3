// The wgmma prefill's interior run (kernels/cuda/sm90a/prefill_interior_run.h) against every row's
// key range. The kernel visits a segment's leading sub-blocks that every row of its 128-row tile
// sees whole in a loop without the masked softmax paths, bounded from two rows' ranges only (the
// tile's first and last): that rests on the plans' ranges being monotone in the position. Here the
// bound is compared, on the host, with the run found row by row from the CPU's ranges
// (attention_key_ranges, the ranges the CPU backend reduces), for every plan kind: a bound too long
// would give rows a softmax that ignores their mask (wrong bits, which the gpu tests would see
// only on their shapes), one too short (or always empty) only a slower kernel, which no bitwise
// test sees.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/attention_host.h"
#include "kernels/cuda/sm90a/prefill_interior_run.h"
#include "kernels/plan.h"

namespace samebits {
namespace {

constexpr int kKeys = kInteriorRunKeys;
constexpr int kTileRows = 128;

struct RunCase {
  AttentionPlan plan;
  int64_t cached, q_len;
  int group, row0, nrows;
  std::string describe() const {
    return absl::StrCat(plan.describe(), " cached=", cached, " q_len=", q_len, " group=", group, " rows=[", row0,
                        ", ", row0 + nrows, ")");
  }
};

// Each row's ranges, one vector per segment index (empty ranges beyond a row's count).
struct TileRanges {
  std::vector<std::vector<AttentionKeyRange>> rows;
  AttentionKeyRange at(int row, int c) const {
    return c < int(rows[row].size()) ? rows[row][c] : AttentionKeyRange{};
  }
};
TileRanges tile_ranges(const RunCase& k) {
  TileRanges t;
  t.rows.resize(k.nrows);
  for (int r = 0; r < k.nrows; ++r) attention_key_ranges(k.plan, k.cached, k.q_len, k.cached + (k.row0 + r) / k.group, &t.rows[r]);
  return t;
}

// Sub-block [sb0, sb0 + 64) lies inside every row's range of segment c.
bool interior_for_every_row(const TileRanges& t, int c, int64_t sb0) {
  for (int r = 0; r < int(t.rows.size()); ++r) {
    const AttentionKeyRange g = t.at(r, c);
    if (!(g.begin <= sb0 && sb0 + kKeys <= g.end)) return false;
  }
  return true;
}

struct Tally {
  int segments = 0, runs = 0, cut_by_a_row = 0, mismatches = 0;
  std::string first_mismatch;
};

// A run bound from the tile's first row's range (lo) and last row's (hi), as attention_prefill.cu's
// interior_run_end calls interior_run_end_of: none where lo is empty.
using RunBound = int (*)(const AttentionKeyRange& lo, const AttentionKeyRange& hi, int first, int last);
int kernel_bound(const AttentionKeyRange& lo, const AttentionKeyRange& hi, int first, int last) {
  return lo.begin >= lo.end ? first : interior_run_end_of(lo.end, hi.begin, first, last);
}

// Every segment of the tile: `bound` against the run found row by row from the hull's first
// sub-block, up to its last (visited apart).
void check_tile(const RunCase& k, RunBound bound, Tally* tally) {
  const TileRanges t = tile_ranges(k);
  for (int c = 0; c < int(t.rows.back().size()); ++c) {  // (the last row has the most segments)
    int64_t hull_begin = INT64_MAX, hull_end = 0;
    for (int r = 0; r < k.nrows; ++r) {
      const AttentionKeyRange g = t.at(r, c);
      if (g.begin >= g.end) continue;
      hull_begin = std::min(hull_begin, g.begin);
      hull_end = std::max(hull_end, g.end);
    }
    if (hull_begin >= hull_end) continue;
    const int first = int(hull_begin / kKeys * kKeys), last = int((hull_end - 1) / kKeys * kKeys);
    const int got = bound(t.at(0, c), t.at(k.nrows - 1, c), first, last);
    int64_t found = first;
    while (found < last && interior_for_every_row(t, c, found)) found += kKeys;
    ++tally->segments;
    if (found > first) ++tally->runs;
    if (found < last) ++tally->cut_by_a_row;
    if (got != found && tally->mismatches++ == 0) {
      tally->first_mismatch = absl::StrCat(k.describe(), " segment ", c, " hull [", hull_begin, ", ", hull_end,
                                           "): bound ", got, ", found ", found);
    }
  }
}

std::vector<AttentionPlan> plans() {
  std::vector<AttentionPlan> out;
  for (int size : {64, 256, 1000}) {
    AttentionPlan p;
    p.kind = AttentionPlan::Kind::kFixedSplitSize;
    p.split_size = size;
    out.push_back(p);
  }
  for (int count : {1, 2, 3, 7}) {
    for (bool separate : {false, true}) {
      AttentionPlan p;
      p.kind = AttentionPlan::Kind::kSplitCount;
      p.split_count = count;
      p.separate_new_keys = separate;
      out.push_back(p);
    }
  }
  return out;
}

// Every 128-row tile of chunks of several lengths, over cached prefixes that do and do not fall on
// a sub-block's edge, for GQA groups 1-8, under every plan kind.
Tally sweep(RunBound bound) {
  Tally tally;
  for (const AttentionPlan& plan : plans()) {
    for (int64_t cached : {0, 37, 256, 2048}) {
      for (int64_t q_len : {1, 100, 700}) {
        for (int group : {1, 4, 8}) {
          const int64_t rows = q_len * group;
          for (int row0 = 0; row0 < rows; row0 += kTileRows) {
            check_tile({plan, cached, q_len, group, row0, int(std::min<int64_t>(kTileRows, rows - row0))}, bound,
                       &tally);
          }
        }
      }
    }
  }
  return tally;
}

TEST(PrefillInteriorRun, BoundEqualsTheRunFoundRowByRow) {
  const Tally tally = sweep(kernel_bound);
  EXPECT_EQ(tally.mismatches, 0) << "first: " << tally.first_mismatch;
  // The sweep has teeth: segments with a run and segments whose run a masked row cuts short.
  EXPECT_GT(tally.runs, tally.segments / 4) << tally.runs << " runs in " << tally.segments << " segments";
  EXPECT_GT(tally.cut_by_a_row, 0);
}

// The inverse: the same sweep sees the ways a bound could go wrong. One sub-block too long (rows
// would take a softmax that ignores their mask), from the last row's range instead of the first's
// (the same), never a run (a slower kernel with the same bits).
TEST(PrefillInteriorRun, SweepSeesAWrongBound) {
  const RunBound one_more = [](const AttentionKeyRange& lo, const AttentionKeyRange& hi, int first, int last) {
    const int end = kernel_bound(lo, hi, first, last);
    return end > first && end < last ? end + kKeys : end;
  };
  const RunBound last_row = [](const AttentionKeyRange&, const AttentionKeyRange& hi, int first, int last) {
    return kernel_bound(hi, hi, first, last);
  };
  const RunBound never = [](const AttentionKeyRange&, const AttentionKeyRange&, int first, int) { return first; };
  EXPECT_GT(sweep(one_more).mismatches, 0);
  EXPECT_GT(sweep(last_row).mismatches, 0);
  EXPECT_GT(sweep(never).mismatches, 0);
}

}  // namespace
}  // namespace samebits
