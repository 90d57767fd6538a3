// bench/cuda/sdpa_reference.py, the library reference for the attention rows: its rows, FLOP and
// byte counts (the bench's, worked out by hand here) without a GPU, its bad inputs, and its step in
// ci/gpu_device_check.sh.
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

Outcome reference(const std::string& args) { return run_command("python3 bench/cuda/sdpa_reference.py " + args); }

TEST(SdpaReference, DryRunCountsTheBenchsWork) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  const Outcome r = reference("--dry-run --kinds prefill --chunks 256,1024 --cached 0,2048");
  ASSERT_EQ(r.code, 0) << r.err;
  // chunk 1024 fresh: 1024 x 1025 / 2 = 524,800 pairs x 4 x 128 x 32 = 8.598 GFLOP, 17.39 us at
  // 494.5 TFLOP/s (the same count as prefill_budget.py's).
  EXPECT_NE(r.out.find("sdpa/-/chunk=1024/cached=0: 8.598 GFLOP, 17.39 us at 0.5 of the peak\n"), std::string::npos)
      << r.out;
  // chunk 256 over 2048 cached keys at head_dim 64: 256 x 2048 + 256 x 257 / 2 = 557,184 pairs x 4
  // x 64 x 32 = 4.564 GFLOP, 9.23 us.
  EXPECT_NE(r.out.find("sdpa/-/hd=64/chunk=256/cached=2048: 4.564 GFLOP, 9.23 us at 0.5"), std::string::npos) << r.out;
  // head_dim 64 rows are over cached keys only, as the bench's: 2 x 2 rows at 128, 2 at 64.
  EXPECT_EQ(r.out.find("hd=64/chunk=256/cached=0"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 6) << r.out;
  // Decode rows: batch x context x 8 kv heads x head_dim x 2 bytes, K and V (the bench's
  // batch x context x 4096 bytes at head_dim 128).
  const Outcome d = reference("--dry-run --kinds decode --decode-batches 1,4 --decode-contexts 2048,8192");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.out.find("sdpa/-/decode/batch=1/context=2048: 8.389 MB of K and V\n"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("sdpa/-/decode/hd=64/batch=4/context=8192: 67.109 MB of K and V\n"), std::string::npos)
      << d.out;
  EXPECT_EQ(std::count(d.out.begin(), d.out.end(), '\n'), 8) << d.out;  // 2 x 2 x both head dims
}

TEST(SdpaReference, BadInputsAreOneLineErrors) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  const struct {
    const char* args;
    const char* err;
  } cases[] = {
      {"--chunks 1,x", "--chunks 1,x: 'x' is not an integer"},
      {"--cached -1", "--cached -1: -1 is below 0"},
      {"--head-dims 96", "--head-dims 96: 96 is not 64 or 128 (the bench's head dims)"},
      {"--backends flash,triton", "--backends flash,triton: 'triton' is not one of flash, cudnn, efficient"},
      {"--iters 0", "--iters 0: must be at least 1"},
      {"--kinds prefill,mixed", "--kinds prefill,mixed: 'mixed' is not prefill or decode"},
      {"--decode-batches 0", "--decode-batches 0: 0 is below 1"},
      {"--head-dims 64 --cached 0 --kinds prefill --dry-run",
       "no row: head_dim 64 prefill rows are over cached keys only (the bench's), give --cached above 0"},
  };
  for (const auto& c : cases) {
    const Outcome r = reference(c.args);
    EXPECT_EQ(r.code, 2) << c.args;
    EXPECT_EQ(r.err, std::string("sdpa_reference: ") + c.err + "\n") << c.args;
    EXPECT_EQ(r.out, "") << c.args;
  }
}

// The measuring path through a stand-in for torch (tests/cli/fake_torch: every call 50 us, cuDNN
// refusing masks, the memory-efficient backend refusing grouped-query inputs): the rows' rates and
// fractions, a refusal's first line, an expanded row, the JSON, and an unwritable --json.
TEST(SdpaReference, MeasuresThroughTorchsInterface) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  const std::string dir = temp_path("sdpa-fake");
  std::filesystem::create_directories(dir);
  const std::string run =
      "PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=tests/cli/fake_torch python3 bench/cuda/sdpa_reference.py "
      "--chunks 256 --cached 2048 --decode-batches 1 --decode-contexts 2048 --head-dims 128 ";
  const Outcome r = run_command(run + "--json " + dir + "/rows.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string out = squeeze(r.out);
  // 2 x 2 GiB copied in 0.5 ms; 557,184 pairs x 4 x 128 x 32 = 9.129 GFLOP in 50 us (0.5 ms over a
  // graph of 10 calls): 182.58 TFLOP/s, 0.185 of 989; 8,388,608 bytes in 50 us over 8.59 TB/s: 0.020.
  EXPECT_NE(out.find("device copy bandwidth: 8.59 TB/s"), std::string::npos) << out;
  EXPECT_NE(out.find("sdpa/flash/chunk=256/cached=2048 50.0 50.0 182.58 0.185 gqa\n"), std::string::npos) << out;
  EXPECT_NE(out.find("sdpa/cudnn/chunk=256/cached=2048 refused: cuDNN refuses this mask\n"), std::string::npos) << out;
  EXPECT_NE(out.find("sdpa/efficient/chunk=256/cached=2048 50.0 50.0 182.58 0.185 expanded\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("sdpa/flash/decode/batch=1/context=2048 50.0 50.0 0.17 0.020 gqa\n"), std::string::npos) << out;
  const std::string json = read_text(dir + "/rows.json");
  EXPECT_NE(json.find("\"copy_bandwidth\": 8589934592000.0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"refused\": \"cuDNN refuses this mask\""), std::string::npos) << json;
  EXPECT_EQ(std::count(json.begin(), json.end(), '{'), 7) << json;  // the file's object and 6 rows
  const Outcome bad = run_command(run + "--kinds decode --json /proc/no-such-folder/rows.json");
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.err, "sdpa_reference: --json /proc/no-such-folder/rows.json: No such file or directory\n");
  std::filesystem::remove_all(dir);
}

TEST(SdpaReference, WithoutTorchOrAGpuItSaysWhichAndExitsOne) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  const Outcome r = reference("--chunks 64 --cached 0 --head-dims 128 --backends flash --iters 1");
  if (r.code == 0) GTEST_SKIP() << "torch and a CUDA device here: the rows ran";
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(r.err == "sdpa_reference: torch is not installed here (--dry-run prints the rows without it)\n" ||
              r.err == "sdpa_reference: no CUDA device\n")
      << r.err;
  EXPECT_EQ(r.out, "");
}

// ci/gpu_device_check.sh's sdpa-reference step runs the script from the repository (whatever the
// working folder) and keeps its log and summary line; here without torch, so the step's line says
// rc=1 and its log the one-line reason.
TEST(SdpaReference, DeviceCheckRunsItAsAStep) {
  if (!have_program("python3") || !have_program("tar")) GTEST_SKIP() << "no python3 or tar here";
  if (run_command("python3 -c 'import torch'").code == 0) GTEST_SKIP() << "torch here: the step would run the rows";
  const std::string dir = temp_path("sdpa-step");
  std::filesystem::create_directories(dir + "/bin");
  const Outcome r = run_command("cd " + dir + " && '" + std::string(SAMEBITS_SOURCE_DIR) +
                                "/ci/gpu_device_check.sh' bin out sdpa-reference");
  EXPECT_EQ(r.code, 0) << r.err;  // a failing step does not fail the script
  EXPECT_NE(r.out.find("sdpa_reference         rc=1 "), std::string::npos) << r.out;
  ASSERT_EQ(run_command("mkdir " + dir + "/x && tar -xzf " + dir + "/out/results.tgz -C " + dir + "/x").code, 0);
  EXPECT_EQ(read_text(dir + "/x/sdpa_reference.log"),
            "sdpa_reference: torch is not installed here (--dry-run prints the rows without it)\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace samebits
