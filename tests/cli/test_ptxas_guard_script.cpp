// cmake/ptxas_guard.sh, the launcher that fails a wgmma kernel's compile where ptxas serialises its
// wgmma: with stand-in compilers (shell scripts written here) for its three outcomes, and with the
// real nvcc on tests/cli/wgmma_serialised.cu (where the build has CUDA): the file with a stray
// write to an accumulator is refused, the same file without it passes.
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/subprocess.h"

namespace samebits {
namespace {

namespace fs = std::filesystem;
using testing::run_command;
using testing::temp_path;
using testing::write_script;

const char kGuard[] = "cmake/ptxas_guard.sh";
const char kSerialised[] =
    "ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non "
    "wgmma instructions defining accumulator registers of a wgmma between start and end of the pipeline stage in "
    "the function 'k'";

// A stand-in compiler that prints `text` on stderr and exits with `code`.
std::string stand_in(const std::string& name, const std::string& text, int code) {
  const std::string path = temp_path(name);
  write_script(path, "#!/bin/bash\necho \"" + text + "\" >&2\nexit " + std::to_string(code) + "\n");
  return path;
}

TEST(PtxasGuard, PassesACleanCompileAndItsOutputThrough) {
  const auto o = run_command(std::string(kGuard) + " " + stand_in("clean", "ptxas info : 0 bytes spill stores", 0));
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.err.find("0 bytes spill stores"), std::string::npos) << o.err;
}

TEST(PtxasGuard, KeepsTheCompilersOwnFailure) {
  const auto o = run_command(std::string(kGuard) + " " + stand_in("fails", "error: expected a ';'", 3));
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("expected a ';'"), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find("ptxas_guard"), std::string::npos) << o.err;
}

TEST(PtxasGuard, RefusesACompileWhoseWgmmaPtxasSerialised) {
  const auto o = run_command(std::string(kGuard) + " " + stand_in("serialised", kSerialised, 0));
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("C7515"), std::string::npos) << o.err;  // ptxas's line, passed on
  EXPECT_NE(o.err.find("ptxas_guard: ptxas serialised wgmma"), std::string::npos) << o.err;
}

// The real compiler's wording: if a newer ptxas says it otherwise, this fails before a serialised
// kernel slips through the build.
TEST(PtxasGuard, RefusesWhatTheRealCompilerSerialisesAndPassesTheRest) {
#ifndef SAMEBITS_NVCC
  GTEST_SKIP() << "this build has no CUDA compiler";
#else
  const std::string cubin = temp_path("wgmma.cubin");
  const std::string compile = std::string(kGuard) + " '" + SAMEBITS_NVCC +
                              "' -gencode=arch=compute_90a,code=sm_90a -std=c++17 -I. -cubin "
                              "tests/cli/wgmma_serialised.cu -o '" + cubin + "'";
  const auto clean = run_command(compile);
  EXPECT_EQ(clean.code, 0) << clean.err;
  EXPECT_EQ(clean.err.find("serialized"), std::string::npos) << clean.err;
  const auto stray = run_command(compile + " -DSTRAY_WRITE");
  EXPECT_EQ(stray.code, 1) << stray.err;
  EXPECT_NE(stray.err.find("wgmma.mma_async instructions are serialized"), std::string::npos) << stray.err;
  fs::remove(cubin);
#endif
}

}  // namespace
}  // namespace samebits
