// bench/cuda/prefill_budget.py, the arithmetic of what a prefill call asks of the wgmma prefill
// kernel's visit: its counts for the bench's shapes, worked out by hand here, and its bad inputs.
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/subprocess.h"

namespace samebits {
namespace {

using testing::have_program;
using testing::Outcome;
using testing::run_command;

Outcome budget(const std::string& args) { return run_command("python3 bench/cuda/prefill_budget.py " + args); }

TEST(PrefillBudget, CountsTheItemsVisitsAndBudgetOfAChunk) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  // chunk 1024, group 4: 32 tiles of 128 rows per kv head; tile t's last query is 32 t + 31, so it
  // visits ceil((32 t + 32) / 64) sub-blocks: 1, 1, 2, 2, ..., 16, 16 (272 per kv head, 2176 in
  // all). 4 x 32 x 128 x 1024 x 1025 / 2 = 8.598 GFLOP; at 494.5 TFLOP/s 17.39 us; the busiest of
  // 132 SMs runs 17 visits, so 1.023 us a visit, 0.729 with 5 us fixed.
  const Outcome r = budget("--chunk 1024");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("work: 8.598 GFLOP; at 0.5 of the peak: 17.39 us"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("items: 256 (32 per kv head), visits 2176, per SM mean 16.48, busiest 17"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("a visit: 4.194 MFLOP, 0.560 us"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("budget with 0 us fixed: 1.023 us a visit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("budget with 5 us fixed: 0.729 us a visit"), std::string::npos) << r.out;
  // Over a cached prefix every tile sees it: 2048 / 64 = 32 more visits per tile (272 + 32 x 32 =
  // 1296 per kv head).
  const Outcome cached = budget("--chunk 1024 --cached 2048 --fixed-us 0");
  ASSERT_EQ(cached.code, 0) << cached.err;
  EXPECT_NE(cached.out.find("visits 10368,"), std::string::npos) << cached.out;
  // A query at position p sees keys 0..p: one cached key puts the 64th query's 65 keys in two
  // sub-blocks (tile 1: 2 visits, tile 0: keys 0..32, 1).
  const Outcome edge = budget("--chunk 64 --cached 1 --kv-heads 1 --q-heads 4 --sms 1");
  ASSERT_EQ(edge.code, 0) << edge.err;
  EXPECT_NE(edge.out.find("items: 2 (2 per kv head), visits 3,"), std::string::npos) << edge.out;
  // chunk 512 of one kv head on 5 SMs: items 8, 8, 7, 7, ..., 1, 1 (72 visits), each to the SM
  // that frees first: 8 8 7 7 6 | 6->12 5->12 5->12 4->12 4->12 | 3->15 3->15 2->14 2->14 1->13
  // 1->14: the busiest SM runs 15.
  const Outcome five = budget("--chunk 512 --kv-heads 1 --q-heads 4 --sms 5");
  ASSERT_EQ(five.code, 0) << five.err;
  EXPECT_NE(five.out.find("visits 72, per SM mean 14.40, busiest 15 (1.04x the mean)"), std::string::npos)
      << five.out;
  // chunk 256: 64 items of 4, 4, 3, 3, 2, 2, 1, 1 visits on 132 SMs: the busiest runs one item of 4.
  const Outcome short_chunk = budget("--chunk 256");
  ASSERT_EQ(short_chunk.code, 0) << short_chunk.err;
  EXPECT_NE(short_chunk.out.find("visits 160, per SM mean 1.21, busiest 4 (3.30x the mean)"), std::string::npos)
      << short_chunk.out;
}

TEST(PrefillBudget, BadInputsAreOneLineErrors) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  const Outcome zero = budget("--chunk 0");
  EXPECT_NE(zero.code, 0);
  EXPECT_EQ(zero.err, "prefill_budget: --chunk 0: must be above 0\n");
  const Outcome group = budget("--q-heads 30 --kv-heads 8");
  EXPECT_NE(group.code, 0);
  EXPECT_EQ(group.err, "prefill_budget: --q-heads 30 is not a multiple of --kv-heads 8\n");
  const Outcome target = budget("--target 1.5");
  EXPECT_NE(target.code, 0);
  EXPECT_NE(target.err.find("--target in (0, 1]"), std::string::npos) << target.err;
}

}  // namespace
}  // namespace samebits
