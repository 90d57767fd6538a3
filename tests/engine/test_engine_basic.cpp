// The engine end to end on a small model: greedy picks the argmax, finishing by EOS and stop
// sequences, seeded sampling, exact replay of a recorded schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "tests/engine/engine_fixture.h"

namespace samebits::testing {
namespace {

EngineConfig small_engine(int num_blocks = 64) {
  EngineConfig c;
  c.num_blocks = num_blocks;
  c.max_tokens_per_step = 64;
  c.max_seqs = 8;
  return c;
}

RequestSpec observed(uint64_t id, int prompt_len, int max_new) {
  RequestSpec s;
  s.id = id;
  s.prompt = random_prompt(id, prompt_len);
  s.max_new_tokens = max_new;
  s.stop_at_eos = false;
  s.observe = true;
  return s;
}

TEST(EngineBasic, GreedyTokensAreTheArgmaxOfTheObservedLogits) {
  std::unique_ptr<Model> m = make_model(engine_test_config("micro"), 64, 16);
  RunOutcome o = run_workload(*m, small_engine(), {{0, observed(1, 30, 12)}, {0, observed(2, 5, 12)}});
  ASSERT_EQ(o.error, "");
  for (uint64_t id : {1, 2}) {
    const Observed& obs = o.observed[id];
    ASSERT_EQ(obs.tokens.size(), 12u);
    EXPECT_EQ(obs.tokens, o.results[id].tokens);
    for (size_t i = 0; i < obs.tokens.size(); ++i) {
      const auto& row = obs.logits[i];
      EXPECT_EQ(obs.tokens[i], std::max_element(row.begin(), row.end()) - row.begin());
    }
  }
  EXPECT_EQ(o.stats.tokens_generated, 24);
  EXPECT_EQ(o.stats.tokens_computed, 30 + 5 + 2 * 11);
  EXPECT_EQ(o.free_blocks_at_end, 64);
}

// Observed and unobserved requests in one batch: the observer sees exactly the observed ones'
// logits (only those rows are copied back), the others' tokens still come back.
TEST(EngineBasic, OnlyObservedRequestsReachTheObserver) {
  std::unique_ptr<Model> m = make_model(engine_test_config("micro"), 64, 16);
  RequestSpec hidden = observed(2, 9, 12);
  hidden.observe = false;
  RunOutcome o = run_workload(*m, small_engine(), {{0, observed(1, 30, 12)}, {0, hidden}, {0, observed(3, 5, 12)}});
  ASSERT_EQ(o.error, "");
  EXPECT_EQ(o.observed.count(2), 0u);
  EXPECT_EQ(o.results[2].tokens.size(), 12u);
  for (uint64_t id : {1, 3}) {
    ASSERT_EQ(o.observed[id].logits.size(), 12u);
    EXPECT_EQ(o.observed[id].tokens, o.results[id].tokens);
  }
  // The same request observed alone gives the same logits (invariant mode, the default).
  RunOutcome alone = run_workload(*m, small_engine(), {{0, observed(3, 5, 12)}});
  ASSERT_EQ(alone.error, "");
  EXPECT_EQ(count_differences(alone.observed[3], o.observed[3]), 0);
}

TEST(EngineBasic, ProfileTimesEveryOpKindAndStepsAreTimedAlways) {
  std::unique_ptr<Model> m = make_model(engine_test_config("micro"), 64, 16);
  EngineConfig config = small_engine();
  RunOutcome plain = run_workload(*m, config, {{0, observed(1, 30, 4)}});
  ASSERT_EQ(plain.error, "");
  EXPECT_TRUE(plain.stats.op_times.empty());
  EXPECT_GT(plain.stats.step_seconds, 0);
  EXPECT_EQ(plain.stats.host_waits, 0);  // the CPU backend has no device to wait for
  config.profile = true;
  RunOutcome profiled = run_workload(*m, config, {{0, observed(1, 30, 4)}});
  ASSERT_EQ(profiled.error, "");
  const OpTimes& t = profiled.stats.op_times;
  const ModelConfig c = engine_test_config("micro");
  for (const char* kind : {"attention prefill", "attention decode", "rmsnorm + residual add", "q/k norm + rope + kv_write",
                           "sampling", "embedding"}) {
    EXPECT_TRUE(t.count(kind)) << kind;
  }
  // q, k and v projections as one call per layer.
  const std::string qkv = "linear qkv_proj " + std::to_string((c.num_heads + 2 * c.num_kv_heads) * c.head_dim) + "x" +
                          std::to_string(c.hidden_size);
  ASSERT_TRUE(t.count(qkv)) << qkv;
  EXPECT_EQ(t.at(qkv).calls, 4 * c.num_layers);  // 4 steps: one prefill, three decodes
  EXPECT_EQ(t.at("q/k norm + rope + kv_write").calls, 4 * c.num_layers);
  EXPECT_FALSE(t.count("rope")) << "rope runs inside qkv_prep";
  EXPECT_EQ(t.at("attention prefill").calls, c.num_layers);
  EXPECT_EQ(t.at("sampling").calls, 4);
  EXPECT_EQ(t.at(kStepSpan).calls, 4);
  // Same tokens and logits with and without the timer.
  EXPECT_EQ(count_differences(plain.observed[1], profiled.observed[1]), 0);
}

// EngineConfig::overlap moves host work behind the enqueued step: the same schedule, tokens and
// logits either way. On the CPU backend (synchronous) no step can overlap; the GPU test
// (GpuEngineOverlap) shows that steps do overlap there.
TEST(EngineBasic, OverlapChangesNeitherTheScheduleNorTheBits) {
  std::unique_ptr<Model> m = make_model(engine_test_config("micro"), 64, 16);
  EngineConfig config = small_engine(40);  // tight: preemptions and prefix hits
  const std::vector<Arrival> arrivals = {{0, observed(1, 30, 20)}, {0, observed(2, 17, 20)}, {2, observed(3, 30, 20)},
                                         {3, observed(4, 40, 20)}};
  config.overlap = false;
  const RunOutcome serial = run_workload(*m, config, arrivals);
  config.overlap = true;
  const RunOutcome overlapped = run_workload(*m, config, arrivals);
  ASSERT_EQ(serial.error, "");
  ASSERT_EQ(overlapped.error, "");
  EXPECT_EQ(overlapped.stats.overlapped_steps, 0) << "a synchronous backend has finished every op";
  EXPECT_GT(serial.stats.host_idle_device_seconds, 0);
  ASSERT_EQ(serial.records.size(), overlapped.records.size());
  for (size_t i = 0; i < serial.records.size(); ++i) {
    const auto &a = serial.records[i], &b = overlapped.records[i];
    EXPECT_EQ(a.preempted, b.preempted) << "step " << i;
    ASSERT_EQ(a.entries.size(), b.entries.size()) << "step " << i;
    for (size_t e = 0; e < a.entries.size(); ++e) {
      EXPECT_EQ(a.entries[e].blocks, b.entries[e].blocks) << "step " << i << " entry " << e;
      EXPECT_EQ(a.entries[e].start_position, b.entries[e].start_position) << "step " << i << " entry " << e;
    }
  }
  for (uint64_t id : {1, 2, 3, 4}) {
    EXPECT_EQ(serial.results.at(id).tokens, overlapped.results.at(id).tokens) << id;
    EXPECT_EQ(count_differences(serial.observed.at(id), overlapped.observed.at(id)), 0) << id;
  }
}

TEST(EngineBasic, FinishesAtStopSequenceAndEos) {
  const ModelConfig config = engine_test_config("micro");
  std::unique_ptr<Model> m = make_model(config, 64, 16);
  RunOutcome first = run_workload(*m, small_engine(), {{0, observed(1, 20, 16)}});
  const std::vector<int32_t> tokens = first.results[1].tokens;
  ASSERT_EQ(tokens.size(), 16u);

  RequestSpec stop = observed(1, 20, 16);
  stop.stop_sequences = {{tokens[3], tokens[4]}};
  RunOutcome stopped = run_workload(*m, small_engine(), {{0, stop}});
  // The first occurrence of the pair ends the request, the pair included.
  size_t end = 1;
  while (!(tokens[end - 1] == tokens[3] && tokens[end] == tokens[4])) ++end;
  EXPECT_EQ(stopped.results[1].reason, FinishReason::kStopSequence);
  EXPECT_EQ(stopped.results[1].tokens, std::vector<int32_t>(tokens.begin(), tokens.begin() + std::ptrdiff_t(end) + 1));

  // EOS: the same weights under a configuration whose EOS is the token generated at index 5.
  ModelConfig eos_config = config;
  eos_config.eos_token_id = tokens[5];
  std::unique_ptr<Model> eos_model = make_model(eos_config, 64, 16);
  RequestSpec eos = observed(1, 20, 16);
  eos.stop_at_eos = true;
  RunOutcome ended = run_workload(*eos_model, small_engine(), {{0, eos}});
  const size_t first_eos = size_t(std::find(tokens.begin(), tokens.end(), tokens[5]) - tokens.begin());
  EXPECT_EQ(ended.results[1].reason, FinishReason::kEos);
  EXPECT_EQ(ended.results[1].tokens.size(), first_eos + 1);
}

TEST(EngineBasic, SampledTokensFollowTheSeedNotTheBatch) {
  std::unique_ptr<Model> m = make_model(engine_test_config("micro"), 64, 16);
  auto sampled = [](uint64_t seed) {
    RequestSpec s = observed(9, 12, 16);
    s.sampling.temperature = 1.5f;
    s.sampling.seed = seed;
    return s;
  };
  EngineConfig invariant = small_engine();
  RunOutcome alone = run_workload(*m, invariant, {{0, sampled(5)}});
  RunOutcome crowded = run_workload(*m, invariant, {{0, observed(1, 40, 8)}, {1, sampled(5)}, {1, observed(2, 3, 20)}});
  EXPECT_EQ(alone.results[9].tokens, crowded.results[9].tokens);
  EXPECT_EQ(count_differences(alone.observed[9], crowded.observed[9]), 0);
  int differing_seeds = 0;
  for (uint64_t seed : {6, 7, 8}) differing_seeds += run_workload(*m, invariant, {{0, sampled(seed)}}).results[9].tokens != alone.results[9].tokens;
  EXPECT_GT(differing_seeds, 0);
}

TEST(EngineBasic, RecordedScheduleReplaysExactly) {
  std::unique_ptr<Model> m = make_model(engine_test_config("micro"), 24, 4);
  EngineConfig config = small_engine(24);
  config.block_size = 4;
  config.max_tokens_per_step = 12;
  std::vector<Arrival> arrivals;
  for (uint64_t id = 0; id < 12; ++id) arrivals.push_back({int64_t(id / 3), observed(id, 3 + int(id * 5 % 17), 6 + int(id % 5))});
  RunOutcome original = run_workload(*m, config, arrivals);
  ASSERT_EQ(original.error, "");
  ASSERT_GT(original.stats.preemptions, 0);
  RunOutcome replay = run_workload(*m, config, arrivals, &original.records);
  ASSERT_EQ(replay.error, "");
  ASSERT_EQ(replay.records.size(), original.records.size());
  for (uint64_t id = 0; id < 12; ++id) {
    EXPECT_EQ(replay.results[id].tokens, original.results[id].tokens);
    EXPECT_EQ(count_differences(replay.observed[id], original.observed[id]), 0);
  }
}

}  // namespace
}  // namespace samebits::testing
