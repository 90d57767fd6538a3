// Plans: invariant mode has one plan for every batch size, default mode more than one; split-K
// parts and attention key splits cover their ranges exactly, without overlap.
#include <gtest/gtest.h>

#include <algorithm>

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/lanes.h"
#include "kernels/plan.h"

namespace samebits {
namespace {

struct GemmShape { int64_t N, K; };
const GemmShape kShapes[] = {{256, 256}, {512, 256}, {256, 768}, {1536, 256}, {258, 256},
                             {1024, 1024}, {3072, 1024}, {1024, 3072}, {151936, 1024}};

TEST(PlanMatmul, InvariantOnePlanForAllM) {
  for (GemmShape s : kShapes) {
    std::set<std::string> plans;
    for (int64_t M = 1; M <= 4096; M += (M < 64 ? 1 : 61)) {
      for (int units : {1, 8, 132}) plans.insert(plan_matmul(Mode::kInvariant, M, s.N, s.K, units).describe());
    }
    EXPECT_EQ(plans.size(), 1u) << "N=" << s.N << " K=" << s.K;
    EXPECT_EQ(plan_matmul(Mode::kInvariant, 7, s.N, s.K, 132).split_k, 1);
    EXPECT_EQ(plan_matmul(Mode::kInvariant, 7, s.N, s.K, 132).kind, MatmulPlan::Kind::kFixedOrder);
  }
}

TEST(PlanMatmul, DefaultPlanFollowsM) {
  // The inverse: default mode must split K differently for different batch sizes wherever the
  // output tiles of one row cannot fill the machine (N < 64 * 132 columns), with parts that never
  // grow as M grows; wider outputs (the lm_head) fill it at every M and keep one part.
  for (GemmShape s : kShapes) {
    std::set<int> splits;
    int previous_split = 1 << 30;
    for (int64_t M = 1; M <= 4096; M += (M < 64 ? 1 : 61)) {
      MatmulPlan p = plan_matmul(Mode::kDefault, M, s.N, s.K, kDefaultParallelUnits);
      EXPECT_EQ(p.kind, MatmulPlan::Kind::kLibrary);
      splits.insert(p.split_k);
      EXPECT_GE(p.split_k, 1);
      EXPECT_LE(p.split_k, previous_split) << "M=" << M << " N=" << s.N << " K=" << s.K;
      previous_split = p.split_k;
    }
    const bool fills_machine_at_m1 = (s.N + 63) / 64 >= kDefaultParallelUnits;
    if (fills_machine_at_m1) {
      EXPECT_EQ(splits.size(), 1u) << "N=" << s.N << " K=" << s.K;
    } else {
      EXPECT_GT(splits.size(), 1u) << "N=" << s.N << " K=" << s.K;
    }
  }
}

TEST(PlanRowReduce, InvariantOnePlanDefaultMany) {
  for (int64_t dim : {64, 128, 256, 1024, 4096}) {
    std::set<std::string> inv, def;
    for (int64_t rows = 1; rows <= 8192; rows = rows * 3 / 2 + 1) {
      inv.insert(plan_row_reduce(Mode::kInvariant, rows, dim, kDefaultParallelUnits).describe());
      def.insert(plan_row_reduce(Mode::kDefault, rows, dim, kDefaultParallelUnits).describe());
    }
    EXPECT_EQ(inv.size(), 1u) << "dim " << dim;
    EXPECT_GT(def.size(), 1u) << "dim " << dim;
  }
}

TEST(LanePartSize, PartsStartOnLaneBoundariesAndCoverK) {
  for (int64_t K = 1; K <= 4100; K += 13) {
    for (int parts : {1, 2, 3, 4, 8, 16, 64, 128}) {
      const int64_t len = cpu::lane_part_size(K, parts);
      ASSERT_EQ(len % 16, 0) << "K=" << K << " parts=" << parts;
      ASSERT_GE(len * parts, K);  // the parts cover [0, K)
      ASSERT_LT(len - 16, (K + parts - 1) / parts) << "rounded up by less than a lane group";
    }
  }
}

void expect_exact_cover(const AttentionPlan& plan, int64_t visible) {
  const int n = num_splits(plan, visible);
  int64_t next = 0;
  for (int i = 0; i < n; ++i) {
    KeyRange r = split_range(plan, visible, i);
    ASSERT_EQ(r.begin, next) << plan.describe() << " visible " << visible << " split " << i;
    // Split-count plans may end with empty splits (chunk = ceil(visible / count)); they must then
    // sit at the end, so coverage stays exact and ordered.
    ASSERT_GE(r.end, r.begin) << plan.describe() << " visible " << visible << " split " << i;
    if (r.end == r.begin) {
      ASSERT_EQ(r.begin, visible) << plan.describe() << " split " << i;
    }
    next = r.end;
  }
  ASSERT_EQ(next, visible) << plan.describe() << " visible " << visible;
}

TEST(PlanAttention, SplitsCoverVisibleKeysExactly) {
  for (int64_t visible = 1; visible <= 3000; visible += (visible < 300 ? 1 : 97)) {
    expect_exact_cover(plan_attention(Mode::kInvariant, 1, 2, visible, 132), visible);
    for (int seqs : {1, 3, 64}) expect_exact_cover(plan_attention(Mode::kDefault, seqs, 2, visible, 132), visible);
    for (int count : {1, 2, 7, 132}) {
      AttentionPlan p;
      p.kind = AttentionPlan::Kind::kSplitCount;
      p.split_count = count;
      expect_exact_cover(p, visible);
    }
  }
}

// Default mode counts (sequence, kv head, split) items per parallel unit, not one per unit: batch
// 16 x 8 kv heads on 132 units wants 8 * 132 / 128 = 8 splits (rounded down: one wave), not 1;
// splits shorter than kDefaultLongSplitKeys only while the launch has at most
// kDefaultShortSplitItemsPerUnit items per unit; the count is then that of the splits of sub-block
// multiples that the longest context fills.
TEST(PlanAttention, DefaultSplitCountFillsUnitsByItems) {
  EXPECT_EQ(plan_attention(Mode::kDefault, 16, 8, 8192, 132).split_count, 8);
  EXPECT_EQ(plan_attention(Mode::kDefault, 64, 8, 8192, 132).split_count, 2);
  EXPECT_EQ(plan_attention(Mode::kDefault, 256, 8, 8192, 132).split_count, 1);
  EXPECT_EQ(plan_attention(Mode::kDefault, 4, 8, 8192, 132).split_count, 32);    // 33 wanted: 256 keys each
  EXPECT_EQ(plan_attention(Mode::kDefault, 1, 8, 32768, 132).split_count, 128);  // 132 wanted: 256 keys each
  // Short splits where they fill the machine: 2048 keys as 32 splits of 64 (256 items on 132 units).
  EXPECT_EQ(plan_attention(Mode::kDefault, 1, 8, 2048, 132).split_count, 32);
  // Not where the units are full without them: 128 splits of 64 keys (1024 items) become 32 of 256,
  // batch 4's 32 of 64 become 8 of 256; contexts of <= 256 keys keep their short splits at small
  // batches (the tiny model's Feynman traffic).
  EXPECT_EQ(plan_attention(Mode::kDefault, 1, 8, 8192, 132).split_count, 32);
  EXPECT_EQ(plan_attention(Mode::kDefault, 4, 8, 2048, 132).split_count, 8);
  EXPECT_EQ(plan_attention(Mode::kDefault, 4, 2, 200, 132).split_count, 4);
  EXPECT_EQ(plan_attention(Mode::kDefault, 64, 2, 200, 132).split_count, 2);
  for (int seqs : {1, 2, 4, 16, 64, 256, 1000}) {
    for (int64_t ctx : {1, 63, 64, 65, 200, 1000, 2048, 2049, 8192, 32768}) {
      for (int units : {1, 132}) {
        const AttentionPlan p = plan_attention(Mode::kDefault, seqs, 8, ctx, units);
        const int64_t work = int64_t(seqs) * 8;
        const int64_t want = std::max<int64_t>(1, int64_t(kDefaultSplitItemsPerUnit) * units / work);
        const int64_t cap = std::max<int64_t>(1, (ctx + kDefaultMinSplitKeys - 1) / kDefaultMinSplitKeys);
        const int64_t short_items = int64_t(kDefaultShortSplitItemsPerUnit) * units;
        const int64_t long_splits = (ctx + kDefaultLongSplitKeys - 1) / kDefaultLongSplitKeys;
        const int64_t floor_count = std::min({want, cap, std::max<int64_t>(short_items / work, long_splits)});
        ASSERT_GE(p.split_count, 1);
        ASSERT_LE(p.split_count, std::min(want, cap)) << seqs << " x " << ctx;
        ASSERT_GT(2 * p.split_count, floor_count) << seqs << " x " << ctx;  // rounding at most halves it
        // No more splits than kDefaultLongSplitKeys-key ones need, unless the items fill at most
        // kDefaultShortSplitItemsPerUnit per unit.
        ASSERT_TRUE(p.split_count <= long_splits || p.split_count * work <= short_items)
            << seqs << " x " << ctx << ": " << p.split_count << " splits";
        for (int i = 0; i < num_splits(p, ctx); ++i) {
          const KeyRange r = split_range(p, ctx, i);
          ASSERT_LT(r.begin, r.end) << seqs << " x " << ctx << ": split " << i << " of the longest context is empty";
        }
      }
    }
  }
}

// The default count is that of splits of whole sub-blocks over the longest context: with 8 kv
// heads on 132 units and power-of-two batches and contexts, every split is a whole number of
// kSplitAlignKeys-key sub-blocks (8192 keys at batch 4: 33 wanted, 32 of 256 keys given).
TEST(PlanAttention, DefaultSplitsOfTheLongestContextAreWholeSubBlocks) {
  for (int64_t ctx : {2048, 8192, 32768}) {
    for (int seqs : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
      const AttentionPlan p = plan_attention(Mode::kDefault, seqs, 8, ctx, 132);
      for (int i = 0; i < num_splits(p, ctx); ++i) {
        const KeyRange r = split_range(p, ctx, i);
        EXPECT_EQ(r.begin % kSplitAlignKeys, 0) << seqs << " x " << ctx << ": split " << i;
        EXPECT_EQ((r.end - r.begin) % kSplitAlignKeys, 0) << seqs << " x " << ctx << ": split " << i;
      }
    }
  }
}

TEST(PlanAttention, InvariantOnePlanDefaultMany) {
  std::set<std::string> inv, def;
  for (int seqs : {1, 2, 8, 64, 256}) {
    for (int64_t ctx : {16, 100, 1000, 4000}) {
      inv.insert(plan_attention(Mode::kInvariant, seqs, 8, ctx, 132).describe());
      def.insert(plan_attention(Mode::kDefault, seqs, 8, ctx, 132).describe());
    }
  }
  EXPECT_EQ(inv.size(), 1u);
  EXPECT_GT(def.size(), 1u);
}

}  // namespace
}  // namespace samebits
