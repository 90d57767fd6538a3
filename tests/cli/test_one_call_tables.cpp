// bench/cuda/one_call_tables.py, issue 9's tables and target verdicts from one call's logs: the
// tables of two stand-in bench logs (each row's best time), the library reference and the matmul
// summary beside them, each target's verdict and its inverse (one row across the line flips it),
// and its bad inputs. Fractions and ratios below are worked out by hand.
#include <algorithm>
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
using testing::write_text;

// The bench's last table (bench/cuda/bench_attention.cpp): name, us, GB/s or TFLOP/s, frac; then
// the copy bandwidth that the process measured (its fractions' floor).
std::string bench_log(const std::string& rows, const std::string& bandwidth = "3.00") {
  return "Running bench_cuda_attention\nprefill/invariant/chunk=1024/iterations:5 99 us\n\n"
         "attention us GB/s|TF frac frac_bw frac_tc\n" +
         rows + "device copy bandwidth: " + bandwidth + " TB/s\n";
}

// Every row the targets read, all of them meeting their targets but where `low` names one row
// whose fraction is then below its line (and its time longer, as a slower run's would be).
std::string passing_rows(const std::string& low = "") {
  struct Row {
    const char* name;
    double us, frac, low_frac;
  };
  const Row rows[] = {
      {"prefill/invariant/chunk=1024", 20.0, 0.55, 0.45},
      {"prefill/default/chunk=1024", 19.0, 0.58, 0.58},
      {"prefill/invariant/chunk=4096", 300.0, 0.52, 0.52},
      {"prefill/default/chunk=4096", 290.0, 0.54, 0.54},
      {"prefill-cached/invariant/hd=64/chunk=1024/cached=2048", 50.0, 0.30, 0.30},
      {"prefill-cached/default/hd=64/chunk=1024/cached=2048", 48.0, 0.31, 0.31},
      {"decode-graph/invariant/batch=16/context=2048", 40.0, 0.80, 0.65},
      {"decode-graph/default/batch=16/context=2048", 41.0, 0.78, 0.78},
      {"decode-graph/invariant/batch=1/context=2048", 6.0, 0.45, 0.45},
      {"decode-graph/default/batch=1/context=2048", 6.5, 0.42, 0.42},
      {"mixed/invariant/chunk=512/decodes=16/context=2048", 80.0, 0.60, 0.60},
      {"mixed/default/chunk=512/decodes=16/context=2048", 79.0, 0.61, 0.61},
  };
  std::string text;
  for (const Row& r : rows) {
    const bool is_low = low == r.name;
    text += std::string(r.name) + " " + std::to_string(is_low ? r.us * 1.25 : r.us) + " 100.0 " +
            std::to_string(is_low ? r.low_frac : r.frac) + "\n";
  }
  return text;
}

const char kMatmul[] =
    "chain-floor/mma.sync/n=8 1130 us\n"
    "geometric-mean throughput ratio invariant/cuBLAS over 60 shapes: 0.930; worst 0.780\n"
    "previous automatic choice, same run: geometric mean 0.920; worst 0.700\n"
    "geometric-mean throughput ratio invariant/cuBLAS over 5 burst rows: 0.950; worst 0.936\n";

struct Call {
  std::string dir = temp_path("one-call-tables");
  Call() { fs::create_directories(dir); }
  ~Call() { fs::remove_all(dir); }
  std::string file(const std::string& name, const std::string& text) const {
    write_text(dir + "/" + name, text);
    return dir + "/" + name;
  }
  static Outcome run(const std::string& args) {
    return run_command("PYTHONDONTWRITEBYTECODE=1 python3 bench/cuda/one_call_tables.py " + args);
  }
};

TEST(OneCallTables, TablesOfTheBestRowsWithTheLibraryAndTheTargets) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  Call c;
  // Two runs: the second has the faster invariant chunk 4096 (270 us, 0.578) and a slower default
  // one (310 us), so the first's 290 us default row stays.
  const std::string a = c.file("a.log", bench_log(passing_rows()));
  const std::string b = c.file("b.log", bench_log("prefill/invariant/chunk=4096 270.0 500.0 0.578\n"
                                                  "prefill/default/chunk=4096 310.0 480.0 0.505\n"));
  const std::string sdpa = c.file("sdpa.json", R"({"device": "x", "rows": [
      {"row": "sdpa/cudnn/chunk=1024/cached=0", "frac": 0.281},
      {"row": "sdpa/flash/chunk=4096/cached=0", "frac": 0.284},
      {"row": "sdpa/cudnn/decode/batch=1/context=2048", "frac": 0.366},
      {"row": "sdpa/cudnn/chunk=4096/cached=0", "refused": "cuDNN refuses this mask"}]})");
  const std::string json = c.dir + "/tables.json";
  const Outcome r = Call::run("--sdpa " + sdpa + " --matmul " + c.file("m.log", kMatmul) + " --json " + json + " " +
                              a + " " + b);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string out = squeeze(r.out);
  // inv / def time: 20 / 19 = 1.05, 270 / 290 = 0.93; cuDNN at 1024 only (it refused 4096),
  // FlashAttention 2 at 4096.
  EXPECT_NE(out.find("| chunk 1024 / 4096 | 0.550 / 0.578 | 0.580 / 0.540 | 1.05 / 0.93 | 0.281 / - | - / 0.284 |"),
            std::string::npos)
      << r.out;
  // head_dim 64 over cached keys: 50 / 48 = 1.04.
  EXPECT_NE(out.find("| head_dim 64 over 2048 cached, chunk 1024 | 0.300 | 0.310 | 1.04 | - | - |"), std::string::npos)
      << r.out;
  EXPECT_NE(out.find("| 1 | 0.450 / 0.420 | 0.366 (2048) |"), std::string::npos) << r.out;
  EXPECT_NE(out.find("| 16 | 0.800 / 0.780 | - |"), std::string::npos) << r.out;
  EXPECT_NE(out.find("| 512 + 16 x 2048 | 0.600 / 0.610 |"), std::string::npos) << r.out;
  EXPECT_NE(out.find("Matmul: invariant / cuBLASLt geometric mean over the 60 cases 0.930, worst 0.780; the 5 burst "
                     "rows 0.950 (worst 0.936)."),
            std::string::npos)
      << r.out;
  // Every target met: prefill's values are head_dim 128's (0.540-0.580), the ratios both head dims'.
  EXPECT_NE(out.find("| decode >= 0.7 of the copy floor, batch >= 16, context >= 2048 | 0.780-0.800 | yes |"),
            std::string::npos)
      << r.out;
  EXPECT_NE(out.find("| decode >= 0.4, batch 1-4, context >= 2048 | 0.420-0.450 | yes |"), std::string::npos) << r.out;
  EXPECT_NE(out.find("at chunks >= 1024 (head_dim 128) | 0.540-0.580 | yes |"), std::string::npos) << r.out;
  EXPECT_NE(out.find("within 10% of default's (chunks >= 1024) | 0.931-1.053 | yes |"), std::string::npos) << r.out;
  EXPECT_NE(out.find("| mixed steps >= 0.5 of their larger floor | 0.600-0.610 | yes |"), std::string::npos) << r.out;
  EXPECT_NE(out.find("none below 0.75 | 0.930, worst 0.780 | yes |"), std::string::npos) << r.out;
  const std::string written = read_text(json);
  EXPECT_NE(squeeze(written).find("\"prefill/invariant/chunk=4096\": {\n \"us\": 270.0,"), std::string::npos)
      << written;
  EXPECT_NE(written.find("\"met\": \"yes\""), std::string::npos) << written;
  EXPECT_EQ(out.find("Invariant split sizes"), std::string::npos) << r.out;  // (no split rows in these logs)
}

// The split-size table: each size's invariant prefill time over the plan's default row of the same
// chunk, its decode calls beside the plan's and default mode's; graph replays, head_dim 64 and the
// split-count rows stay out of it. Without split rows there is no table (the test above).
TEST(OneCallTables, SplitSizesBesideThePlanAndDefaultMode) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  Call c;
  const std::string log = c.file(
      "split.log", bench_log(passing_rows() +
                             "prefill-split=512/invariant/chunk=1024 19.95 1 0.55\n"
                             "prefill-split=512/invariant/chunk=4096 319.0 1 0.47\n"
                             "prefill-split=1024/invariant/chunk=4096 304.5 1 0.50\n"
                             "prefill-cached-split=512/invariant/hd=64/chunk=1024/cached=2048 49.0 1 0.31\n"
                             "decode-split=512/invariant/batch=1/context=2048 12.0 1 0.160\n"
                             "decode-split=512/invariant/batch=16/context=2048 39.0 1 0.810\n"
                             "decode-split=512-graph/invariant/batch=1/context=2048 9.0 1 0.300\n"
                             "decode-split-count=8-graph/default/batch=1/context=2048 9.0 1 0.310\n"
                             "decode/invariant/batch=1/context=2048 8.0 1 0.240\n"
                             "decode/invariant/hd=64/batch=1/context=2048 5.0 1 0.190\n"
                             "decode/default/batch=1/context=2048 9.0 1 0.210\n"
                             "decode/default/batch=16/context=2048 40.0 1 0.780\n"));
  const std::string json = c.dir + "/s.json";
  const Outcome r = Call::run("--json " + json + " " + log);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string out = squeeze(r.out);
  EXPECT_NE(out.find("| invariant split | prefill inv / def time, chunk 1024 / 4096 | prefill inv / def time, head_dim "
                     "64 over 2048 cached, chunk 1024 | decode, batch 1 / 16 x 2048 |"),
            std::string::npos)
      << r.out;
  // The plan's: 20 / 19 = 1.05 and 300 / 290 = 1.03, over cached keys 50 / 48 = 1.04; 512: 19.95 /
  // 19 = 1.05, 319 / 290 = 1.10, 49 / 48 = 1.02; 1024: 304.5 / 290 = 1.05, no other prefill row.
  EXPECT_NE(out.find("| the plan's | 1.05 / 1.03 | 1.04 | 0.240 / - |"), std::string::npos) << r.out;
  EXPECT_NE(out.find("| 512 | 1.05 / 1.10 | 1.02 | 0.160 / 0.810 |"), std::string::npos) << r.out;
  EXPECT_NE(out.find("| 1024 | - / 1.05 | - | - / - |"), std::string::npos) << r.out;
  EXPECT_NE(out.find("| default mode | - | - | 0.210 / 0.780 |"), std::string::npos) << r.out;
  EXPECT_EQ(out.find("| 512-graph"), std::string::npos) << r.out;
  // The targets read the plan's rows only: the split rows change no verdict.
  EXPECT_NE(out.find("within 10% of default's (chunks >= 1024) | 1.034-1.053 | yes |"), std::string::npos) << r.out;
  const std::string written = squeeze(read_text(json));
  EXPECT_NE(written.find("\"512\": {\n \"prefill_time_ratio\": {\n \"chunk=1024\": 1.05"), std::string::npos)
      << written;
  EXPECT_NE(written.find("\"hd=64/chunk=1024/cached=2048\": 1.02"), std::string::npos) << written;
  EXPECT_NE(written.find("\"batch=16/context=2048\": 0.81"), std::string::npos) << written;
}

// The inverse: one row across its target's line turns that verdict to "no" and no other; a target
// without rows is "not measured".
TEST(OneCallTables, OneRowBelowItsLineFailsItsTarget) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  Call c;
  struct Case {
    const char* low_row;
    const char* target;
  };
  const Case cases[] = {
      {"decode-graph/invariant/batch=16/context=2048", "decode >= 0.7 of the copy floor"},
      {"prefill/invariant/chunk=1024", "prefill >= 0.5 of the dense bf16 rate"},
  };
  for (const Case& k : cases) {
    const Outcome r = Call::run(c.file("low.log", bench_log(passing_rows(k.low_row))));
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string out = squeeze(r.out);
    const size_t at = out.find(std::string("| ") + k.target);
    ASSERT_NE(at, std::string::npos) << r.out;
    EXPECT_EQ(out.substr(out.find('\n', at) - 6, 6), "| no |") << k.low_row << "\n" << r.out;
    // (only that one: the other verdicts here are yes, and matmul without its log is not measured)
    size_t noes = 0;
    for (size_t p = out.find("| no |"); p != std::string::npos; p = out.find("| no |", p + 1)) ++noes;
    // The low prefill row is also 1.25x slower, so its time ratio (25 / 19 = 1.32) fails too.
    EXPECT_EQ(noes, std::string(k.low_row).rfind("prefill", 0) == 0 ? 2u : 1u) << k.low_row << "\n" << r.out;
    EXPECT_NE(out.find("| matmul >= 0.9 geometric mean of cuBLASLt, none below 0.75 | - | not measured |"),
              std::string::npos)
        << r.out;
  }
  // A log with prefill rows only: decode and mixed are not measured, never met.
  const Outcome only = Call::run(c.file("prefill.log", bench_log("prefill/invariant/chunk=1024 20 1 0.6\n")));
  ASSERT_EQ(only.code, 0) << only.err;
  EXPECT_NE(squeeze(only.out).find("context >= 2048 | - | not measured |"), std::string::npos) << only.out;
  EXPECT_NE(squeeze(only.out).find("larger floor | - | not measured |"), std::string::npos) << only.out;
}

// A log whose process measured a copy bandwidth below 0.9x the best log's ran on a shared device:
// its rows (faster here, with fractions of a halved floor) are left out and the tables name it; its
// inverse, a log at 0.93x, is kept.
TEST(OneCallTables, LogOfASharedDeviceIsLeftOutAndNamed) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  Call c;
  const std::string a = c.file("a.log", bench_log(passing_rows()));
  const std::string shared = c.file("shared.log", bench_log("decode-graph/default/batch=16/context=2048 30.0 1 1.870\n"
                                                            "prefill/default/chunk=4096 250.0 1 0.626\n",
                                                            "1.46"));
  const std::string json = c.dir + "/tables.json";
  const Outcome r = Call::run("--json " + json + " " + a + " " + shared);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string out = squeeze(r.out);
  EXPECT_NE(out.find("| 16 | 0.800 / 0.780 | - |"), std::string::npos) << r.out;
  EXPECT_NE(out.find("| chunk 1024 / 4096 | 0.550 / 0.520 | 0.580 / 0.540 |"), std::string::npos) << r.out;
  EXPECT_NE(out.find("Logs left out:\n- " + shared + ": device copy bandwidth 1.46 TB/s, 0.49x " + a +
                     "'s 3.00 (the device was shared while it ran)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("one_call_tables: left out " + shared + ": device copy bandwidth 1.46 TB/s"), std::string::npos)
      << r.err;
  EXPECT_NE(read_text(json).find("\"left_out\": [\n  \"" + shared), std::string::npos) << read_text(json);

  const std::string near = c.file("near.log", bench_log("prefill/default/chunk=4096 250.0 1 0.626\n", "2.80"));
  const Outcome kept = Call::run(a + " " + near);
  ASSERT_EQ(kept.code, 0) << kept.err;
  EXPECT_NE(squeeze(kept.out).find("| chunk 1024 / 4096 | 0.550 / 0.520 | 0.580 / 0.626 |"), std::string::npos)
      << kept.out;
  EXPECT_EQ(kept.out.find("Logs left out"), std::string::npos) << kept.out;
}

// The checks of the same call: the card (flagged where it is not the H200 that the targets name),
// the gpu tests over one log or several (a failure named, a log cut before its summary line named),
// the sanitizers' totals; and their inverse, a clean H200 call that says so.
TEST(OneCallTables, ChecksOfTheSameCallAreSummarised) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  Call c;
  const std::string log = c.file("a.log", bench_log(passing_rows()));
  const std::string ok_tests = c.file("t1.log",
                                      "[ RUN      ] GpuA.One\n[       OK ] GpuA.One (5 ms)\n"
                                      "[ RUN      ] GpuA.Two\n[       OK ] GpuA.Two (7 ms)\n[  PASSED  ] 2 tests.\n");
  const std::string bad_tests = c.file(
      "t2.log",
      "[ RUN      ] GpuB.Ok\n[       OK ] GpuB.Ok (1 ms)\n[ RUN      ] GpuB.Param/0\n"
      "[  FAILED  ] GpuB.Param/0, where GetParam() = 4 (3 ms)\n[ RUN      ] GpuB.Hangs\n");
  const std::string san = c.file("san.md",
                                 "| tool | test | result | seconds |\n\n    memcheck: 14 of 14 test cases clean\n"
                                 "    racecheck: 13 of 14 test cases clean\n");
  const std::string h100 = c.file("h100.txt", "NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04\n");
  const std::string json = c.dir + "/t.json";
  const Outcome r = Call::run("--gpu " + h100 + " --gpu-tests " + ok_tests + " --gpu-tests " + bad_tests +
                              " --sanitizers " + san + " --json " + json + " " + log);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("Device: NVIDIA H100 80GB HBM3 (not an H200: the targets are the H200's)"), 0u) << r.out;
  EXPECT_NE(r.out.find("- gpu tests: 3 passed, 1 failed (GpuB.Param/0); cut short before gtest's summary line: " +
                       bad_tests),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("- memcheck: 14 of 14 test cases clean\n- racecheck: 13 of 14 test cases clean"),
            std::string::npos)
      << r.out;
  EXPECT_NE(read_text(json).find("\"gpu tests\": \"3 passed, 1 failed"), std::string::npos) << read_text(json);

  const std::string h200 = c.file("h200.txt", "NVIDIA H200, 143771 MiB, 580.159.04\n");
  const Outcome clean = Call::run("--gpu " + h200 + " --gpu-tests " + ok_tests + " " + log);
  ASSERT_EQ(clean.code, 0) << clean.err;
  EXPECT_EQ(clean.out.find("Device: NVIDIA H200\n"), 0u) << clean.out;
  EXPECT_NE(clean.out.find("- gpu tests: 2 passed, none failed\n"), std::string::npos) << clean.out;
  EXPECT_EQ(clean.out.find("memcheck"), std::string::npos) << clean.out;
}

TEST(OneCallTables, BadInputsAreNamedAndNothingIsWritten) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  Call c;
  const std::string good = c.file("good.log", bench_log(passing_rows()));
  const std::string json = c.dir + "/out.json";
  struct Case {
    std::string args, err;
  };
  const Case cases[] = {
      {c.dir + "/none.log", c.dir + "/none.log: cannot read the log (No such file or directory)"},
      {c.file("empty.log", "Running bench\nno table here\n"),
       c.dir + "/empty.log: no result rows (bench_cuda_attention's last table)"},
      {c.file("cut.log", "attention us GB/s|TF frac\nprefill/default/chunk=4096 290.0 1 0.54\n"),
       c.dir + "/cut.log: no 'device copy bandwidth: X TB/s' line (a bench_cuda_attention log cut short?)"},
      {"--sdpa " + c.file("bad.json", "{\"rows\": [") + " " + good, c.dir + "/bad.json: not JSON (line 1: "},
      {"--sdpa " + c.file("nofrac.json", R"({"rows": [{"row": "sdpa/cudnn/chunk=1024/cached=0"}]})") + " " + good,
       c.dir + "/nofrac.json: rows: each needs 'row' and a numeric 'frac' or a 'refused' reason (KeyError: 'frac')"},
      {"--matmul " + c.file("m.log", "nothing\n") + " " + good,
       c.dir + "/m.log: no 'geometric-mean throughput ratio invariant/cuBLAS over N shapes' line"},
      {"--gpu " + c.file("gpu.txt", "\n") + " " + good,
       c.dir + "/gpu.txt: empty (nvidia-smi --query-gpu=name,... --format=csv,noheader)"},
      {"--gpu-tests " + c.file("t.log", "Running main() from gtest\n") + " " + good,
       c.dir + "/t.log: no test results ('[       OK ]' or '[  FAILED  ]' lines)"},
      {"--sanitizers " + c.file("s.md", "| tool | test |\n") + " " + good,
       c.dir + "/s.md: no 'TOOL: N of M test cases clean' line (ci/gpu_sanitizers.sh's sanitizers.md)"},
  };
  for (const Case& k : cases) {
    const Outcome r = Call::run("--json " + json + " " + k.args);
    EXPECT_EQ(r.code, 1) << k.args << "\n" << r.out << r.err;
    EXPECT_EQ(r.err.find("one_call_tables: " + k.err), 0u) << k.args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(json)) << k.args;
  }
  const Outcome unwritable = Call::run("--json /proc/no-such-folder/t.json " + good);
  EXPECT_EQ(unwritable.code, 1);
  EXPECT_EQ(unwritable.err.find("one_call_tables: /proc/no-such-folder/t.json: cannot write"), 0u) << unwritable.err;
  EXPECT_EQ(Call::run("").code, 2);
}

}  // namespace
}  // namespace samebits
