// bench/cuda/ncu_opcode_mix.py, executed instructions by opcode and class from ncu's text output:
// its classes and per-unit counts on logs written here in ncu's layout (the opcode list wrapped over
// lines, as ncu prints it), the choice of one launch in a log of several, its bad logs and
// arguments, and its JSON.
#include <algorithm>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/subprocess.h"

namespace samebits {
namespace {

using testing::have_program;
using testing::Outcome;
using testing::read_text;
using testing::run_command;
using testing::squeeze;
using testing::temp_path;
using testing::write_text;

// One profiled launch as ncu prints it (kernel line, metric table, the per-opcode list wrapped);
// `metric` is the sass__inst_executed_per_opcode row and what follows it.
std::string ncu_log(const std::string& kernel, const std::string& metric) {
  return "==PROF== Connected to process 795 (/tmp/bench)\n"
         "prefill/default/chunk=4096                                    331.0    415.4    0.420\n"
         "==PROF== Disconnected from process 795\n"
         "[795] bench@127.0.0.1\n"
         "  " + kernel + " (1024, 1, 1)x(384, 1, 1), Context 1, Stream 13, Device 0, CC 9.0\n"
         "    Section: Command line profiler metrics\n"
         "    ------------------------------ ----------- ------------------------------\n"
         "    Metric Name                    Metric Unit                   Metric Value\n"
         "    ------------------------------ ----------- ------------------------------\n"
         "    gpu__time_duration.sum                  us                         326.14\n" +
         metric + "    smsp__inst_executed.sum               inst                    1,000\n";
}

// 250 instructions: floating point FMUL 100 + FADD 50, tensor HGMMA 20, memory LDGSTS 30, the rest
// IMAD 40 + BRA 10.
const char* const kFirst =
    "    sass__inst_executed_per_opcode                         250 (FMUL: 100;\n"
    "                                                   FADD: 50; IMAD: 40; LDGSTS:\n"
    "                                                   30; HGMMA: 20; BRA: 10)\n";
// 2,000 instructions: FFMA 600 + MUFU 400 floating point, SHFL 1,000 the rest.
const char* const kSecond =
    "    sass__inst_executed_per_opcode              inst          2,000 (SHFL: 1,000;\n"
    "                                                     FFMA: 600; MUFU: 400)\n";

Outcome mix(const std::string& args) { return run_command("python3 bench/cuda/ncu_opcode_mix.py " + args); }

TEST(NcuOpcodeMix, SumsOpcodesIntoClassesPerUnit) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  const std::string dir = temp_path("ncu-mix");
  std::filesystem::create_directories(dir);
  write_text(dir + "/a.txt", ncu_log("void attention_prefill_kernel<128, 0, 0>(AttnParams)", kFirst));
  write_text(dir + "/b.txt", ncu_log("cudnn_sdpa_kernel0", kSecond));
  const Outcome r = mix("--per 10 --top 2 --json " + dir + "/mix.json a=" + dir + "/a.txt b=" + dir + "/b.txt");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string out = squeeze(r.out);
  EXPECT_NE(out.find("instructions, per 10 a b\n"), std::string::npos) << out;
  EXPECT_NE(out.find("floating point 15.0 100.0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("tensor 2.0 0.0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("memory and barriers 3.0 0.0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("integer, uniform, control 5.0 100.0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("total 25.0 200.0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("kernel us 326.1 326.1\n"), std::string::npos) << out;
  // The two largest opcodes of either log, largest first: SHFL (1,000 in b), FFMA (600).
  EXPECT_NE(out.find("\n SHFL 0.0 100.0\n FFMA 0.0 60.0\na: "), std::string::npos) << out;
  EXPECT_NE(out.find("a: void attention_prefill_kernel<128, 0, 0>(AttnParams) (1024, 1, 1)x(384, 1, 1)\n"),
            std::string::npos)
      << out;
  const std::string json = read_text(dir + "/mix.json");
  EXPECT_NE(json.find("\"total\": 2000"), std::string::npos) << json;
  EXPECT_NE(json.find("\"LDGSTS\": 30"), std::string::npos) << json;
  // Written whole through a temporary file, yet with the permissions of a file created as usual.
  EXPECT_EQ(std::filesystem::status(dir + "/mix.json").permissions(),
            std::filesystem::status(dir + "/a.txt").permissions());
  // A log of two launches: #N takes the N-th (its own counts, name and time).
  write_text(dir + "/two.txt", ncu_log("k1", kFirst) + ncu_log("k2", kSecond));
  const Outcome two = mix("--per 10 --top 0 second=" + dir + "/two.txt#2 first=" + dir + "/two.txt#1");
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_NE(squeeze(two.out).find("total 200.0 25.0\n"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("second: k2 (1024, 1, 1)x(384, 1, 1)\n"), std::string::npos) << two.out;
  // Without --per: millions.
  const Outcome m = mix("a=" + dir + "/a.txt");
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_NE(squeeze(m.out).find("total 0.00\n"), std::string::npos) << m.out;
  std::filesystem::remove_all(dir);
}

TEST(NcuOpcodeMix, BadLogsAndArgumentsAreOneLineErrors) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  const std::string dir = temp_path("ncu-mix-bad");
  std::filesystem::create_directories(dir);
  write_text(dir + "/none.txt", ncu_log("k", ""));
  write_text(dir + "/two.txt", ncu_log("k1", kFirst) + ncu_log("k2", kSecond));
  write_text(dir + "/nolist.txt",
             ncu_log("k", "    sass__inst_executed_per_opcode              inst          250\n"));
  // The list cut short (FADD's 50 missing): the counts no longer add up to the total.
  write_text(dir + "/short.txt", ncu_log("k", "    sass__inst_executed_per_opcode    250 (FMUL: 100; IMAD: 100)\n"));
  write_text(dir + "/good.txt", ncu_log("k", kFirst));
  const std::string good = "a=" + dir + "/good.txt";
  const struct {
    std::string args, err;
  } cases[] = {
      {"a=" + dir + "/none.txt",
       dir + "/none.txt: no sass__inst_executed_per_opcode (profile with --metrics sass__inst_executed_per_opcode "
             "--print-metric-instances details)"},
      {"a=" + dir + "/two.txt",
       dir + "/two.txt: 2 profiled kernels (1: k1, 2: k2); pick one as NAME=" + dir + "/two.txt#N"},
      {"a=" + dir + "/two.txt#3", dir + "/two.txt#3: the log has 2 profiled kernels"},
      {"a=" + dir + "/good.txt#0", dir + "/good.txt#0: the log has 1 profiled kernel"},
      {"a=" + dir + "/nolist.txt",
       dir + "/nolist.txt: sass__inst_executed_per_opcode has no per-opcode list (add --print-metric-instances "
             "details)"},
      {"a=" + dir + "/short.txt",
       dir + "/short.txt: the opcode counts add up to 200, not the total 250 (a truncated list?)"},
      {"a=" + dir + "/missing.txt", dir + "/missing.txt: cannot read (No such file or directory)"},
      {"good.txt", "argument NAME=LOG: 'good.txt' is not NAME=LOG (usage: see the head of "
                   "bench/cuda/ncu_opcode_mix.py)"},
      {good + " " + good, "'a' is named twice"},
      {"--per 0 " + good, "--per 0: must be above 0"},
      {"--top -1 " + good, "--top -1: must be 0 or more"},
      {"--json /proc/no-such-folder/mix.json " + good,
       "--json /proc/no-such-folder/mix.json: cannot write (No such file or directory)"},
  };
  for (const auto& c : cases) {
    const Outcome r = mix(c.args);
    EXPECT_EQ(r.code, 2) << c.args;
    EXPECT_EQ(r.err, "ncu_opcode_mix: " + c.err + "\n") << c.args;
    EXPECT_EQ(r.out, "") << c.args;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace samebits
