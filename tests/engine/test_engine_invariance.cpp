// Invariance of the whole engine (label determinism): in invariant mode every observed target's
// tokens and fp32 logits at every generated step are bitwise identical to the target served
// alone, across the sweep of invariance_cases(); default mode must be SEEN to differ on the same
// sweep. Also: decode logits equal one prefill over the whole sequence ("sampler == trainer").
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "tests/engine/invariance_cases.h"
#include "tests/engine/invariance_sweep.h"

namespace samebits::testing {
namespace {

class Sweep {
 public:
  Model& model_for(int block_size) {
    auto& m = models_[block_size];
    if (!m) m = make_model(engine_test_config("tiny"), 4096 / block_size, block_size);
    return *m;
  }
  RunOutcome run(const InvarianceCase& c, Mode mode) {
    EngineConfig config = c.config;
    config.exec.mode = mode;
    return run_workload(model_for(config.block_size), config, c.arrivals);
  }
  std::map<uint64_t, Observed> references(Mode mode) {
    std::map<uint64_t, Observed> refs;
    for (const InvarianceCase& c : reference_cases()) {
      RunOutcome o = run(c, mode);
      EXPECT_EQ(o.error, "") << c.name;
      for (auto& [id, obs] : o.observed) refs[id] = obs;
    }
    return refs;
  }

 private:
  std::map<int, std::unique_ptr<Model>> models_;
};

bool has_request(const InvarianceCase& c, uint64_t id) {
  for (const Arrival& a : c.arrivals) {
    if (a.spec.id == id) return true;
  }
  return false;
}

TEST(EngineInvariance, InvariantModeIsBitwiseIdenticalAcrossTheSweep) {
  Sweep sweep;
  const std::map<uint64_t, Observed> refs = sweep.references(Mode::kInvariant);
  ASSERT_EQ(refs.size(), 2u);
  for (const auto& [id, ref] : refs) ASSERT_EQ(ref.tokens.size(), 10u) << "target " << id;
  for (const InvarianceCase& c : invariance_cases()) {
    SCOPED_TRACE(c.name);
    RunOutcome o = sweep.run(c, Mode::kInvariant);
    ASSERT_EQ(o.error, "");
    for (uint64_t id : {kGreedyTarget, kSampledTarget}) {
      if (!has_request(c, id)) continue;
      SCOPED_TRACE(::testing::Message() << "target " << id);
      const Observed& got = o.observed[id];
      EXPECT_EQ(got.tokens, refs.at(id).tokens);
      EXPECT_EQ(count_differences(got, refs.at(id)), 0);
    }
    const RequestResult& greedy = o.results[kGreedyTarget];
    std::printf("[invariant] %-60s steps=%zu preempted=%d hit=%d\n", c.name.c_str(), o.records.size(),
                greedy.preemptions, greedy.prefix_hit_tokens);
    if (c.expect_greedy_hit >= 0) {
      EXPECT_EQ(greedy.prefix_hit_tokens, c.expect_greedy_hit);
    }
    if (c.expect_greedy_preempted) {
      EXPECT_GT(greedy.preemptions, 0);
    }
  }
}

TEST(EngineInvariance, DefaultModeDiffersSomewhereInTheSameSweep) {
  // The inverse: a harness that cannot see default mode's batch dependence proves nothing. Thread
  // counts are left out: both modes give the same bits for any thread count on the CPU.
  Sweep sweep;
  const std::map<uint64_t, Observed> refs = sweep.references(Mode::kDefault);
  int cases_differing = 0, cases_run = 0;
  for (const InvarianceCase& c : invariance_cases()) {
    if (c.thread_count_only) continue;
    RunOutcome o = sweep.run(c, Mode::kDefault);
    ASSERT_EQ(o.error, "") << c.name;
    int rows = 0;
    bool tokens_differ = false;
    for (uint64_t id : {kGreedyTarget, kSampledTarget}) {
      if (!has_request(c, id)) continue;
      rows += count_differences(o.observed[id], refs.at(id));
      tokens_differ |= o.observed[id].tokens != refs.at(id).tokens;
    }
    std::printf("[default] %-60s logit rows differing=%d tokens differ=%d\n", c.name.c_str(), rows, int(tokens_differ));
    cases_differing += rows > 0;
    ++cases_run;
  }
  std::printf("[default] %d of %d cases differ from the request served alone\n", cases_differing, cases_run);
  EXPECT_GT(cases_differing, 0);
}

// Positions prompt_len - 1 + i of one forward over prompt + generated tokens, every row's logits.
int decode_vs_prefill_differences(Mode mode) {
  const ModelConfig config = engine_test_config("tiny");
  std::unique_ptr<Model> serving = make_model(config, 256, 16);
  EngineConfig ec;
  ec.exec.mode = mode;
  ec.num_blocks = 256;
  ec.max_chunk = 64;
  RequestSpec target = greedy_target();
  target.max_new_tokens = 24;
  RunOutcome o = run_workload(*serving, ec, {{0, target}});
  EXPECT_EQ(o.error, "");
  const Observed& obs = o.observed[target.id];
  EXPECT_EQ(obs.tokens.size(), 24u);

  std::vector<int32_t> seq = target.prompt;
  seq.insert(seq.end(), obs.tokens.begin(), obs.tokens.end() - 1);
  std::unique_ptr<Model> trainer = make_model(config, 256, 16);
  ForwardBatch b;
  const int n = int(seq.size());
  b.max_blocks_per_seq = (n + 15) / 16;
  b.query_start = {0, n};
  b.context_lens = {n};
  for (int i = 0; i < n; ++i) {
    b.tokens.push_back(seq[size_t(i)]);
    b.positions.push_back(i);
    b.slot_mapping.push_back(i);
    b.logit_rows.push_back(i);
  }
  for (int j = 0; j < b.max_blocks_per_seq; ++j) b.block_tables.push_back(j);
  std::vector<float> all;
  ExecContext ctx;
  ctx.mode = mode;
  EXPECT_TRUE(trainer->forward(ctx, b, &all).ok());
  const size_t V = size_t(config.vocab_size);
  int differ = 0;
  for (size_t i = 0; i < obs.logits.size(); ++i) {
    const float* row = &all[(target.prompt.size() - 1 + i) * V];
    differ += std::memcmp(row, obs.logits[i].data(), V * sizeof(float)) != 0;
  }
  return differ;
}

// The reduced sweep that racecheck runs on the GPU (SweepOptions::one_case_per_kind): each of the
// seven kinds of case once, none differing in invariant mode.
TEST(EngineInvariance, ReducedSweepRunsOneCaseOfEachKind) {
  SweepOptions options;
  options.one_case_per_kind = true;
  const SweepReport r = run_invariance_sweep(cpu_backend(), Mode::kInvariant, options);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.cases_selected, 7);  // max_chunk, budget, mix, prefix hit, preemption, block_size, threads
  EXPECT_EQ(r.cases_run, 7);
  EXPECT_EQ(r.cases_differing, 0) << r.first_differing;
}

TEST(EngineInvariance, DecodeLogitsEqualOnePrefillOverTheWholeSequence) {
  EXPECT_EQ(decode_vs_prefill_differences(Mode::kInvariant), 0);
}

TEST(EngineInvariance, DecodeLogitsDifferFromOnePrefillInDefaultMode) {
  EXPECT_GT(decode_vs_prefill_differences(Mode::kDefault), 0);
}

}  // namespace
}  // namespace samebits::testing
