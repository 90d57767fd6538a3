// Reports from synthetic results: the table's columns, Markdown, JUnit XML (pass, failure,
// skipped), the progress line (time left; silent when disabled or in CI), and the experiment's
// progress events.
#include <cstdlib>
#include <map>

#include "gtest/gtest.h"
#include "harness/report/report.h"
#include "harness/scenario/experiment.h"
#include "tests/cli/subprocess.h"
#include "tests/golden/synthetic_results.h"

namespace samebits {
namespace {

using testing::synthetic_results;

RunResults two_modes() {
  RunResults r = synthetic_results(10, {{3, 5}, {7, 5}, {9, 12}}, Mode::kDefault);
  r.modes.push_back(synthetic_results(10, {}, Mode::kInvariant).modes[0]);
  r.modes[0].golden = {"pass", "10 samples match"};
  r.modes[1].golden = {"not comparable", "weights digest differs (golden a, run b)"};
  return r;
}

TEST(Reports, TableHasOneRowPerModeWithTheFigures) {
  const std::string t = format_table(two_modes());
  EXPECT_NE(t.find("mode"), std::string::npos);
  EXPECT_NE(t.find("golden"), std::string::npos);
  EXPECT_NE(t.find("tokens/s"), std::string::npos);
  // default: 3 completions, 3 streams, first divergences at 5; invariant: 1, 1, none.
  EXPECT_NE(t.find("default           3        3          5          5 pass"), std::string::npos) << t;
  EXPECT_NE(t.find("invariant         1        1          -          - not comparable"), std::string::npos) << t;
  EXPECT_NE(t.find("2 x fork at token   5"), std::string::npos) << t;
  EXPECT_NE(t.find("weights digest differs"), std::string::npos) << t;
}

TEST(Reports, TableSaysWhereTheTimeWent) {
  const std::string t = format_table(two_modes());
  // 40 steps: (1.5 - 0.5) s of host time = 25 ms/step; 120 waits = 3.0/step; RSS 0.5 - 0.3 GB.
  EXPECT_NE(t.find("set-up: weights 0.25 s, KV cache 0.12 s"), std::string::npos) << t;
  EXPECT_NE(t.find("host 25.00 ms/step (0.00 before its first op or after its results, 0 steps overlapped, 0 scheduled ahead, 0 rows discarded; schedule 0.00, issue 0.00, book 0.00 ms/step), "
                   "3.0 device waits/step (0.50 s waiting)"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("host RSS 0.20 GB"), std::string::npos) << t;
  // Op kinds largest first, backend and host seconds with the call count, per mode.
  const size_t attention = t.find("attention decode"), linear = t.find("linear q_proj 256x256");
  ASSERT_NE(attention, std::string::npos) << t;
  ASSERT_NE(linear, std::string::npos) << t;
  EXPECT_LT(attention, linear);
  EXPECT_NE(t.find("0.750 |   0.062 (    160)"), std::string::npos) << t;
}

TEST(Reports, TableFlagsInvariantDivergence) {
  RunResults r = synthetic_results(4, {{1, 2}}, Mode::kInvariant);
  EXPECT_FALSE(invariance_holds(r.modes[0]));
  EXPECT_NE(format_table(r).find("NOT INVARIANT"), std::string::npos);
  EXPECT_TRUE(invariance_holds(synthetic_results(4, {{1, 2}}, Mode::kDefault).modes[0]));
}

TEST(Reports, MarkdownSummary) {
  const std::string md = format_markdown(two_modes());
  EXPECT_EQ(md.rfind("# samebits: synthetic passed", 0), 0u) << md;
  EXPECT_NE(md.find("| default | 3 | 3 | 5 | 5 | pass |"), std::string::npos) << md;
  EXPECT_NE(md.find("## invariant mode"), std::string::npos);
  EXPECT_NE(md.find("| 2 | 5 | `Richa` |"), std::string::npos) << md;
}

TEST(Reports, JunitPassFailSkip) {
  RunResults r = two_modes();
  std::string xml = format_junit(r);
  EXPECT_NE(xml.find("tests=\"3\" failures=\"0\" skipped=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"invariant.invariance\""), std::string::npos);
  EXPECT_NE(xml.find("<skipped message=\"not comparable: weights digest differs"), std::string::npos) << xml;
  r.modes[0].golden = {"mismatch", "default: sample 3 first differs at step 5 <&>"};
  xml = format_junit(r);
  EXPECT_NE(xml.find("failures=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"default: sample 3 first differs at step 5 &lt;&amp;&gt;\"/>"), std::string::npos) << xml;
  RunResults broken = synthetic_results(4, {{1, 2}}, Mode::kInvariant);
  EXPECT_NE(format_junit(broken).find("2 unique completions and 2 unique logit streams"), std::string::npos);
}

TEST(Reports, DisabledProgressLinePrintsNothing) {
  ::testing::internal::CaptureStderr();
  {
    ProgressLine p("default", false);
    p.update(1, 10);
    p.update(10, 10);
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ::testing::internal::CaptureStderr();
  {
    ProgressLine p("default", true);
    p.update(3, 10);
  }
  const std::string shown = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(shown.find("[default] 3/10 samples"), std::string::npos) << shown;
}

TEST(Reports, ProgressLineEstimatesTheTimeLeft) {
  // 250 of 1000 samples in 20 s: 750 more at the same rate take 60 s.
  EXPECT_EQ(ProgressLine::format("default", 250, 1000, 20.0), "[default] 250/1000 samples (25%), 20.0 s, about 1 min 00 s left");
  EXPECT_EQ(ProgressLine::format("invariant", 900, 1000, 9.0), "[invariant] 900/1000 samples (90%), 9.0 s, about 1 s left");
  // No estimate before the first sample, in the first second, or when done.
  EXPECT_EQ(ProgressLine::format("default", 0, 1000, 5.0), "[default] 0/1000 samples (0%), 5.0 s");
  EXPECT_EQ(ProgressLine::format("default", 3, 1000, 0.5), "[default] 3/1000 samples (0%), 0.5 s");
  EXPECT_EQ(ProgressLine::format("default", 1000, 1000, 80.0), "[default] 1000/1000 samples (100%), 80.0 s");
}

TEST(Reports, NoProgressLineInCi) {
  // Whatever stderr is, CI=true keeps the line out of the log.
  const testing::ScopedEnv ci("CI", "true");
  EXPECT_FALSE(ProgressLine::wanted_on_stderr());
}

// The experiment reports each mode's progress through the caller's callback: from 0, never going
// back, ending with one finished event at the full count; without a callback nothing is needed.
TEST(Reports, ExperimentReportsProgressPerMode) {
  ExperimentOptions o;
  o.samples = 3;
  o.threads = 1;
  std::map<Mode, std::vector<ProgressEvent>> events;
  o.progress = [&](const ProgressEvent& e) { events[e.mode].push_back(e); };
  auto e = run_experiment(std::string(SAMEBITS_SOURCE_DIR) + "/scenarios/smoke.yaml", o);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(events.size(), e->scenario.modes.size());
  for (const auto& [mode, list] : events) {
    SCOPED_TRACE(std::string(mode_name(mode)));
    ASSERT_GE(list.size(), 2u);
    EXPECT_EQ(list.front().done, 0);
    EXPECT_FALSE(list.front().finished);
    for (size_t i = 1; i < list.size(); ++i) {
      EXPECT_GE(list[i].done, list[i - 1].done);
      EXPECT_EQ(list[i].total, 3);
      EXPECT_EQ(list[i].finished, i + 1 == list.size());
    }
    EXPECT_EQ(list.back().done, 3);
  }
}

}  // namespace
}  // namespace samebits
