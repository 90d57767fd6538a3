// Scenario parsing: the shipped scenarios load with the values they state; defaults; one-line
// errors for inline bad input (the file-based cases are in test_bad_scenarios.cpp).
#include <filesystem>

#include "gtest/gtest.h"
#include "harness/golden/digest.h"
#include "harness/scenario/scenario.h"

namespace samebits {
namespace {

TEST(Scenario, ShippedScenariosLoad) {
  for (const auto& e : std::filesystem::directory_iterator(std::string(SAMEBITS_SOURCE_DIR) + "/scenarios")) {
    if (e.path().extension() != ".yaml") continue;
    SCOPED_TRACE(e.path().string());
    auto s = load_scenario(e.path().string());
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->name, e.path().stem().string());  // golden/<name>/ matches the file name
    EXPECT_FALSE(s->modes.empty());
  }
}

TEST(Scenario, FeynmanIsTheFullExperiment) {
  auto s = load_scenario(std::string(SAMEBITS_SOURCE_DIR) + "/scenarios/feynman.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->samples, 1000);
  EXPECT_EQ(s->sampling.temperature, 0.f);
  EXPECT_TRUE(s->engine.prefix_cache);
  EXPECT_GT(s->engine.max_chunk, 0);
  EXPECT_GT(s->mix.background, 0);
  EXPECT_GT(s->mix.shared_prefix_fraction, 0);
  EXPECT_EQ(s->prompt, "Tell me about Richard Feynman.\n");
}

TEST(Scenario, AllFieldsParse) {
  const char* text = R"(name: all
model: synthetic:tiny:3
prompt: "abc"
samples: 5
max_new_tokens: 9
stop_at_eos: false
seed: 42
sampling: {temperature: 0.7, top_k: 5, top_p: 0.9, seed: 11}
engine: {block_size: 4, kv_blocks: 100, max_tokens_per_step: 32, max_seqs: 3, max_chunk: 8, prefix_cache: off, parallel_units: 16}
mix:
  background: 7
  prompt_len: {dist: normal, mean: 20, stddev: 4, min: 5, max: 40}
  output_len: {dist: fixed, value: 6}
  arrival: {process: burst, rate: 2, burst_size: 4}
  shared_prefix_fraction: 0.25
live: {clients: 2, step_us: 10}
modes: invariant
backend: cuda
)";
  auto s = parse_scenario(text, "all.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->model, "synthetic:tiny:3");
  EXPECT_EQ(s->samples, 5);
  EXPECT_FALSE(s->stop_at_eos);
  EXPECT_EQ(s->seed, 42u);
  EXPECT_FLOAT_EQ(s->sampling.temperature, 0.7f);
  EXPECT_EQ(s->sampling.top_k, 5);
  EXPECT_EQ(s->sampling.seed, 11u);
  EXPECT_EQ(s->engine.block_size, 4);
  EXPECT_FALSE(s->engine.prefix_cache);
  EXPECT_EQ(s->engine.parallel_units, 16);
  EXPECT_EQ(s->mix.prompt_len.kind, LengthDistribution::Kind::kNormal);
  EXPECT_EQ(s->mix.output_len.kind, LengthDistribution::Kind::kFixed);
  EXPECT_EQ(s->mix.output_len.min, 6);
  EXPECT_EQ(s->mix.arrival.kind, ArrivalProcess::Kind::kBurst);
  EXPECT_EQ(s->mix.arrival.burst_size, 4);
  EXPECT_EQ(s->live.clients, 2);
  ASSERT_EQ(s->modes.size(), 1u);
  EXPECT_EQ(s->modes[0], Mode::kInvariant);
  EXPECT_EQ(s->backend, "cuda");
  EXPECT_EQ(s->file_hash, bytes_digest(text));
  const EngineConfig c = engine_config(*s, 3, Mode::kDefault);
  EXPECT_EQ(c.num_blocks, 100);
  EXPECT_EQ(c.exec.num_threads, 3);
  EXPECT_EQ(c.exec.parallel_units, 16);
  EXPECT_EQ(c.exec.mode, Mode::kDefault);
}

TEST(Scenario, DefaultsWhenOptionalFieldsAreAbsent) {
  auto s = parse_scenario("name: d\nprompt: hi\nsamples: 2\nmax_new_tokens: 3\n", "d.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->model, "builtin");
  EXPECT_EQ(s->backend, "cpu");
  EXPECT_EQ(s->mix.background, 0);
  ASSERT_EQ(s->modes.size(), 2u);
  EXPECT_TRUE(s->stop_at_eos);
}

TEST(Scenario, InlineErrorsAreOneLine) {
  struct Case {
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"name: x\nprompt: hi\nsamples: 2\nmax_new_tokens: 3\nsampling: {top_p: 0}\n", "x.yaml:5: sampling.top_p: 0 is not in"},
      {"name: x\nprompt: hi\nsamples: 2.5\nmax_new_tokens: 3\n", "x.yaml:3: samples: '2.5' is not an integer"},
      {"name: x\nprompt: hi\nsamples: 2\nmax_new_tokens: 3\nmodes: [invariant, invariant]\n", "x.yaml:5: modes: 'invariant' is listed twice"},
      {"name: x\nprompt: hi\nsamples: 2\nmax_new_tokens: 3\nmodes: []\n", "x.yaml:5: modes: an empty list"},
      {"name: x\nprompt: hi\nsamples: 2\nmax_new_tokens: 3\nseed: -1\n", "x.yaml:5: seed: -1 is not in"},
      {"", "x.yaml: (top level): (empty) is not a mapping"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto s = parse_scenario(c.text, "x.yaml");
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(std::string(s.status().message()).rfind(c.expect, 0), 0u) << s.status();
  }
}

}  // namespace
}  // namespace samebits
