// The seeded workload generator: same scenario and seed, same schedule; another seed, another
// schedule; no two target samples arrive at the same step; shared prefixes of many lengths.
#include <set>

#include "gtest/gtest.h"
#include "harness/scenario/workload.h"
#include "models/tiny_qwen/tokenizer.h"

namespace samebits {
namespace {

Scenario scenario_with(ArrivalProcess::Kind kind, uint64_t seed) {
  auto s = load_scenario(std::string(SAMEBITS_SOURCE_DIR) + "/scenarios/feynman_ci.yaml");
  EXPECT_TRUE(s.ok()) << s.status();
  s->mix.arrival.kind = kind;
  s->seed = seed;
  return *s;
}

bool same_schedule(const Workload& a, const Workload& b) {
  if (a.arrivals.size() != b.arrivals.size()) return false;
  for (size_t i = 0; i < a.arrivals.size(); ++i) {
    const Arrival& x = a.arrivals[i];
    const Arrival& y = b.arrivals[i];
    if (x.step != y.step || x.sample != y.sample || x.spec.id != y.spec.id || x.spec.prompt != y.spec.prompt ||
        x.spec.max_new_tokens != y.spec.max_new_tokens || x.spec.observe != y.spec.observe)
      return false;
  }
  return true;
}

const ArrivalProcess::Kind kKinds[] = {ArrivalProcess::Kind::kPoisson, ArrivalProcess::Kind::kUniform,
                                       ArrivalProcess::Kind::kBurst};

TEST(Workload, SameSeedSameScheduleOtherSeedOtherSchedule) {
  for (auto kind : kKinds) {
    SCOPED_TRACE(describe(ArrivalProcess{kind, 0.5, 8}));
    auto a = generate_workload(scenario_with(kind, 11), ByteTokenizer{});
    auto b = generate_workload(scenario_with(kind, 11), ByteTokenizer{});
    auto c = generate_workload(scenario_with(kind, 12), ByteTokenizer{});
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    EXPECT_TRUE(same_schedule(*a, *b));
    EXPECT_FALSE(same_schedule(*a, *c));
  }
}

TEST(Workload, EveryTargetArrivesAtItsOwnStep) {
  for (auto kind : kKinds) {
    SCOPED_TRACE(describe(ArrivalProcess{kind, 0.5, 8}));
    Scenario s = scenario_with(kind, 3);
    auto w = generate_workload(s, ByteTokenizer{});
    ASSERT_TRUE(w.ok());
    std::set<int64_t> target_steps;
    std::set<int> samples;
    int64_t last_step = -1;
    for (size_t i = 0; i < w->arrivals.size(); ++i) {
      const Arrival& a = w->arrivals[i];
      EXPECT_GE(a.step, last_step);  // sorted
      last_step = a.step;
      EXPECT_EQ(a.spec.id, i + 1);
      if (a.sample < 0) continue;
      EXPECT_TRUE(target_steps.insert(a.step).second) << "two targets at step " << a.step;
      samples.insert(a.sample);
      EXPECT_EQ(a.spec.prompt, w->target_prompt);
      EXPECT_TRUE(a.spec.observe);
      EXPECT_EQ(a.spec.max_new_tokens, s.max_new_tokens);
    }
    EXPECT_EQ(int(samples.size()), s.samples);
    EXPECT_EQ(w->arrivals.size(), size_t(s.samples + s.mix.background));
  }
}

TEST(Workload, BackgroundLengthsAndSharedPrefixesVary) {
  Scenario s = scenario_with(ArrivalProcess::Kind::kPoisson, 5);
  auto w = generate_workload(s, ByteTokenizer{});
  ASSERT_TRUE(w.ok());
  std::set<size_t> shared_lengths, prompt_lengths;
  std::set<int> output_lengths;
  for (const Arrival& a : w->arrivals) {
    if (a.sample >= 0) continue;
    EXPECT_FALSE(a.spec.observe);
    EXPECT_GE(a.spec.max_new_tokens, s.mix.output_len.min);
    EXPECT_LE(a.spec.max_new_tokens, s.mix.output_len.max);
    output_lengths.insert(a.spec.max_new_tokens);
    prompt_lengths.insert(a.spec.prompt.size());
    size_t common = 0;
    while (common < a.spec.prompt.size() && common < w->target_prompt.size() &&
           a.spec.prompt[common] == w->target_prompt[common])
      ++common;
    if (common >= 2) shared_lengths.insert(common);
  }
  EXPECT_GT(w->shared_prefix_requests, s.mix.background / 4);
  EXPECT_GE(shared_lengths.size(), 10u) << "prefix-cache hit lengths should vary";
  EXPECT_GE(prompt_lengths.size(), 20u);
  EXPECT_GE(output_lengths.size(), 20u);
}

TEST(Workload, LengthDistributionsStayInRange) {
  WorkloadRng rng(9);
  const LengthDistribution normal{LengthDistribution::Kind::kNormal, 10, 30, 20, 5};
  std::set<int> seen;
  for (int i = 0; i < 2000; ++i) {
    const int v = sample_length(normal, rng);
    ASSERT_GE(v, 10);
    ASSERT_LE(v, 30);
    seen.insert(v);
  }
  EXPECT_GE(seen.size(), 15u);
  const LengthDistribution fixed{LengthDistribution::Kind::kFixed, 7, 7, 7, 0};
  EXPECT_EQ(sample_length(fixed, rng), 7);
  // The generator is a fixed function of its seed.
  WorkloadRng a(123), b(123);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.next(), b.next());
}

}  // namespace
}  // namespace samebits
