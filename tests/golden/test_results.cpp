// Results analysis on synthetic token streams: unique completions and logit streams, per-sample
// divergences, fork text, JSON round trip, comparison of two result sets.
#include "gtest/gtest.h"
#include "harness/golden/digest.h"
#include "models/tiny_qwen/tokenizer.h"
#include "harness/golden/results.h"
#include "tests/golden/synthetic_results.h"

namespace samebits {
namespace {

using testing::synthetic_observation;
using testing::synthetic_results;

TEST(Results, CountsCompletionsStreamsAndForks) {
  // 10 samples; samples 3 and 7 fork at token 5 (identically), sample 9 at token 12.
  RunResults r = synthetic_results(10, {{3, 5}, {7, 5}, {9, 12}});
  const ModeResult& m = r.modes[0];
  EXPECT_EQ(m.unique_completions(), 3);
  EXPECT_EQ(m.unique_logit_streams(), 3);
  ASSERT_EQ(m.groups.size(), 3u);
  EXPECT_EQ(m.groups[0].count, 7);
  EXPECT_EQ(m.groups[0].fork_position, -1);
  EXPECT_EQ(m.groups[1].count, 2);
  EXPECT_EQ(m.groups[1].fork_position, 5);
  EXPECT_EQ(m.groups[2].count, 1);
  EXPECT_EQ(m.groups[2].fork_position, 12);
  EXPECT_EQ(m.groups[1].text_before, "Richa");
  EXPECT_EQ(m.groups[1].text_main.substr(0, 4), "rd F");
  EXPECT_EQ(m.groups[1].text_this.substr(0, 2), "FG");
  EXPECT_EQ(m.earliest_token_divergence, 5);
  EXPECT_EQ(m.earliest_logit_divergence, 5);
  EXPECT_EQ(m.samples_token_diverged, 3);
  for (const auto& s : m.per_sample) {
    SCOPED_TRACE("sample " + std::to_string(s.sample));
    const int expect = s.sample == 3 || s.sample == 7 ? 5 : s.sample == 9 ? 12 : -1;
    EXPECT_EQ(s.first_token_divergence, expect);
    EXPECT_EQ(s.first_logit_divergence, expect);
  }
  EXPECT_EQ(m.main_text().substr(0, 15), "Richard Feynman");
  EXPECT_DOUBLE_EQ(m.tokens_per_second(), 24.0 * 10 / 2.0);
}

TEST(Results, SameTokensDifferentLogitsIsOneCompletionTwoStreams) {
  std::vector<TargetObservation> obs = {synthetic_observation(0, 20), synthetic_observation(1, 20),
                                        synthetic_observation(2, 20, -1, 9)};
  ModeResult m = analyze_mode(Mode::kDefault, obs, {}, ByteTokenizer{});
  EXPECT_EQ(m.unique_completions(), 1);
  EXPECT_EQ(m.unique_logit_streams(), 2);
  EXPECT_EQ(m.per_sample[2].first_token_divergence, -1);
  EXPECT_EQ(m.per_sample[2].first_logit_divergence, 9);
  EXPECT_EQ(m.groups[0].logit_streams, 2);
}

TEST(Results, MainCompletionIsTheMostCommonEvenWhenNotFirst) {
  // Sample 0 is the odd one out: the main completion is the other samples'.
  RunResults r = synthetic_results(5, {{0, 3}});
  const ModeResult& m = r.modes[0];
  EXPECT_EQ(m.groups[0].count, 4);
  EXPECT_EQ(m.groups[0].first_sample, 1);
  EXPECT_EQ(m.per_sample[0].first_token_divergence, 3);
  EXPECT_EQ(m.per_sample[1].first_token_divergence, -1);
}

TEST(Results, JsonRoundTripKeepsEverything) {
  RunResults r = synthetic_results(12, {{2, 4}, {5, 10}});
  r.modes[0].golden = {"pass", "12 samples match"};
  auto back = results_from_json(results_to_json(r), "mem.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(results_to_json(*back).dump(), results_to_json(r).dump());
  EXPECT_EQ(back->modes[0].streams[1].steps, r.modes[0].streams[1].steps);
  EXPECT_EQ(back->identity.model.weights_digest, r.identity.model.weights_digest);
  EXPECT_EQ(back->identity.backend.device.cublaslt, "13.1.0");
  ASSERT_EQ(back->modes[0].figures.op_times.size(), 2u);
  EXPECT_EQ(back->modes[0].figures.op_times[0].kind, "attention decode");
  EXPECT_EQ(back->modes[0].figures.op_times[0].host_seconds, 0.0625);
  EXPECT_EQ(back->modes[0].figures.host_waits, 120);
  EXPECT_EQ(back->modes[0].figures.setup_kv_cache_seconds, 0.125);
}

TEST(Results, JsonWithoutTimingStillReads) {
  nlohmann::json j = results_to_json(synthetic_results(3, {}));
  j["modes"][0].erase("timing");
  auto back = results_from_json(j, "old.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->modes[0].figures.op_times.empty());
  j = results_to_json(synthetic_results(3, {}));
  j["modes"][0]["timing"]["ops"][0]["seconds"] = "fast";
  back = results_from_json(j, "r.json");
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("r.json: modes[0].timing.ops[0].seconds"), std::string::npos) << back.status();
}

TEST(Results, MalformedJsonNamesFileAndField) {
  nlohmann::json j = results_to_json(synthetic_results(3, {}));
  j["modes"][0]["streams"][0]["digest"] = "nothex";
  auto bad = results_from_json(j, "r.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("r.json: modes[0].streams[0].digest: 'nothex'"), std::string::npos)
      << bad.status();
  j = results_to_json(synthetic_results(3, {}));
  j["modes"][0].erase("samples_detail");
  bad = results_from_json(j, "r.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("modes[0].samples_detail: missing"), std::string::npos) << bad.status();
}

TEST(Results, CompareFindsFirstDifferingSampleAndStep) {
  RunResults a = synthetic_results(6, {});
  RunResults b = synthetic_results(6, {{4, 7}});
  auto same = compare_results(a, a);
  ASSERT_EQ(same.size(), 1u);
  EXPECT_EQ(same[0].samples_differing, 0);
  auto diff = compare_results(a, b);
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_EQ(diff[0].samples_differing, 1);
  EXPECT_EQ(diff[0].first_sample, 4);
  EXPECT_EQ(diff[0].first_token_step, 7);
  EXPECT_EQ(diff[0].first_logit_step, 7);
}

TEST(Results, ComparePairsTwoSingleModeFilesSideBySide) {
  RunResults a = synthetic_results(6, {}, Mode::kInvariant);
  RunResults b = synthetic_results(6, {{4, 7}}, Mode::kDefault);
  auto lines = compare_results(a, b);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].mode, "invariant vs default");
  EXPECT_EQ(lines[0].unique_completions_a, 1);
  EXPECT_EQ(lines[0].unique_completions_b, 2);
  EXPECT_EQ(lines[0].first_token_divergence_b, 7);
  EXPECT_EQ(lines[0].first_sample, 4);
  EXPECT_TRUE(lines[0].main_completions_agree);
  // The inverse: when most samples fork, the other file's main completion is a different one.
  RunResults c = synthetic_results(6, {{0, 3}, {1, 3}, {2, 3}, {3, 3}}, Mode::kDefault);
  auto other = compare_results(a, c);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_FALSE(other[0].main_completions_agree);
}

}  // namespace
}  // namespace samebits
