// Scheduler without a model: budgets, chunking, admission, prefix hits, preemption, finishing,
// rejection, replay. Sampled tokens are a fixed function of (request id, token index).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "harness/engine/scheduler.h"

namespace samebits {
namespace {

int32_t fake_token(uint64_t id, int index) { return int32_t((id * 31 + uint64_t(index) * 7) % 50); }

RequestSpec make_request(uint64_t id, std::vector<int32_t> prompt, int max_new) {
  RequestSpec spec;
  spec.id = id;
  spec.prompt = std::move(prompt);
  spec.max_new_tokens = max_new;
  spec.stop_at_eos = false;
  return spec;
}

std::vector<int32_t> tokens(int n, int32_t first = 1) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back((first + i) % 60);
  return t;
}

SchedulerConfig small_config() {
  SchedulerConfig c;
  c.block_size = 4;
  c.num_blocks = 64;
  c.max_tokens_per_step = 10;
  c.max_seqs = 8;
  c.max_model_len = 256;
  c.vocab_size = 64;
  c.eos_token_id = 63;
  return c;
}

// Runs one scheduled step as the engine would, with fake tokens.
StepRecord run_step(Scheduler& s, const ScheduleOutput& out) {
  StepRecord record = s.record_of(out);
  s.commit(out);
  for (const ScheduledEntry& e : out.entries) {
    if (e.samples) s.append_token(e.request, fake_token(e.request->spec.id, e.request->num_generated()));
  }
  EXPECT_EQ(s.check_invariants(), "") << "after step " << record.index;
  return record;
}

StepRecord step(Scheduler& s) { return run_step(s, s.schedule()); }

std::vector<RequestResult> run_to_end(Scheduler& s, std::vector<StepRecord>* records = nullptr, int max_steps = 100000) {
  std::vector<RequestResult> results;
  for (int i = 0; i < max_steps && s.has_unfinished(); ++i) {
    StepRecord r = step(s);
    if (records) records->push_back(r);
    for (auto& f : s.take_finished()) results.push_back(std::move(f));
  }
  EXPECT_FALSE(s.has_unfinished()) << "did not finish within " << max_steps << " steps";
  for (auto& f : s.take_finished()) results.push_back(std::move(f));
  return results;
}

TEST(Scheduler, DecodesFirstThenPrefillsWithinTheBudget) {
  Scheduler s(small_config());
  s.add(make_request(1, tokens(3), 5));
  StepRecord r1 = step(s);
  ASSERT_EQ(r1.entries.size(), 1u);
  EXPECT_EQ(r1.entries[0].num_tokens, 3);
  EXPECT_TRUE(r1.entries[0].samples);
  s.add(make_request(2, tokens(20), 2));
  StepRecord r2 = step(s);
  ASSERT_EQ(r2.entries.size(), 2u);
  EXPECT_EQ(r2.entries[0].request_id, 1u);  // the decode comes first
  EXPECT_EQ(r2.entries[0].start_position, 3);
  EXPECT_EQ(r2.entries[0].num_tokens, 1);
  EXPECT_EQ(r2.entries[1].request_id, 2u);
  EXPECT_EQ(r2.entries[1].num_tokens, 9);  // what the budget leaves
  EXPECT_FALSE(r2.entries[1].samples);
  EXPECT_EQ(r2.admitted, std::vector<uint64_t>{2});
  StepRecord r3 = step(s);
  ASSERT_EQ(r3.entries.size(), 2u);
  EXPECT_EQ(r3.entries[1].start_position, 9);
  EXPECT_EQ(r3.entries[1].num_tokens, 9);
  StepRecord r4 = step(s);
  ASSERT_EQ(r4.entries.size(), 2u);
  EXPECT_EQ(r4.entries[1].num_tokens, 2);
  EXPECT_TRUE(r4.entries[1].samples);
  EXPECT_EQ(r4.entries[1].blocks.size(), 5u);  // 20 tokens at block size 4
}

TEST(Scheduler, ChunksFollowMaxChunkAndBudget) {
  struct Case {
    int budget, max_chunk, prompt;
    std::vector<int> chunks;
  };
  for (const Case& c : {Case{10, 3, 10, {3, 3, 3, 1}}, Case{4, 0, 10, {4, 4, 2}}, Case{1, 0, 3, {1, 1, 1}},
                        Case{64, 0, 10, {10}}, Case{5, 7, 12, {5, 5, 2}}}) {
    SCOPED_TRACE(::testing::Message() << "budget=" << c.budget << " max_chunk=" << c.max_chunk << " prompt=" << c.prompt);
    SchedulerConfig cfg = small_config();
    cfg.max_tokens_per_step = c.budget;
    cfg.max_chunk = c.max_chunk;
    Scheduler s(cfg);
    s.add(make_request(1, tokens(c.prompt), 1));
    std::vector<int> chunks;
    while (s.has_unfinished()) chunks.push_back(step(s).entries.at(0).num_tokens);
    EXPECT_EQ(chunks, c.chunks);
  }
}

TEST(Scheduler, AdmitsInArrivalOrderUpToMaxSeqs) {
  SchedulerConfig cfg = small_config();
  cfg.max_seqs = 2;
  cfg.max_tokens_per_step = 100;
  Scheduler s(cfg);
  for (uint64_t id : {5, 3, 9}) s.add(make_request(id, tokens(4), 3));
  StepRecord r1 = step(s);
  EXPECT_EQ(r1.admitted, (std::vector<uint64_t>{5, 3}));
  EXPECT_EQ(s.num_running(), 2);
  EXPECT_EQ(s.num_waiting(), 1);
  auto results = run_to_end(s);
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) {
    EXPECT_EQ(r.reason, FinishReason::kMaxTokens);
    EXPECT_EQ(r.tokens.size(), 3u);
  }
}

TEST(Scheduler, PrefixHitsAreBlockAlignedAndLeaveOneTokenToCompute) {
  SchedulerConfig cfg = small_config();
  cfg.max_tokens_per_step = 100;
  Scheduler s(cfg);
  s.add(make_request(1, tokens(10), 1));
  run_to_end(s);
  struct Case {
    int prompt_len;
    int expected_hit;
  };
  // Cached: blocks [0,4) and [4,8) of tokens(10). 8 tokens: 1 block (never the whole prompt).
  for (const Case& c : {Case{10, 8}, Case{8, 4}, Case{9, 8}, Case{4, 0}, Case{5, 4}, Case{12, 8}}) {
    SCOPED_TRACE(::testing::Message() << "prompt_len=" << c.prompt_len);
    const int64_t hits_before = s.stats().prefix_hit_tokens;
    s.add(make_request(100 + uint64_t(c.prompt_len), tokens(c.prompt_len), 1));
    StepRecord r = step(s);
    ASSERT_EQ(r.entries.size(), 1u);
    EXPECT_EQ(r.entries[0].start_position, c.expected_hit);
    EXPECT_EQ(r.entries[0].num_tokens, c.prompt_len - c.expected_hit);
    EXPECT_EQ(s.stats().prefix_hit_tokens - hits_before, c.expected_hit);
    auto done = s.take_finished();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].prefix_hit_tokens, c.expected_hit);
  }
  EXPECT_GT(s.stats().prefix_hit_requests, 0);
}

TEST(Scheduler, CacheOffMeansNoHits) {
  SchedulerConfig cfg = small_config();
  cfg.prefix_cache = false;
  Scheduler s(cfg);
  s.add(make_request(1, tokens(10), 1));
  s.add(make_request(2, tokens(10), 1));
  run_to_end(s);
  EXPECT_EQ(s.stats().prefix_hit_tokens, 0);
  EXPECT_EQ(s.prefix_cache().size(), 0);
}

TEST(Scheduler, PreemptsTheMostRecentlyAdmittedAndRecomputesIt) {
  for (bool cache : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "prefix_cache=" << cache);
    SchedulerConfig cfg = small_config();
    cfg.block_size = 2;
    cfg.num_blocks = 4;
    cfg.max_tokens_per_step = 100;
    cfg.prefix_cache = cache;
    Scheduler s(cfg);
    s.add(make_request(1, tokens(3, 1), 4));
    s.add(make_request(2, tokens(3, 30), 4));
    StepRecord r1 = step(s);  // both prefill 3 tokens: 2 blocks each
    EXPECT_EQ(r1.admitted, (std::vector<uint64_t>{1, 2}));
    EXPECT_EQ(s.block_manager().num_free(), 0);
    std::vector<StepRecord> records;
    auto results = run_to_end(s, &records);
    bool saw = false;
    for (const auto& r : records) {
      if (r.preempted.empty()) continue;
      saw = true;
      EXPECT_EQ(r.preempted, std::vector<uint64_t>{2});
      EXPECT_TRUE(r.admitted.empty());  // no admission in a step that preempted
    }
    EXPECT_TRUE(saw);
    ASSERT_EQ(results.size(), 2u);
    for (const auto& r : results) {
      EXPECT_EQ(r.tokens.size(), 4u);
      // Tokens depend only on (id, index): a recomputed request continues where it was.
      for (int i = 0; i < 4; ++i) EXPECT_EQ(r.tokens[size_t(i)], fake_token(r.id, i));
      EXPECT_EQ(r.preemptions, r.id == 2 ? 1 : 0);
    }
    EXPECT_EQ(s.block_manager().num_free(), 4);
    EXPECT_EQ(s.stats().preemptions, 1);
  }
}

TEST(Scheduler, SelfPreemptionWhenTheNewestNeedsABlock) {
  SchedulerConfig cfg = small_config();
  cfg.block_size = 1;
  cfg.num_blocks = 5;
  cfg.max_tokens_per_step = 100;
  cfg.prefix_cache = false;
  Scheduler s(cfg);
  s.add(make_request(1, tokens(2), 3));  // 4 blocks at most
  s.add(make_request(2, tokens(2), 3));
  auto results = run_to_end(s);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_GT(s.stats().preemptions, 0);
  EXPECT_EQ(s.block_manager().num_free(), 5);
}

TEST(Scheduler, FinishesByEosStopSequenceOrMaxTokens) {
  SchedulerConfig cfg = small_config();
  Scheduler s(cfg);
  RequestSpec eos = make_request(1, tokens(3), 10);
  eos.stop_at_eos = true;
  RequestSpec stop = make_request(2, tokens(3), 10);
  stop.stop_sequences = {{40, 41}, {12}};
  s.add(eos);
  s.add(stop);
  s.add(make_request(3, tokens(3), 2));
  ScheduleOutput out = s.schedule();
  s.commit(out);
  ASSERT_EQ(out.entries.size(), 3u);
  EXPECT_EQ(s.append_token(out.entries[0].request, 5), FinishReason::kRunning);
  EXPECT_EQ(s.append_token(out.entries[0].request, cfg.eos_token_id), FinishReason::kEos);
  EXPECT_EQ(s.append_token(out.entries[1].request, 40), FinishReason::kRunning);
  EXPECT_EQ(s.append_token(out.entries[1].request, 41), FinishReason::kStopSequence);
  EXPECT_EQ(s.append_token(out.entries[2].request, 12), FinishReason::kRunning);
  EXPECT_EQ(s.append_token(out.entries[2].request, cfg.eos_token_id), FinishReason::kMaxTokens);  // EOS ignored
  auto done = s.take_finished();
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].tokens, (std::vector<int32_t>{5, cfg.eos_token_id}));
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_EQ(s.block_manager().num_free(), cfg.num_blocks);
}

TEST(Scheduler, RejectsWhatCanNeverRunWithAReason) {
  SchedulerConfig cfg = small_config();
  cfg.num_blocks = 8;  // 32 tokens of KV
  cfg.max_model_len = 40;
  struct Case {
    const char* name;
    RequestSpec spec;
    const char* reason;
  };
  RequestSpec bad_temp = make_request(6, tokens(3), 2);
  bad_temp.sampling.temperature = -1.f;
  RequestSpec bad_top_p = make_request(7, tokens(3), 2);
  bad_top_p.sampling.top_p = 0.f;
  RequestSpec bad_top_k = make_request(8, tokens(3), 2);
  bad_top_k.sampling.top_k = -2;
  RequestSpec empty_stop = make_request(9, tokens(3), 2);
  empty_stop.stop_sequences = {{}};
  std::vector<Case> cases = {
      {"empty prompt", make_request(1, {}, 2), "prompt is empty"},
      {"no new tokens", make_request(2, tokens(3), 0), "max_new_tokens: 0"},
      {"prompt beyond context", make_request(3, tokens(41), 1), "exceeds the model context of 40"},
      {"more blocks than exist", make_request(4, tokens(30), 8), "needs 10 KV blocks"},
      {"token outside vocab", make_request(5, {1, 64, 2}, 1), "id 64 is outside the vocabulary"},
      {"negative temperature", bad_temp, "sampling.temperature"},
      {"top_p zero", bad_top_p, "sampling.top_p"},
      {"negative top_k", bad_top_k, "sampling.top_k"},
      {"empty stop sequence", empty_stop, "stop_sequences[0] is empty"},
  };
  Scheduler s(cfg);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    s.add(c.spec);
    auto done = s.take_finished();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].id, c.spec.id);
    EXPECT_EQ(done[0].reason, FinishReason::kRejected);
    EXPECT_NE(done[0].reject_reason.find(c.reason), std::string::npos) << done[0].reject_reason;
  }
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_EQ(s.stats().rejected, int64_t(cases.size()));
  s.add(make_request(10, tokens(3), 2));
  s.add(make_request(10, tokens(3), 2));  // same id while the first is queued
  auto done = s.take_finished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_NE(done[0].reject_reason.find("already queued"), std::string::npos);
}

// A seeded random workload with KV pressure: returns every step's record.
std::vector<StepRecord> random_workload(Scheduler& s, uint64_t seed, int num_requests,
                                        std::vector<RequestResult>* results) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<int32_t>> prefixes;
  for (int i = 0; i < 4; ++i) prefixes.push_back(tokens(4 + 4 * i, 7 * i));
  std::vector<StepRecord> records;
  int added = 0;
  while (added < num_requests || s.has_unfinished()) {
    const int arrivals = added < num_requests ? int(rng() % 4) : 0;
    for (int a = 0; a < arrivals && added < num_requests; ++a, ++added) {
      std::vector<int32_t> prompt;
      if (rng() % 2) prompt = prefixes[rng() % prefixes.size()];
      const int tail = 1 + int(rng() % 12);
      for (int t = 0; t < tail; ++t) prompt.push_back(int32_t(rng() % 60));
      s.add(make_request(uint64_t(added), prompt, 1 + int(rng() % 10)));
    }
    records.push_back(step(s));
    for (auto& f : s.take_finished()) results->push_back(std::move(f));
    if (records.size() > 200000) {
      ADD_FAILURE() << "no end in sight";
      break;
    }
  }
  return records;
}

TEST(Scheduler, RandomWorkloadUnderKvPressureFinishesEverything) {
  SchedulerConfig cfg = small_config();
  cfg.num_blocks = 24;
  cfg.max_tokens_per_step = 16;
  cfg.max_seqs = 6;
  Scheduler s(cfg);
  std::vector<RequestResult> results;
  random_workload(s, 42, 3000, &results);
  EXPECT_EQ(results.size(), 3000u);
  for (const auto& r : results) {
    EXPECT_NE(r.reason, FinishReason::kRejected) << r.reject_reason;
    for (size_t i = 0; i < r.tokens.size(); ++i) ASSERT_EQ(r.tokens[i], fake_token(r.id, int(i)));
  }
  EXPECT_GT(s.stats().preemptions, 0);
  EXPECT_GT(s.stats().prefix_hit_requests, 0);
  EXPECT_EQ(s.block_manager().num_free(), cfg.num_blocks);
  EXPECT_EQ(s.check_invariants(), "");
}

TEST(Scheduler, ReplayOfARecordedScheduleIsExact) {
  SchedulerConfig cfg = small_config();
  cfg.num_blocks = 12;
  cfg.max_tokens_per_step = 16;
  cfg.max_seqs = 6;
  Scheduler original(cfg);
  std::vector<RequestResult> results;
  // Every request arrives before the first step, so that the replay can add them the same way.
  std::mt19937_64 rng(7);
  std::vector<RequestSpec> specs;
  for (int i = 0; i < 60; ++i) {
    std::vector<int32_t> prompt = tokens(4 * int(rng() % 3));
    for (int t = 0, n = 1 + int(rng() % 9); t < n; ++t) prompt.push_back(int32_t(rng() % 60));
    specs.push_back(make_request(uint64_t(i), prompt, 1 + int(rng() % 24)));
  }
  for (const auto& spec : specs) original.add(spec);
  std::vector<StepRecord> records;
  run_to_end(original, &records);
  ASSERT_GT(original.stats().preemptions, 0);

  Scheduler replay(cfg);
  for (const auto& spec : specs) replay.add(spec);
  for (const StepRecord& rec : records) {
    auto out = replay.schedule_forced(rec);
    ASSERT_TRUE(out.ok()) << out.status();
    StepRecord again = run_step(replay, *out);
    ASSERT_EQ(again.entries.size(), rec.entries.size());
    for (size_t i = 0; i < rec.entries.size(); ++i) {
      EXPECT_EQ(again.entries[i].request_id, rec.entries[i].request_id);
      EXPECT_EQ(again.entries[i].start_position, rec.entries[i].start_position);
      EXPECT_EQ(again.entries[i].num_tokens, rec.entries[i].num_tokens);
      EXPECT_EQ(again.entries[i].blocks, rec.entries[i].blocks);
    }
  }
  EXPECT_FALSE(replay.has_unfinished());
  EXPECT_EQ(replay.stats().prefix_hit_tokens, original.stats().prefix_hit_tokens);
}

TEST(Scheduler, ReplayThatDivergesIsAnError) {
  SchedulerConfig cfg = small_config();
  Scheduler original(cfg);
  original.add(make_request(1, tokens(6), 3));
  StepRecord rec = step(original);
  struct Case {
    const char* name;
    void (*mutate)(StepRecord&);
    const char* message;
  };
  for (const Case& c : {Case{"unknown id", [](StepRecord& r) { r.entries[0].request_id = 99; }, "unknown"},
                        Case{"wrong start", [](StepRecord& r) { r.entries[0].start_position = 1; }, "block-aligned"},
                        Case{"too many tokens", [](StepRecord& r) { r.entries[0].num_tokens = 60; }, "tokens from"},
                        Case{"bad block", [](StepRecord& r) { r.entries[0].blocks[0] = 1000; }, "not free"},
                        Case{"not admitted", [](StepRecord& r) { r.admitted.clear(); }, "does not admit"}}) {
    SCOPED_TRACE(c.name);
    Scheduler replay(cfg);
    replay.add(make_request(1, tokens(6), 3));
    StepRecord bad = rec;
    c.mutate(bad);
    auto out = replay.schedule_forced(bad);
    ASSERT_FALSE(out.ok());
    EXPECT_NE(std::string(out.status().message()).find(c.message), std::string::npos) << out.status();
  }
}

}  // namespace
}  // namespace samebits
