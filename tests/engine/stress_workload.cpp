#include "tests/engine/stress_workload.h"

#include <gtest/gtest.h>

#include <random>

namespace samebits::testing {

StressWorkload make_stress_workload(uint64_t seed, int num_requests, int max_prompt, int max_new) {
  std::mt19937_64 rng(seed);
  StressWorkload w;
  std::vector<std::vector<int32_t>> prefixes;
  for (int i = 0; i < 6; ++i) prefixes.push_back(random_prompt(seed * 100 + uint64_t(i), 8 + 6 * i));
  int64_t step = 0;
  for (int i = 0; i < num_requests; ++i) {
    if (rng() % 3 == 0) step += 1;
    RequestSpec s;
    s.id = uint64_t(i);
    if (rng() % 2) s.prompt = prefixes[rng() % prefixes.size()];
    const std::vector<int32_t> tail = random_prompt(rng(), 1 + int(rng() % uint64_t(max_prompt)));
    s.prompt.insert(s.prompt.end(), tail.begin(), tail.end());
    s.max_new_tokens = 1 + int(rng() % uint64_t(max_new));
    s.stop_at_eos = rng() % 2 == 0;
    if (rng() % 4 == 0) {
      s.sampling.temperature = 0.8f;
      s.sampling.top_k = int(rng() % 50);
      s.sampling.seed = rng();
    }
    if (rng() % 8 == 0) s.stop_sequences = {{int32_t(rng() % 256)}};
    if (rng() % 100 == 0) {
      if (rng() % 2) {
        s.prompt.clear();
      } else {
        s.prompt = random_prompt(rng(), 1100);  // beyond the 1024-position context
      }
      w.impossible.insert(s.id);
    }
    w.arrivals.push_back({step, std::move(s)});
  }
  return w;
}

void expect_stress_outcome(const StressWorkload& w, const RunOutcome& o, int num_blocks) {
  EXPECT_EQ(o.error, "");
  ASSERT_EQ(o.results.size(), w.arrivals.size());
  int finished = 0;
  for (const Arrival& a : w.arrivals) {
    const RequestResult& r = o.results.at(a.spec.id);
    if (w.impossible.contains(a.spec.id)) {
      EXPECT_EQ(r.reason, FinishReason::kRejected) << "request " << a.spec.id;
      EXPECT_FALSE(r.reject_reason.empty());
      continue;
    }
    ASSERT_NE(r.reason, FinishReason::kRejected) << "request " << a.spec.id << ": " << r.reject_reason;
    ASSERT_NE(r.reason, FinishReason::kRunning);
    EXPECT_LE(int(r.tokens.size()), a.spec.max_new_tokens);
    if (r.reason == FinishReason::kMaxTokens) {
      EXPECT_EQ(int(r.tokens.size()), a.spec.max_new_tokens);
    }
    ++finished;
  }
  EXPECT_EQ(o.free_blocks_at_end, num_blocks);
  EXPECT_GT(o.stats.preemptions, 0);
  EXPECT_GT(o.stats.prefix_hit_requests, 0);
  EXPECT_GT(o.stats.prefix_hit_tokens, 0);
  EXPECT_EQ(o.stats.rejected, int64_t(w.impossible.size()));
  std::printf("stress: %d finished, %zu rejected, %zu steps, %lld preemptions, %lld prefix-hit requests (%lld tokens), "
              "%lld tokens computed, %lld generated\n",
              finished, w.impossible.size(), o.records.size(), (long long)o.stats.preemptions,
              (long long)o.stats.prefix_hit_requests, (long long)o.stats.prefix_hit_tokens,
              (long long)o.stats.tokens_computed, (long long)o.stats.tokens_generated);
}

}  // namespace samebits::testing
