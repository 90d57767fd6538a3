// The Feynman experiment at CI size (scenarios/feynman_ci.yaml), one test per mode so that ctest
// runs them side by side. Invariant mode: one unique completion, one unique logit stream, and the
// golden matches. Default mode: its seeded-schedule golden matches, and it must be SEEN to differ
// (at least 2 unique logit streams and at least 2 unique completions with the builtin checkpoint:
// the point of the demonstration).
#include "gtest/gtest.h"
#include "harness/golden/golden_store.h"
#include "harness/report/report.h"
#include "harness/scenario/experiment.h"

namespace samebits {
namespace {

const std::string kScenario = std::string(SAMEBITS_SOURCE_DIR) + "/scenarios/feynman_ci.yaml";

RunResults run_mode(Mode mode) {
  ExperimentOptions o;
  o.modes = {mode};
  o.threads = 1;  // the two tests run side by side on a 2-core machine
  auto e = run_experiment(kScenario, o);
  EXPECT_TRUE(e.ok()) << e.status();
  if (!e.ok()) return {};
  auto golden = read_golden(golden_path(default_golden_dir(kScenario), e->scenario.name, e->backend->id));
  EXPECT_TRUE(golden.ok()) << golden.status();
  if (golden.ok()) check_against_golden(*golden, &e->results);
  std::printf("%s", format_table(e->results).c_str());
  return e->results;
}

TEST(FeynmanCi, InvariantModeGivesOneCompletionAndMatchesItsGolden) {
  RunResults r = run_mode(Mode::kInvariant);
  ASSERT_EQ(r.modes.size(), 1u);
  const ModeResult& m = r.modes[0];
  EXPECT_EQ(m.samples, 200);
  EXPECT_EQ(m.unique_completions(), 1);
  EXPECT_EQ(m.unique_logit_streams(), 1);
  EXPECT_EQ(m.earliest_logit_divergence, -1);
  EXPECT_EQ(m.golden.state, "pass") << m.golden.detail;
}

TEST(FeynmanCi, DefaultModeDivergesAsItsGoldenSays) {
  RunResults r = run_mode(Mode::kDefault);
  ASSERT_EQ(r.modes.size(), 1u);
  const ModeResult& m = r.modes[0];
  EXPECT_EQ(m.golden.state, "pass") << m.golden.detail;
  EXPECT_GE(m.unique_logit_streams(), 2) << "default mode must be seen to differ";
  EXPECT_GE(m.unique_completions(), 2)
      << "the builtin checkpoint should fork under batch-dependent numerics (models/tiny_qwen)";
}

}  // namespace
}  // namespace samebits
