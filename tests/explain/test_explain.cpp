// explain on a small scenario (scenarios/explain_ci.yaml): in default mode the first logit
// divergence is localised to an op whose bits differ while its inputs agree, and whose plan differed
// between the two batches; the inverse: in invariant mode the same replay of two samples finds no
// op output that differs at any position, and every logit row it compared is equal. Plus the
// element comparison and the top-2 search on small cases.
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "harness/explain/explain.h"
#include "harness/scenario/experiment.h"

namespace samebits {
namespace {

Experiment run_small(Mode mode) {
  ExperimentOptions o;
  o.modes = {mode};
  o.keep_records = true;
  auto e = run_experiment(std::string(SAMEBITS_SOURCE_DIR) + "/scenarios/explain_ci.yaml", o);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : Experiment{};
}

TEST(Explain, DefaultModeNamesTheOpWhosePlanDiffered) {
  Experiment e = run_small(Mode::kDefault);
  ASSERT_EQ(e.results.modes.size(), 1u);
  const ModeResult& m = e.results.modes[0];
  ASSERT_GT(m.unique_logit_streams(), 1) << "the scenario no longer diverges in default mode";
  auto report = explain_run(e.trace(), e.results, e.model, *e.backend, {});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->modes.size(), 1u);
  ASSERT_FALSE(report->modes[0].items.empty());
  for (const Explanation& x : report->modes[0].items) {
    SCOPED_TRACE(format_explanation(x));
    ASSERT_TRUE(x.found);
    EXPECT_EQ(x.first_logit_step, m.per_sample[size_t(x.other_sample)].first_logit_divergence);
    EXPECT_GT(x.diff.differing, 0);
    EXPECT_GE(x.diff.max_ulp, 1);
    EXPECT_GT(x.diff.max_abs, 0.0);
    // Inputs equal, output different: the kernels follow only their plan, so the plan differed.
    EXPECT_FALSE(x.main_plan.empty());
    EXPECT_NE(x.main_plan, x.other_plan);
    EXPECT_FALSE(x.plans.empty());
    EXPECT_LE(x.position, x.prompt_tokens - 1 + x.first_logit_step);
    // The logits at the first logit divergence differ, and the growth table ends with them.
    ASSERT_FALSE(x.logit_growth.empty());
    EXPECT_EQ(x.logit_growth[0].first, x.first_logit_step);
    EXPECT_GT(x.logit_growth[0].second, 0.0);
    ASSERT_FALSE(x.growth.empty());
    EXPECT_EQ(x.growth.back().what, "logits");
    EXPECT_GT(x.growth.back().diff.differing, 0);
    EXPECT_GE(x.main_top.first, 0);
    EXPECT_GE(x.main_top.gap(), 0.f);
    EXPECT_NE(explain_line(x).find(x.op), std::string::npos);
  }
}

TEST(Explain, InvariantModeFindsNoDifferingOpBetweenTwoSamples) {
  Experiment e = run_small(Mode::kInvariant);
  ASSERT_EQ(e.results.modes.size(), 1u);
  const ModeResult& m = e.results.modes[0];
  ASSERT_EQ(m.unique_logit_streams(), 1);
  Explanation pair;
  pair.mode = Mode::kInvariant;
  pair.main_sample = 0;
  pair.other_sample = m.samples - 1;
  pair.top_step = int(m.groups[0].tokens.size()) - 1;
  std::vector<Explanation> pairs{pair};
  const Trace trace = e.trace();
  ASSERT_TRUE(explain_pairs(trace, trace.runs[0], e.model, *e.backend, &pairs).ok());
  const Explanation& x = pairs[0];
  EXPECT_FALSE(x.found) << format_explanation(x);
  // Every generated token's logits were captured for both samples and compared equal.
  ASSERT_EQ(int(x.logit_growth.size()), pair.top_step + 1);
  for (const auto& [step, diff] : x.logit_growth) EXPECT_EQ(diff, 0.0) << "token " << step;
  EXPECT_EQ(x.main_top.first, m.groups[0].tokens[size_t(pair.top_step)]);
}

TEST(Explain, CompareCountsUlpsInTheOpsType) {
  const uint16_t a[] = {0x3f80, 0x4000, 0xbf80};  // 1, 2, -1 in bf16
  const uint16_t b[] = {0x3f81, 0x4000, 0x3f80};  // 1 + 1 ulp, 2, +1
  const ValueDifference d = compare_bf16(a, b, 3);
  EXPECT_EQ(d.differing, 2);
  EXPECT_EQ(d.elements, 3);
  EXPECT_DOUBLE_EQ(d.max_abs, 2.0);
  EXPECT_EQ(d.max_ulp, 0x3f80 * 2);  // -1 to +1 across zero
  const float x[] = {1.f, 3.f}, y[] = {std::nextafter(1.f, 2.f), 3.f};
  const ValueDifference f = compare_f32(x, y, 2);
  EXPECT_EQ(f.max_ulp, 1);
  EXPECT_EQ(f.differing, 1);
  EXPECT_EQ(compare_f32(x, x, 2).differing, 0);  // inverse: equal rows show no difference
}

TEST(Explain, TopTwoBreaksTiesByLowerIdAndSkipsNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float logits[] = {1.f, 5.f, nan, 5.f, 4.f};
  const TopTwo t = top_two(logits, 5);
  EXPECT_EQ(t.first, 1);
  EXPECT_EQ(t.second, 3);
  EXPECT_EQ(t.gap(), 0.f);
}

}  // namespace
}  // namespace samebits
