// Live mode and replay: a live run's trace (written, read back) replays to the same digests in
// both modes; a simulated run's trace too; invariant digests do not depend on the schedule.
#include <filesystem>

#include "gtest/gtest.h"
#include "harness/scenario/experiment.h"
#include "harness/scenario/live.h"

namespace samebits {
namespace {

const std::string kSmoke = std::string(SAMEBITS_SOURCE_DIR) + "/scenarios/smoke.yaml";

void expect_replay_reproduces(const Experiment& e, const std::string& name) {
  const std::string path = (std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()) + ".json")).string();
  ASSERT_TRUE(write_trace(e.trace(), path).ok());
  auto trace = read_trace(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->runs.size(), e.runs.size());
  for (size_t r = 0; r < trace->runs.size(); ++r) {
    const TraceRun& recorded = trace->runs[r];
    SCOPED_TRACE(std::string(mode_name(recorded.mode)));
    EXPECT_EQ(recorded.records.size(), e.runs[r].records.size());
    auto replayed = replay_run(*trace, recorded, e.model, *e.backend);
    ASSERT_TRUE(replayed.ok()) << replayed.status();
    ASSERT_EQ(replayed->targets.size(), e.runs[r].targets.size());
    for (size_t i = 0; i < replayed->targets.size(); ++i) {
      SCOPED_TRACE("sample " + std::to_string(i));
      EXPECT_EQ(replayed->targets[i].digest, recorded.digests[i]);
      EXPECT_EQ(replayed->targets[i].tokens, e.runs[r].targets[i].tokens);
      EXPECT_EQ(replayed->targets[i].steps, e.runs[r].targets[i].steps);
    }
  }
}

TEST(LiveReplay, LiveTraceReplaysToTheSameDigests) {
  ExperimentOptions o;
  o.live = true;
  o.threads = 1;
  auto e = run_experiment(kSmoke, o);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(e->results.identity.live);
  expect_replay_reproduces(*e, "live_trace_");
}

TEST(LiveReplay, SimulatedTraceReplaysToTheSameDigests) {
  ExperimentOptions o;
  o.keep_records = true;
  o.threads = 1;
  auto e = run_experiment(kSmoke, o);
  ASSERT_TRUE(e.ok()) << e.status();
  expect_replay_reproduces(*e, "sim_trace_");
}

TEST(LiveReplay, InvariantDigestsDoNotDependOnTheSchedule) {
  ExperimentOptions o;
  o.modes = {Mode::kInvariant};
  o.threads = 1;
  auto simulated = run_experiment(kSmoke, o);
  o.live = true;
  auto live = run_experiment(kSmoke, o);
  ASSERT_TRUE(simulated.ok() && live.ok());
  const auto& a = simulated->runs[0].targets;
  const auto& b = live->runs[0].targets;
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].digest, b[i].digest) << "sample " << i;
  EXPECT_EQ(simulated->results.modes[0].unique_logit_streams(), 1);
}

}  // namespace
}  // namespace samebits
