// ci/fuzz.sh (CI's bounded fuzzing and the nightly's 10M executions) on already built targets
// (FUZZ_BIN): stand-in targets (shell scripts written here) print libFuzzer's final statistics, and
// one of them can leave a crash input where -artifact_prefix says, as libFuzzer does. The summary
// must count each target's executions and findings, a finding must fail the run, and OUT and
// FUZZ_BIN are paths from the caller's folder (the script itself works from the repository's).
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/subprocess.h"

namespace samebits {
namespace {

namespace fs = std::filesystem;
using testing::Outcome;
using testing::read_text;
using testing::run_command;
using testing::temp_path;
using testing::write_script;

// dir/targets/NAME for two targets: each runs 100 executions; fuzz_golden, where dir/crash exists,
// leaves a crash input and exits 1.
struct Targets {
  fs::path dir = temp_path("fuzz");
  Targets() {
    fs::create_directories(dir / "targets");
    for (const char* target : {"fuzz_golden", "fuzz_scenario"})
      write_script(dir / "targets" / target, std::string(R"sh(#!/bin/bash
for a in "$@"; do case $a in -artifact_prefix=*) prefix=${a#-artifact_prefix=};; esac; done
echo "stat::number_of_executed_units: 100"
if [[ $(basename "$0") == fuzz_golden && -f ')sh") + dir.string() + R"sh(/crash' ]]; then
  echo x > "${prefix}crash-0123"; exit 1
fi
exit 0
)sh");
  }
  ~Targets() { fs::remove_all(dir); }
  // ci/fuzz.sh ci 1 run from dir with OUT=out and FUZZ_BIN=targets, both relative to dir.
  Outcome run() const {
    return run_command("ROOT=$PWD && cd '" + dir.string() +
                       "' && OUT=out FUZZ_BIN=targets FUZZ_TARGETS='fuzz_golden fuzz_scenario' FUZZ_WORKERS=2 "
                       "bash \"$ROOT/ci/fuzz.sh\" ci 1");
  }
};

TEST(FuzzScript, SumsUpEachTargetIntoTheCallersOut) {
  Targets t;
  const Outcome r = t.run();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const std::string summary = read_text(t.dir / "out" / "summary.md");
  EXPECT_NE(summary.find("| fuzz_golden | 100 | 1 | 0 | 0 | 0 | 0 | ok |"), std::string::npos) << summary;
  EXPECT_NE(summary.find("| fuzz_scenario | 100 | 1 | 0 | 0 | 0 | 0 | ok |"), std::string::npos) << summary;
  EXPECT_FALSE(fs::is_empty(t.dir / "out" / "corpus" / "fuzz_golden"));  // the seeds, copied
}

TEST(FuzzScript, ACrashFailsTheRun) {
  Targets t;
  testing::write_text(t.dir / "crash", "");
  const Outcome r = t.run();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const std::string summary = read_text(t.dir / "out" / "summary.md");
  EXPECT_NE(summary.find("| fuzz_golden | 100 | 1 | 1 | 0 | 0 | 0 | FAILED (1 job(s) exited non-zero) |"),
            std::string::npos)
      << summary;
  EXPECT_TRUE(fs::exists(t.dir / "out" / "crashes" / "fuzz_golden" / "job0-crash-0123"));
}

TEST(FuzzScript, AMissingTargetFolderIsAOneLineError) {
  Targets t;
  fs::remove_all(t.dir / "targets");
  const Outcome r = t.run();
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, "fuzz: FUZZ_BIN " + (t.dir / "targets").string() + " is not a folder\n");
}

}  // namespace
}  // namespace samebits
