// ci/gpu_sanitizers.sh (the GPU nightly's compute-sanitizer sweep) on a machine without a GPU: a
// stand-in compute-sanitizer and a stand-in test binary (shell scripts written here) play the four
// outcomes the script must tell apart. A test process killed before it reports (racecheck of an
// engine test holds ~90 GB of host memory, and a few side by side meet the out-of-memory killer) is
// KILLED and runs again alone once the others are done (with one worker it ran alone already and is
// not run again); a test that fails is TEST FAILED and is not run again; the exit status is 0 only
// when every shard ends clean; a sweep stopped by an outer time limit stops its shards (each runs in
// a process group of its own) instead of leaving them to run on into the next step.
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/subprocess.h"

namespace samebits {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::run_command;
using testing::temp_path;
using testing::write_script;
using testing::write_stand_in_compute_sanitizer;

// The stand-in tools in dir/bin (compute-sanitizer) and dir (gpu_tests). The test binary lists
// the suite Fake (Clean, KilledOnce, KilledAlways, Fails; those a filter of names or * selects;
// Slow only by name); KilledOnce is killed on its first run under each tool (a marker file per
// tool in dir), KilledAlways on every run, after a child of its own held ~200 MB (the peak host
// memory the sweep must report); Slow writes its process id to dir/slow.pid and sleeps a minute (as
// itself: the process that an outer limit must reach).
fs::path stand_ins() {
  const fs::path dir = temp_path("sanitizers");
  fs::create_directories(dir / "bin");
  write_stand_in_compute_sanitizer(dir / "bin" / "compute-sanitizer");
  write_script(dir / "gpu_tests", R"sh(#!/bin/bash
dir=$(dirname "$0")
for a in "$@"; do case $a in
  --gtest_list_tests) list=1;;
  --gtest_filter=*) case=${a#--gtest_filter=};;
esac; done
if [[ -n $list ]]; then  # the cases the filter's positive patterns name (or all, for *)
  pos=${case%%-*}; pos=${pos%:}
  echo "Fake."
  for n in Clean KilledOnce KilledAlways Fails; do
    [[ $pos == '*' || ":$pos:" == *":Fake.$n:"* ]] && echo "  $n"
  done
  [[ ":$pos:" == *":Fake.Slow:"* ]] && echo "  Slow"
  exit 0
fi
echo "$FAKE_TOOL $case" >> "$dir/runs"
case $case in
  Fake.KilledOnce) [[ -f $dir/killed_$FAKE_TOOL ]] || { touch "$dir/killed_$FAKE_TOOL"; exit 9; };;
  Fake.KilledAlways) python3 -c 'x = bytearray(200_000_000)'; exit 9;;
  Fake.Fails) echo "[  FAILED  ] 1 test, listed below:"; exit 1;;
  Fake.Slow) echo $$ > "$dir/slow.pid"; exec sleep 60;;
esac
echo "[  PASSED  ] 1 test."
)sh");
  return dir;
}

// Column `column` (0: the result, 1: seconds, 2: peak host memory) of a tool's row for a test in
// sanitizers.md ("" when there is none).
std::string row(const std::string& md, const std::string& tool, const std::string& test, int column = 0) {
  const std::string start = "| " + tool + " | " + test + " | ";
  size_t from = md.find(start);
  if (from == std::string::npos) return "";
  from += start.size();
  for (int c = 0; c < column; ++c) from = md.find(" | ", from) + 3;
  return md.substr(from, md.find(" |", from) - from);
}

// ci/gpu_sanitizers.sh over the stand-ins in dir (WORKERS at a time, 60 s a shard, FILTER), its
// summary table in `md`.
struct Sweep {
  testing::Outcome outcome;
  std::string md;
};
Sweep run_script(const fs::path& dir, int workers, const std::string& filter = "*") {
  const fs::path out = dir / "out";
  Sweep r;
  r.outcome = run_command("PATH='" + (dir / "bin").string() + "':\"$PATH\" bash ci/gpu_sanitizers.sh '" +
                          (dir / "gpu_tests").string() + "' '" + out.string() + "' " + std::to_string(workers) +
                          " 60 '" + filter + "'");
  r.md = read_text((out / "sanitizers.md").string());
  return r;
}

int count_runs(const std::string& runs, const std::string& line) {
  int n = 0;
  for (size_t at = runs.find(line + "\n"); at != std::string::npos; at = runs.find(line + "\n", at + 1)) ++n;
  return n;
}

TEST(GpuSanitizersScript, KilledShardsRunAgainAloneAndFailuresStayFailures) {
  const fs::path dir = stand_ins();
  const auto [o, md] = run_script(dir, 3);
  const std::string runs = read_text((dir / "runs").string());
  EXPECT_EQ(o.code, 1) << o.out << o.err;  // KilledAlways and Fails are not clean
  for (const char* tool : {"memcheck", "racecheck"}) {
    SCOPED_TRACE(tool);
    EXPECT_EQ(row(md, tool, "Fake.Clean"), "clean") << md;
    EXPECT_EQ(row(md, tool, "Fake.KilledOnce"),
              "clean (run alone; beside other shards: KILLED (exit 9 before the test reported))")
        << md;
    EXPECT_EQ(row(md, tool, "Fake.KilledAlways").rfind("KILLED (exit 9 before the test reported) (run alone", 0), 0u)
        << md;
    EXPECT_EQ(row(md, tool, "Fake.Fails"), "TEST FAILED (exit 1)") << md;
    const std::string t = tool;
    EXPECT_EQ(count_runs(runs, t + " Fake.Clean"), 1) << runs;
    EXPECT_EQ(count_runs(runs, t + " Fake.KilledOnce"), 2) << runs;
    EXPECT_EQ(count_runs(runs, t + " Fake.KilledAlways"), 2) << runs;
    EXPECT_EQ(count_runs(runs, t + " Fake.Fails"), 1) << runs;  // a failure is not run again
  }
  EXPECT_NE(md.find("memcheck: 2 of 4 test cases clean"), std::string::npos) << md;
  EXPECT_NE(read_text((dir / "out" / "sanitizers.log").string()).find("----- run again alone"), std::string::npos);
  fs::remove_all(dir);
}

TEST(GpuSanitizersScript, WithOneWorkerAKilledShardRanAloneAndIsNotRunAgain) {
  const fs::path dir = stand_ins();
  const auto [o, md] = run_script(dir, 1, "Fake.Clean:Fake.KilledOnce:Fake.KilledAlways");
  const std::string runs = read_text((dir / "runs").string());
  EXPECT_EQ(o.code, 1) << o.out << o.err;
  for (const char* tool : {"memcheck", "racecheck"}) {
    SCOPED_TRACE(tool);
    EXPECT_EQ(row(md, tool, "Fake.Clean"), "clean") << md;
    for (const char* test : {"Fake.KilledOnce", "Fake.KilledAlways"}) {
      EXPECT_EQ(row(md, tool, test), "KILLED (exit 9 before the test reported; it ran alone, not run again)") << md;
      EXPECT_EQ(count_runs(runs, std::string(tool) + " " + test), 1) << runs;
    }
    // Peak host memory, GNU time's: the test process's child that held 200 MB counts, a signal
    // ending the test notwithstanding; the bash stand-ins alone stay under 0.1 GiB.
    EXPECT_GE(std::stod("0" + row(md, tool, "Fake.KilledAlways", 2)), 0.18) << md;
    EXPECT_LT(std::stod("0" + row(md, tool, "Fake.Clean", 2)), 0.1) << md;
    EXPECT_NE(row(md, tool, "Fake.Clean", 2), "-") << md;
  }
  EXPECT_NE(md.find("\nhost memory: "), std::string::npos) << md;
  EXPECT_EQ(read_text((dir / "out" / "sanitizers.log").string()).find("----- run again alone"), std::string::npos);
  fs::remove_all(dir);
}

TEST(GpuSanitizersScript, ExitsZeroWhenEveryShardEndsClean) {
  const fs::path dir = stand_ins();
  const auto [o, md] = run_script(dir, 2, "Fake.Clean:Fake.KilledOnce");
  EXPECT_EQ(o.code, 0) << o.out << o.err << md;
  EXPECT_NE(md.find("racecheck: 2 of 2 test cases clean"), std::string::npos) << md;
  fs::remove_all(dir);
}

// An outer time limit (timeout, which signals its own process group: the script, xargs and the
// shards' shells, not the shards' own groups) stops the sweep, and the sweep stops its running
// shard: the slow test's process is gone at once, not a minute later.
TEST(GpuSanitizersScript, StoppedSweepStopsItsRunningShards) {
  const fs::path dir = stand_ins();
  const fs::path pid_file = dir / "slow.pid";
  const testing::Outcome o =
      run_command("PATH='" + (dir / "bin").string() + "':\"$PATH\" timeout 4 bash ci/gpu_sanitizers.sh '" +
                  (dir / "gpu_tests").string() + "' '" + (dir / "out").string() + "' 1 60 'Fake.Slow'");
  EXPECT_EQ(o.code, 124) << o.out << o.err;
  ASSERT_TRUE(fs::exists(pid_file)) << "the slow shard never started: " << o.out << o.err;
  const std::string written = read_text(pid_file.string());
  const std::string pid = written.substr(0, written.find('\n'));
  // (a few tries for the group's signal to land. Gone: no such process, or a zombie, state Z in
  // /proc/PID/stat after the command's name: a killed shard whose parents died first is reparented
  // to PID 1, and where PID 1 does not reap, as in some containers, kill -0 still finds it there:
  // 6 of 15 runs under load on a 2-core box, 2026-12-07)
  const testing::Outcome alive = run_command(
      "for i in 1 2 3 4 5 6 7 8 9 10; do s=$(sed 's/.*) //' /proc/" + pid + "/stat 2>/dev/null | cut -c1); "
      "case $s in ''|Z) exit 0;; esac; sleep 0.2; done; kill -KILL " + pid + "; exit 1");
  EXPECT_EQ(alive.code, 0) << "the slow shard's process " << pid << " outlived the sweep";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace samebits
