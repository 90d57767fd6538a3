// bench/cuda/attention_side_by_side.py, the runner that times several builds' bench_cuda_attention
// in turn and compares them row by row and per group: run against stand-in benches (shell scripts
// that print the bench's final table, their times set per build and round, and record how they
// were started), and its summary of given logs. The ratios below are worked out by hand.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/subprocess.h"

namespace samebits {
namespace {

namespace fs = std::filesystem;
using testing::have_program;
using testing::Outcome;
using testing::read_text;
using testing::run_command;
using testing::squeeze;
using testing::temp_path;
using testing::write_script;
using testing::write_text;

const char kTool[] = "python3 bench/cuda/attention_side_by_side.py";

// The bench's last table (bench/cuda/bench_attention.cpp) with the given times of three rows, and
// the copy bandwidth its process measured.
std::string table(double chunk1024, double chunk4096, double hd64, double bandwidth = 4.27) {
  char text[1024];
  std::snprintf(text, sizeof text,
                "\n%-56s %10s %8s %8s %8s %8s\n"
                "prefill/invariant/chunk=1024 %10.1f 250.0 0.250\n"
                "prefill/invariant/chunk=4096 %10.1f 390.0 0.390\n"
                "prefill-cached/default/hd=64/chunk=256/cached=2048 %10.1f 120.0 0.120\n"
                "device copy bandwidth: %.2f TB/s\n",
                "attention", "us", "GB/s|TF", "frac", "frac_bw", "frac_tc", chunk1024, chunk4096, hd64, bandwidth);
  return text;
}

// A folder of stand-in builds; each bench appends "NAME ARGS LD_LIBRARY_PATH" to `order`, counts
// its runs k in a file of its own, sources roundK.sh where round_script wrote one (to fail or
// hang), then prints round k's table.
struct Builds {
  std::string dir = temp_path("side-by-side");
  std::string order = dir + "/order";
  Builds() { fs::create_directories(dir); }
  ~Builds() { fs::remove_all(dir); }
  std::string add(const std::string& name, const std::string& round1, const std::string& round2) {
    const std::string bin = dir + "/" + name;
    fs::create_directories(bin);
    write_text(bin + "/round1.txt", round1);
    write_text(bin + "/round2.txt", round2);
    write_script(bin + "/bench_cuda_attention",
                 "#!/bin/bash\nd=$(dirname \"$0\")\necho \"" + name + " $* $LD_LIBRARY_PATH\" >> " + order +
                     "\nk=$(( $(cat \"$d/count\" 2>/dev/null || echo 0) + 1 ))\necho $k > \"$d/count\"\n"
                     "[[ -f \"$d/round$k.sh\" ]] && . \"$d/round$k.sh\"\necho 'Running bench'\ncat \"$d/round$k.txt\"\n");
    return name + "=" + bin;
  }
  void round_script(const std::string& name, int k, const std::string& script) {
    write_text(dir + "/" + name + "/round" + std::to_string(k) + ".sh", script);
  }
  Outcome run(const std::string& args) const { return run_command(std::string(kTool) + " run " + args); }
};

TEST(AttentionSideBySide, RunsTheBuildsInTurnAndComparesEachRowsBestTime) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  Builds b;
  // a's best: 38 (round 2), 400 (round 1), 50; b's: 30 (round 1), 430 (round 2), 60.
  const std::string a = b.add("a", table(40, 400, 50), table(38, 420, 50));
  const std::string bb = b.add("b", table(30, 440, 60), table(36, 430, 61));
  const std::string out = b.dir + "/out";
  const Outcome r = b.run("--filter '^prefill' " + out + " " + a + " " + bb);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string squeezed = squeeze(r.out);
  // In turn, a first in each round, the filter passed on, each build's lib/ first in the path.
  const std::string lib_a = b.dir + "/a/lib", lib_b = b.dir + "/b/lib";
  EXPECT_EQ(read_text(b.order), "a --benchmark_filter=^prefill " + lib_a + "\nb --benchmark_filter=^prefill " + lib_b +
                                    "\na --benchmark_filter=^prefill " + lib_a +
                                    "\nb --benchmark_filter=^prefill " + lib_b + "\n");
  // prefill/invariant: sqrt(30 / 38 x 430 / 400) = 0.921; the head_dim 64 row alone: 60 / 50.
  EXPECT_NE(squeezed.find("prefill/invariant 0.921 (2)"), std::string::npos) << r.out;
  EXPECT_NE(squeezed.find("prefill-cached/default/hd=64 1.200 (1)"), std::string::npos) << r.out;
  EXPECT_NE(squeezed.find("38.0 0.250 30.0 0.250 (0.789)"), std::string::npos) << r.out;
  EXPECT_NE(squeezed.find("400.0 0.390 430.0 0.390 (1.075)"), std::string::npos) << r.out;
  EXPECT_EQ(read_text(out + "/summary.txt"), r.out);
  const std::string json = read_text(out + "/summary.json");
  EXPECT_NE(json.find("\"baseline\": \"a\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"time_ratio\": 0.92124"), std::string::npos) << json;
  EXPECT_NE(read_text(out + "/b.r2.log").find("430.0"), std::string::npos);
}

TEST(AttentionSideBySide, AFailedOrOverlongRunIsNamedAndTheOtherRunsStillCount) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  Builds b;
  const std::string a = b.add("a", table(40, 400, 50), table(40, 400, 50));
  const std::string bb = b.add("b", table(20, 200, 25), table(20, 800, 100));
  b.round_script("b", 1, "exit 3\n");                   // no table
  const std::string c = b.add("c", table(40, 400, 50), table(40, 400, 50));
  b.round_script("c", 1, "sleep 20\n");                 // past --limit
  b.round_script("c", 2, "sleep 20\n");
  const Outcome r = b.run("--limit 1 " + b.dir + "/out " + a + " " + bb + " " + c);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const std::string squeezed = squeeze(r.out);
  EXPECT_NE(squeezed.find("b.r1.log: rc 3, 0 rows, b.r2.log: rc 0, 3 rows"), std::string::npos) << r.out;
  EXPECT_NE(squeezed.find("c.r1.log: rc 124 (time limit), 0 rows"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("attention_side_by_side: build c: no result rows in its logs"), std::string::npos) << r.err;
  // b's rows from its second run: 20 / 40 and 800 / 400 give 1.000; c has none ("-").
  EXPECT_NE(squeezed.find("prefill/invariant 1.000 (2) -"), std::string::npos)
      << r.out;
}

TEST(AttentionSideBySide, SummaryOfGivenLogsTakesANamesRunsTogether) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  const std::string dir = temp_path("side-by-side-logs");
  fs::create_directories(dir);
  write_text(dir + "/old1.log", table(40, 400, 50));
  write_text(dir + "/old2.log", table(30, 500, 50));
  // new lacks the head_dim 64 row: '-' there, and its group has no ratio.
  std::string partial = table(45, 450, 50);
  partial.erase(partial.find("prefill-cached"), partial.find("device") - partial.find("prefill-cached"));
  write_text(dir + "/new.log", partial);
  const Outcome r = run_command(std::string(kTool) + " summary --json " + dir + "/s.json old=" + dir +
                                "/old1.log new=" + dir + "/new.log old=" + dir + "/old2.log");
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string squeezed = squeeze(r.out);
  EXPECT_NE(squeezed.find("old: old1.log: log given, 3 rows, old2.log: log given, 3 rows"), std::string::npos) << r.out;
  // sqrt(45 / 30 x 450 / 400) = 1.299
  EXPECT_NE(squeezed.find("prefill/invariant 1.299 (2)"), std::string::npos) << r.out;
  EXPECT_NE(squeezed.find("prefill-cached/default/hd=64 -"), std::string::npos) << r.out;
  EXPECT_NE(squeezed.find("50.0 0.120 -"), std::string::npos) << r.out;
  EXPECT_NE(read_text(dir + "/s.json").find("\"time_ratio\": 1.299"), std::string::npos);
  fs::remove_all(dir);
}

// A run measured while the device was shared (its copy bandwidth below 0.9x the call's best) gives
// rows of no worth: left out, named in the summary and on stderr; its inverse, a run at 0.93x, counts.
TEST(AttentionSideBySide, ARunOfASharedDeviceIsLeftOutAndNamed) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  const std::string dir = temp_path("side-by-side-shared");
  fs::create_directories(dir);
  write_text(dir + "/old.log", table(40, 400, 50, 4.20));
  write_text(dir + "/new1.log", table(44, 440, 55, 4.27));
  write_text(dir + "/new2.log", table(20, 200, 25, 2.10));  // faster rows, from a floor measured too low
  const Outcome r = run_command(std::string(kTool) + " summary --json " + dir + "/s.json old=" + dir +
                                "/old.log new=" + dir + "/new1.log new=" + dir + "/new2.log");
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string squeezed = squeeze(r.out);
  EXPECT_NE(squeezed.find("new: new1.log: log given, 3 rows, new2.log: log given, 3 rows left out: device copy "
                          "bandwidth 2.10 TB/s, 0.49x " + dir + "/new1.log's 4.27 (the device was shared while it ran)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(squeezed.find("prefill/invariant 1.100 (2)"), std::string::npos) << r.out;  // new1's rows only
  EXPECT_NE(r.err.find("attention_side_by_side: left out " + dir + "/new2.log: device copy bandwidth 2.10 TB/s"),
            std::string::npos)
      << r.err;
  EXPECT_NE(read_text(dir + "/s.json").find("\"left_out\": \"device copy bandwidth 2.10 TB/s"), std::string::npos);

  write_text(dir + "/new2.log", table(20, 200, 25, 3.97));  // 0.93x: the same device's spread
  const Outcome kept = run_command(std::string(kTool) + " summary old=" + dir + "/old.log new=" + dir +
                                   "/new1.log new=" + dir + "/new2.log");
  EXPECT_EQ(kept.code, 0) << kept.err;
  EXPECT_NE(squeeze(kept.out).find("prefill/invariant 0.500 (2)"), std::string::npos) << kept.out;
  EXPECT_EQ(kept.out.find("left out"), std::string::npos) << kept.out;
  EXPECT_EQ(kept.err.find("left out"), std::string::npos) << kept.err;
  fs::remove_all(dir);
}

// ci/gpu_device_check.sh's bench-attention step with ATTENTION_BASELINE compares the two builds
// through the tool's summary (its results.tgz holds attention_compare.txt and .json).
TEST(AttentionSideBySide, DeviceCheckComparesWithTheBaselineBuild) {
  if (!have_program("python3") || !have_program("tar")) GTEST_SKIP() << "no python3 or tar here";
  Builds b;
  b.add("old", table(40, 400, 50), table(40, 400, 50));
  b.add("new", table(20, 800, 50), table(20, 800, 50));
  const std::string out = b.dir + "/out";
  const Outcome r = run_command("ATTENTION_BASELINE=" + b.dir + "/old ci/gpu_device_check.sh " + b.dir + "/new " +
                                out + " bench-attention");
  EXPECT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(run_command("mkdir " + out + "/x && tar -xzf " + out + "/results.tgz -C " + out + "/x").code, 0);
  const std::string compare = squeeze(read_text(out + "/x/attention_compare.txt"));
  // 20 / 40 and 800 / 400: 1.000 over the group, the rows 0.500 and 2.000.
  EXPECT_NE(compare.find("time / baseline's time"), std::string::npos) << compare;
  EXPECT_NE(compare.find("prefill/invariant 1.000 (2)"), std::string::npos) << compare;
  EXPECT_NE(compare.find("40.0 0.250 20.0 0.250 (0.500)"), std::string::npos) << compare;
  EXPECT_NE(read_text(out + "/x/attention_compare.json").find("\"baseline\": \"baseline\""), std::string::npos);
  // Issue 9's tables of this build's rows (bench/cuda/one_call_tables.py): chunk 1024 / 4096 at
  // 0.250 / 0.390 in invariant mode, no default rows, so the prefill target is not met.
  const std::string tables = squeeze(read_text(out + "/x/tables.md"));
  EXPECT_NE(tables.find("| chunk 1024 / 4096 | 0.250 / 0.390 | - / - |"), std::string::npos) << tables;
  EXPECT_NE(tables.find("(head_dim 128) | 0.250-0.390 | no |"), std::string::npos) << tables;
  // This build's bench, then the baseline's with its own libraries first.
  const std::string order = read_text(b.order);
  EXPECT_EQ(order.rfind("new --benchmark_out=", 0), 0u) << order;
  EXPECT_NE(order.find("\nold  " + b.dir + "/old/lib:"), std::string::npos) << order;
}

TEST(AttentionSideBySide, BadArgumentsAreOneLineErrorsAndRunNothing) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  Builds b;
  const std::string a = b.add("a", table(40, 400, 50), table(40, 400, 50));
  const std::string out = b.dir + "/out";
  const struct {
    std::string args, says;
  } cases[] = {
      {out + " " + a + " x=" + b.dir + "/none", b.dir + "/none/bench_cuda_attention: no executable bench_cuda_attention (build x)"},
      {out + " " + a + " " + a, "a=" + b.dir + "/a: the name a is given twice"},
      {out + " =" + b.dir + "/a", "=" + b.dir + "/a: expected NAME=BIN_DIR"},
      {out + " 'a b=" + b.dir + "/a'", "a b=" + b.dir + "/a: expected NAME=BIN_DIR"},
      {"--rounds 0 " + out + " " + a, "--rounds 0: at least 1"},
      {"--limit 0 " + out + " " + a, "--limit 0.0: a number of seconds above 0"},
      {"--filter '(' " + out + " " + a, "--filter (: not a regular expression"},
  };
  for (const auto& c : cases) {
    const Outcome r = b.run(c.args);
    EXPECT_EQ(r.code, 2) << c.args;
    EXPECT_EQ(r.err.find("attention_side_by_side: " + c.says), 0u) << c.args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
  EXPECT_FALSE(fs::exists(b.order));  // no bench started
  const Outcome unwritable = b.run("/proc/no-such-folder " + a);
  EXPECT_EQ(unwritable.code, 2);
  EXPECT_EQ(unwritable.err.find("attention_side_by_side: /proc/no-such-folder: cannot make the output folder"), 0u)
      << unwritable.err;
  const Outcome missing = run_command(std::string(kTool) + " summary a=" + b.dir + "/none.log");
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err, "attention_side_by_side: " + b.dir + "/none.log: cannot read the log (No such file or directory)\n");
}

}  // namespace
}  // namespace samebits
