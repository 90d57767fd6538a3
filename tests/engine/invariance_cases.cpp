#include "tests/engine/invariance_cases.h"

#include <random>

#include "absl/strings/str_cat.h"

namespace samebits::testing {
namespace {

constexpr int kBlockSize = 16;

EngineConfig base_config() {
  EngineConfig c;
  c.block_size = kBlockSize;
  c.num_blocks = 256;
  c.max_tokens_per_step = 512;
  c.max_seqs = 64;
  c.max_chunk = 0;
  c.prefix_cache = true;
  c.exec.num_threads = 0;
  return c;
}

RequestSpec background(uint64_t id, std::mt19937_64& rng, int max_prompt) {
  RequestSpec s;
  s.id = id;
  s.prompt = random_prompt(rng(), 1 + int(rng() % uint64_t(max_prompt)));
  s.max_new_tokens = 1 + int(rng() % 16);
  s.stop_at_eos = false;
  if (rng() % 2) {
    s.sampling.temperature = 0.7f;
    s.sampling.seed = rng();
  }
  return s;
}

}  // namespace

RequestSpec greedy_target() {
  RequestSpec s;
  s.id = kGreedyTarget;
  s.prompt = random_prompt(4242, 270);  // longer than one attention split (256 keys)
  s.max_new_tokens = 10;
  s.stop_at_eos = false;
  s.observe = true;
  return s;
}

RequestSpec sampled_target() {
  RequestSpec s;
  s.id = kSampledTarget;
  s.prompt = random_prompt(77, 40);
  s.max_new_tokens = 10;
  s.stop_at_eos = false;
  s.observe = true;
  // The whole distribution at a high temperature: every draw's uniform matters, so an RNG keyed
  // by anything but (seed, token index) shows.
  s.sampling.temperature = 1.5f;
  s.sampling.top_k = 0;
  s.sampling.top_p = 1.0f;
  s.sampling.seed = 1234567;
  return s;
}

std::vector<InvarianceCase> reference_cases() {
  return {{"greedy target alone", base_config(), {{0, greedy_target()}}},
          {"sampled target alone", base_config(), {{0, sampled_target()}}}};
}

std::vector<InvarianceCase> invariance_cases() {
  std::vector<InvarianceCase> cases;
  auto both = [](int64_t step_greedy, int64_t step_sampled) {
    return std::vector<Arrival>{{step_greedy, greedy_target()}, {step_sampled, sampled_target()}};
  };
  // Chunked prefill: a chunk cap, or a budget that cuts the prompt.
  for (int chunk : {1, 7, 64}) {
    InvarianceCase c{absl::StrCat("max_chunk=", chunk), base_config(), both(0, 0)};
    c.config.max_chunk = chunk;
    cases.push_back(c);
  }
  for (int budget : {5, 33}) {
    InvarianceCase c{absl::StrCat("budget=", budget), base_config(), both(0, 2)};
    c.config.max_tokens_per_step = budget;
    cases.push_back(c);
  }
  // Random batches of background requests.
  std::mt19937_64 rng(2025);
  for (int mix = 0; mix < 8; ++mix) {
    InvarianceCase c{"", base_config(), both(int64_t(rng() % 4), int64_t(rng() % 4))};
    const int others = 1 + int(rng() % 12);
    for (int o = 0; o < others; ++o) c.arrivals.push_back({int64_t(rng() % 6), background(uint64_t(o), rng, 120)});
    const int budgets[] = {16, 64, 128, 256};
    const int chunks[] = {0, 8, 32};
    const int seqs[] = {4, 8, 64};
    c.config.max_tokens_per_step = budgets[rng() % 4];
    c.config.max_chunk = chunks[rng() % 3];
    c.config.max_seqs = seqs[rng() % 3];
    c.config.prefix_cache = rng() % 2 == 0;
    c.name = absl::StrCat("mix ", mix, ": ", others, " others, budget=", c.config.max_tokens_per_step,
                          " max_chunk=", c.config.max_chunk, " max_seqs=", c.config.max_seqs,
                          " prefix_cache=", c.config.prefix_cache);
    cases.push_back(c);
  }
  // Prefix-cache hits: an earlier request shares the first `shared` prompt tokens.
  for (int shared : {16, 100, 200, 270}) {
    InvarianceCase c{absl::StrCat("prefix hit, ", shared, " shared tokens"), base_config(), {}};
    RequestSpec warm = greedy_target();
    warm.id = 1;
    warm.observe = false;
    warm.max_new_tokens = 2;
    warm.prompt.resize(size_t(shared));
    const std::vector<int32_t> tail = random_prompt(99, 20);
    if (shared < 270) warm.prompt.insert(warm.prompt.end(), tail.begin(), tail.end());
    c.arrivals = {{0, warm}, {10, greedy_target()}};
    c.expect_greedy_hit = std::min(shared, 269) / kBlockSize * kBlockSize;
    cases.push_back(c);
  }
  // Preemption: two requests of 110 prompt tokens (7 blocks each) and the greedy target (17
  // blocks), admitted last, fill a pool of 32 blocks; when both others cross into their 8th block
  // the target is preempted, then recomputed (its full blocks from the prefix cache, or not).
  for (bool cache : {false, true}) {
    InvarianceCase c{absl::StrCat("preemption, prefix_cache=", cache), base_config(), {}};
    c.config.num_blocks = 32;
    c.config.prefix_cache = cache;
    for (uint64_t id : {1, 2}) {
      RequestSpec bg;
      bg.id = id;
      bg.prompt = random_prompt(500 + id, 110);
      bg.max_new_tokens = 30;
      bg.stop_at_eos = false;
      c.arrivals.push_back({0, bg});
    }
    c.arrivals.push_back({1, greedy_target()});
    c.expect_greedy_preempted = true;
    cases.push_back(c);
  }
  // Other KV block sizes (each divides the attention split size).
  for (int bs : {1, 8, 64}) {
    InvarianceCase c{absl::StrCat("block_size=", bs), base_config(), both(0, 1)};
    c.config.block_size = bs;
    c.config.num_blocks = 4096 / bs;
    c.config.max_chunk = 48;
    cases.push_back(c);
  }
  // CPU threads.
  for (int threads : {1, 2, 16}) {
    InvarianceCase c{absl::StrCat("threads=", threads), base_config(), both(0, 0)};
    c.config.exec.num_threads = threads;
    c.thread_count_only = true;
    cases.push_back(c);
  }
  return cases;
}

}  // namespace samebits::testing
