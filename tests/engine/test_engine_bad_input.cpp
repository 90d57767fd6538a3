// Bad input never crashes or hangs: engine configurations are refused with the field and value,
// impossible requests finish at once as rejected with a reason, a diverging replay is an error.
#include <gtest/gtest.h>

#include <functional>

#include "tests/engine/engine_fixture.h"

namespace samebits::testing {
namespace {

RequestSpec spec(uint64_t id, std::vector<int32_t> prompt, int max_new_tokens) {
  RequestSpec s;
  s.id = id;
  s.prompt = std::move(prompt);
  s.max_new_tokens = max_new_tokens;
  return s;
}

TEST(EngineBadInput, ConfigErrorsNameTheFieldAndValue) {
  const ModelConfig model = engine_test_config("micro");
  struct Case {
    const char* name;
    std::function<void(EngineConfig&)> mutate;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"block size zero", [](EngineConfig& c) { c.block_size = 0; }, "engine.block_size: 0 is not a positive integer"},
      {"block size negative", [](EngineConfig& c) { c.block_size = -16; }, "engine.block_size: -16"},
      {"block size not dividing the split", [](EngineConfig& c) { c.block_size = 48; },
       "engine.block_size: 48 does not divide the attention split size 256"},
      {"zero KV blocks", [](EngineConfig& c) { c.num_blocks = 0; }, "engine.num_blocks: 0 is not a positive integer"},
      {"budget below one token", [](EngineConfig& c) { c.max_tokens_per_step = 0; },
       "engine.max_tokens_per_step: 0 is a budget smaller than one token"},
      {"negative budget", [](EngineConfig& c) { c.max_tokens_per_step = -5; }, "engine.max_tokens_per_step: -5"},
      {"max_seqs zero", [](EngineConfig& c) { c.max_seqs = 0; }, "engine.max_seqs: 0 is not a positive integer"},
      {"negative chunk", [](EngineConfig& c) { c.max_chunk = -1; }, "engine.max_chunk: -1 is negative"},
      {"negative threads", [](EngineConfig& c) { c.exec.num_threads = -2; }, "engine.exec.num_threads: -2"},
      {"zero parallel units", [](EngineConfig& c) { c.exec.parallel_units = 0; }, "engine.exec.parallel_units: 0"},
  };
  std::unique_ptr<Model> m = make_model(model, 64, 16);
  ASSERT_NE(m, nullptr);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EngineConfig config;
    config.num_blocks = 64;
    c.mutate(config);
    absl::Status s = validate_engine_config(config, model);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(std::string(s.message()).find(c.message), std::string::npos) << s;
    auto engine = Engine::create(*m, config);
    ASSERT_FALSE(engine.ok());
    EXPECT_EQ(engine.status(), s);
  }
}

TEST(EngineBadInput, EngineMustFitTheModelsKvCache) {
  std::unique_ptr<Model> m = make_model(engine_test_config("micro"), 64, 16);
  EngineConfig config;
  config.num_blocks = 65;
  auto e = Engine::create(*m, config);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(std::string(e.status().message()).find("engine.num_blocks: 65 exceeds the model's KV cache of 64"),
            std::string::npos);
  config.num_blocks = 64;
  config.block_size = 32;
  e = Engine::create(*m, config);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(std::string(e.status().message()).find("engine.block_size: 32 differs"), std::string::npos);
}

TEST(EngineBadInput, ImpossibleRequestsAreRejectedWithAReasonAndOthersStillRun) {
  const ModelConfig model = engine_test_config("micro");  // 1024 positions
  std::unique_ptr<Model> m = make_model(model, 8, 16);    // 128 tokens of KV
  EngineConfig config;
  config.num_blocks = 8;
  RequestSpec too_long = spec(1, random_prompt(1, 1025), 1);
  RequestSpec context_overflow = spec(2, random_prompt(2, 1000), 100);
  RequestSpec too_many_blocks = spec(3, random_prompt(3, 120), 20);
  RequestSpec empty = spec(4, {}, 4);
  RequestSpec bad_token = spec(5, {1, 2, 999}, 4);
  RequestSpec fine = spec(6, random_prompt(6, 20), 5);
  RunOutcome o = run_workload(*m, config,
                              {{0, too_long}, {0, context_overflow}, {0, too_many_blocks}, {0, empty}, {0, bad_token}, {1, fine}},
                              nullptr, 1000);
  EXPECT_EQ(o.error, "");
  ASSERT_EQ(o.results.size(), 6u);
  const std::map<uint64_t, std::string> expected = {
      {1, "prompt of 1025 tokens + max_new_tokens 1 exceeds the model context of 1024 positions"},
      {2, "exceeds the model context"},
      {3, "needs 9 KV blocks (139 tokens at block size 16) but the cache has 8"},
      {4, "the prompt is empty"},
      {5, "id 999 is outside the vocabulary"}};
  for (const auto& [id, reason] : expected) {
    SCOPED_TRACE(::testing::Message() << "request " << id);
    EXPECT_EQ(o.results[id].reason, FinishReason::kRejected);
    EXPECT_NE(o.results[id].reject_reason.find(reason), std::string::npos) << o.results[id].reject_reason;
    EXPECT_TRUE(o.results[id].tokens.empty());
  }
  EXPECT_EQ(o.results[6].reason, FinishReason::kMaxTokens);
  EXPECT_EQ(o.results[6].tokens.size(), 5u);
  EXPECT_EQ(o.stats.rejected, 5);
  EXPECT_EQ(o.free_blocks_at_end, 8);
}

TEST(EngineBadInput, StepWithNothingToDoIsHarmless) {
  std::unique_ptr<Model> m = make_model(engine_test_config("micro"), 8, 16);
  EngineConfig config;
  config.num_blocks = 8;
  auto e = Engine::create(*m, config);
  ASSERT_TRUE(e.ok());
  auto record = (*e)->step();
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_TRUE(record->entries.empty());
  EXPECT_FALSE((*e)->has_unfinished());
}

TEST(EngineBadInput, ReplayOfAForeignScheduleIsAnErrorNotACrash) {
  std::unique_ptr<Model> m = make_model(engine_test_config("micro"), 16, 16);
  EngineConfig config;
  config.num_blocks = 16;
  auto e = Engine::create(*m, config);
  ASSERT_TRUE(e.ok());
  (*e)->add_request(spec(7, random_prompt(7, 10), 3));
  StepRecord bogus;
  StepRecord::Entry entry;
  entry.request_id = 7;
  entry.num_tokens = 10;
  entry.samples = true;
  entry.blocks = {3};
  bogus.entries.push_back(entry);
  auto r = (*e)->step(&bogus);  // not in the record's admitted list
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("replay"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace samebits::testing
