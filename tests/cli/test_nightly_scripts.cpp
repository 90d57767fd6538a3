// ci/nightly_cpu.sh and ci/nightly_gpu.sh (the nightly gates) without building anything: each runs
// from a copy of the repository's ci/ folder in a tree of stand-ins (cmake, ctest, the samebits
// command, the fuzz and sanitizer scripts: shell scripts written here that record their arguments
// and write the files their options name, as the real ones do). The gates must write every result
// into OUT, a path from the caller's folder, absolute or relative, whatever folder a step runs in
// (ctest resolves a relative --output-junit against its build folder); the CPU gate's summary must
// carry the soak's progress lines, which ctest -V prints behind the test's number; a failing step
// must fail the gate and say so.
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

// Writes each file that a --json / --markdown / --junit / --output-junit option names (a relative
// --output-junit from the build folder, as ctest does), creating its folder as ctest does.
constexpr const char* kWriteNamedFiles = R"sh(
build=.; prev=
for a in "$@"; do
  case $prev in
    --test-dir) build=$a;;
    --preset) build=build/$a;;
    --output-junit) [[ $a == /* ]] || a=$build/$a; mkdir -p "$(dirname "$a")"; echo '<testsuites/>' > "$a";;
    --json) echo '{}' > "$a";;
    --markdown) echo "# samebits: $scenario passed" > "$a";;
    --junit) echo '<testsuite/>' > "$a";;
  esac
  prev=$a
done
)sh";

// dir/tree: the repository's two nightly scripts and step.sh, with stand-in fuzz and sanitizer
// scripts and samebits commands under build/; dir/bin: cmake and ctest. Every stand-in appends
// "NAME ARGS" to dir/runs. ctest exits with the contents of dir/ctest_rc where that file exists,
// and prints two soak lines behind the test's number for the slow label; fuzz.sh exits with the
// contents of dir/fuzz_rc where that file exists.
struct Gate {
  fs::path dir = temp_path("nightly");
  fs::path tree = dir / "tree";
  explicit Gate(const std::string& cuda_info = "cuda: available (NVIDIA H200)") {
    fs::create_directories(tree / "ci");
    fs::create_directories(dir / "bin");
    for (const char* script : {"nightly_cpu.sh", "nightly_gpu.sh", "step.sh"})
      fs::copy_file(fs::path(SAMEBITS_SOURCE_DIR) / "ci" / script, tree / "ci" / script);
    const std::string log = "#!/bin/bash\necho \"$(basename \"$0\") $*\" >> '" + dir.string() + "/runs'\n";
    // The stand-in's last lines: exit with the status in dir/NAME where that file exists, else 0.
    const auto exit_from = [&](const std::string& name) {
      const std::string file = "'" + (dir / name).string() + "'";
      return "[[ -f " + file + " ]] && exit $(cat " + file + ")\nexit 0\n";
    };
    write_script(dir / "bin" / "cmake", log);
    write_script(dir / "bin" / "ctest", log + kWriteNamedFiles + "[[ \" $* \" == *' -L slow '* ]] && " +
                                            "printf '522: soak: 10000 of 100000 requests\\n522: soak: RSS 17.0 MiB\\n'\n" +
                                            exit_from("ctest_rc"));
    const std::string samebits = log + "scenario=$(basename \"${3:-x}\" .yaml)\n" + kWriteNamedFiles +
                                 "[[ $1 == info ]] && echo '" + cuda_info + "'\nexit 0\n";
    for (const char* preset : {"cpu", "cuda"}) {
      fs::create_directories(tree / "build" / preset / "harness");
      write_script(tree / "build" / preset / "harness" / "samebits", samebits);
    }
    write_script(tree / "ci" / "fuzz.sh", log + "mkdir -p \"$OUT\"; echo '| fuzz_golden | 100 |' > \"$OUT/summary.md\"\n" +
                                              exit_from("fuzz_rc"));
    write_script(tree / "ci" / "gpu_sanitizers.sh", log + "echo 'memcheck: 1 of 1 test cases clean' > \"$2/sanitizers.md\"\n");
  }
  ~Gate() { fs::remove_all(dir); }
  // The gate run from `cwd` with OUT `out` (as the caller writes it), the stand-ins first on PATH.
  Outcome run(const std::string& script, const fs::path& cwd, const std::string& out) const {
    return run_command("cd '" + cwd.string() + "' && PATH='" + (dir / "bin").string() + "':\"$PATH\" bash '" +
                       (tree / "ci" / script).string() + "' '" + out + "'");
  }
  // Every file ctest or samebits wrote that is not in `out`: none when OUT was honoured.
  std::string files_outside(const fs::path& out) const {
    std::string stray;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      const bool result = name.find(".xml") != std::string::npos || name.find(".json") != std::string::npos;
      if (e.is_regular_file() && result && e.path().parent_path() != out) stray += e.path().string() + "\n";
    }
    return stray;
  }
};

TEST(NightlyCpuScript, WritesEveryResultIntoARelativeOutAndSumsUpTheSoak) {
  Gate g;
  fs::create_directories(g.dir / "caller");
  const Outcome r = g.run("nightly_cpu.sh", g.dir / "caller", "results");
  const fs::path out = g.dir / "caller" / "results";
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  for (const char* file : {"ctest_determinism.xml", "ctest_slow.xml", "ctest_asan.xml", "feynman.json",
                           "feynman.junit.xml", "feynman_ci.json", "summary.md", "fuzz/summary.md"})
    EXPECT_TRUE(fs::exists(out / file)) << file << "\n" << r.out;
  EXPECT_EQ(g.files_outside(out), "");
  EXPECT_EQ(read_text(out / "soak.txt"), "soak: 10000 of 100000 requests\nsoak: RSS 17.0 MiB\n");
  const std::string summary = read_text(out / "summary.md");
  EXPECT_NE(summary.find("ctest -L determinism and golden checks: passed"), std::string::npos) << summary;
  EXPECT_NE(summary.find("## Engine soak\n\nslow label (the soak and the stress run): passed\n\n"
                         "    soak: 10000 of 100000 requests\n"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("# samebits: feynman passed"), std::string::npos) << summary;
  EXPECT_NE(summary.find("ASan + UBSan (every test but the slow and gpu labels): clean"), std::string::npos) << summary;
  EXPECT_NE(summary.find("Fuzzing: clean\n\n| fuzz_golden | 100 |"), std::string::npos) << summary;
  EXPECT_FALSE(fs::exists(g.tree / "results"));  // OUT is the caller's, not the repository's
  // ASan + UBSan over every test that runs without a GPU in a short time (the soak is the slow label's).
  EXPECT_NE(read_text(g.dir / "runs").find("ctest --test-dir build/asan -LE slow|gpu -j2"), std::string::npos);
}

TEST(NightlyCpuScript, AFailingStepFailsTheGateAndTheSummarySaysSo) {
  Gate g;
  testing::write_text(g.dir / "ctest_rc", "8\n");
  const fs::path out = g.dir / "out";
  const Outcome r = g.run("nightly_cpu.sh", g.dir, out.string());
  EXPECT_EQ(r.code, 8) << r.out << r.err;
  const std::string summary = read_text(out / "summary.md");
  EXPECT_NE(summary.find("ctest -L determinism and golden checks: FAILED (exit 8, determinism.log"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("slow label (the soak and the stress run): FAILED (exit 8, slow.log)"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("ASan + UBSan (every test but the slow and gpu labels): FAILED (exit 8"), std::string::npos)
      << summary;
}

// Each step's line says how that step went: a fuzzing failure fails the gate, and no other line.
TEST(NightlyCpuScript, AFuzzingFailureIsNamedAsFuzzingAlone) {
  Gate g;
  testing::write_text(g.dir / "fuzz_rc", "1\n");
  const fs::path out = g.dir / "out";
  const Outcome r = g.run("nightly_cpu.sh", g.dir, out.string());
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const std::string summary = read_text(out / "summary.md");
  EXPECT_NE(summary.find("ctest -L determinism and golden checks: passed"), std::string::npos) << summary;
  EXPECT_NE(summary.find("slow label (the soak and the stress run): passed"), std::string::npos) << summary;
  EXPECT_NE(summary.find("ASan + UBSan (every test but the slow and gpu labels): clean"), std::string::npos) << summary;
  EXPECT_NE(summary.find("Fuzzing: FAILED (exit 1, fuzz.log, fuzz/)"), std::string::npos) << summary;
}

TEST(NightlyGpuScript, WritesEveryResultIntoAnAbsoluteOut) {
  Gate g;
  const fs::path out = g.dir / "gpu-results";
  const Outcome r = g.run("nightly_gpu.sh", g.tree, out.string());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  for (const char* file : {"ctest.xml", "sanitizers.md", "feynman.json", "feynman_ci.junit.xml", "summary.md"})
    EXPECT_TRUE(fs::exists(out / file)) << file << "\n" << r.out;
  EXPECT_EQ(g.files_outside(out), "");
  EXPECT_EQ(read_text(out / "summary.md"), "# samebits: feynman passed\n");
  EXPECT_NE(read_text(g.dir / "runs").find("gpu_sanitizers.sh build/cuda/tests/gpu/gpu_tests " + out.string()),
            std::string::npos);
}

TEST(NightlyGpuScript, FailsWithoutACudaDevice) {
  Gate g("cuda: unavailable (no device)");
  const Outcome r = g.run("nightly_gpu.sh", g.dir, "out");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("no CUDA device: the GPU gate cannot pass without one"), std::string::npos) << r.out;
  EXPECT_EQ(read_text(g.dir / "runs").find("gpu_sanitizers.sh"), std::string::npos);  // nothing ran after
}

}  // namespace
}  // namespace samebits
