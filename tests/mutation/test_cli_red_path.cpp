// The red path of the command line, driven through the `samebits` subcommands (samebits_cli) with a
// planted fault registered as the scenario's backend: a planted variance source makes `run` and
// `golden check` exit 1 and `golden update` refuse (writing nothing); a default mode that lost its
// sight (the invariant plans in default mode) makes `golden update` refuse and `golden check` fail.
// Each against its inverse: the real CPU backend passes the same commands.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "harness/cli/commands.h"
#include "harness/golden/results.h"
#include "tests/mutation/detection.h"
#include "tests/mutation/mutants.h"

namespace samebits::testing {
namespace {

namespace fs = std::filesystem;

const char kBackendName[] = "red-path";

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Sandbox {
  fs::path dir;
  explicit Sandbox(const std::string& name)
      : dir(fs::temp_directory_path() / absl::StrCat("samebits_red_path_", name, "_", ::getpid())) {
    fs::remove_all(dir);
    fs::create_directories(dir / "golden");
  }
  ~Sandbox() { fs::remove_all(dir); }
  std::string golden_dir() const { return (dir / "golden").string(); }
};

cli::RunArgs args_for(const std::string& scenario, const std::string& golden_dir, const std::string& mode,
                      const Backend& backend) {
  register_backend(kBackendName, &backend);
  cli::RunArgs a;
  a.scenario = scenario;
  a.mode = mode;
  a.options.backend = kBackendName;
  a.options.threads = 2;
  a.golden_dir = golden_dir;
  return a;
}

std::string mutation_scenario() { return source_root() + "/scenarios/mutation.yaml"; }

// The mutation scenario in both modes, expecting default-mode divergence (the default).
std::string both_modes_scenario(const Sandbox& box) {
  std::string text = read_all(mutation_scenario());
  text = absl::StrReplaceAll(text, {{"name: mutation", "name: red_path"},
                                    {"modes: [invariant]", "modes: [default, invariant]"},
                                    {"expect_default_divergence: false", ""}});
  const std::string path = (box.dir / "red_path.yaml").string();
  std::ofstream(path) << text;
  return path;
}

TEST(CliRedPath, RunExitsOneWhenAPlantedSourceBreaksInvariance) {
  Sandbox box("run");
  cli::RunArgs a = args_for(mutation_scenario(), box.golden_dir(), "invariant", cpu_backend());
  a.json = (box.dir / "real.json").string();
  EXPECT_EQ(cli::run_command(a), cli::kExitPass);  // inverse: no golden, invariant holds
  a = args_for(mutation_scenario(), box.golden_dir(), "invariant",
               mutant_backend(cpu_backend(), VarianceSource::kAtomicOrder));
  a.json = (box.dir / "planted.json").string();
  EXPECT_EQ(cli::run_command(a), cli::kExitDiverged);
  auto r = read_results_file(a.json);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->modes[0].unique_logit_streams(), 1);
  register_backend(kBackendName, nullptr);
}

TEST(CliRedPath, GoldenCheckExitsOneAndNamesTheFirstDifferingStep) {
  Sandbox box("check");
  const std::string golden_dir = source_root() + "/golden";
  cli::RunArgs a = args_for(mutation_scenario(), golden_dir, "invariant", cpu_backend());
  EXPECT_EQ(cli::golden_check_command(a), cli::kExitPass);  // inverse
  a = args_for(mutation_scenario(), golden_dir, "invariant",
               mutant_backend(cpu_backend(), VarianceSource::kOneUlpInLargeBatch));
  a.json = (box.dir / "planted.json").string();
  EXPECT_EQ(cli::golden_check_command(a), cli::kExitDiverged);
  auto r = read_results_file(a.json);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->modes[0].golden.state, "mismatch");
  EXPECT_NE(r->modes[0].golden.detail.find("invariant: sample "), std::string::npos) << r->modes[0].golden.detail;
  EXPECT_NE(r->modes[0].golden.detail.find(" first differs at step "), std::string::npos) << r->modes[0].golden.detail;
  register_backend(kBackendName, nullptr);
}

TEST(CliRedPath, GoldenUpdateRefusesAPlantedSourceAndWritesNothing) {
  Sandbox box("update");
  const fs::path golden = box.dir / "golden" / "mutation" / "cpu.json";
  cli::RunArgs a = args_for(mutation_scenario(), box.golden_dir(), "invariant",
                            mutant_backend(cpu_backend(), VarianceSource::kAtomicOrder));
  EXPECT_EQ(cli::golden_update_command(a), cli::kExitDiverged);
  EXPECT_FALSE(fs::exists(golden));
  a = args_for(mutation_scenario(), box.golden_dir(), "invariant", cpu_backend());
  EXPECT_EQ(cli::golden_update_command(a), cli::kExitPass);  // inverse
  EXPECT_TRUE(fs::exists(golden));
  register_backend(kBackendName, nullptr);
}

TEST(CliRedPath, DefaultModeThatCannotSeeVarianceIsRefusedAndFailsTheCheck) {
  Sandbox box("blind");
  const std::string scenario = both_modes_scenario(box);
  const fs::path golden = box.dir / "golden" / "red_path" / "cpu.json";
  // Inverse first: the real backend's default mode diverges here, so its golden is written.
  cli::RunArgs a = args_for(scenario, box.golden_dir(), "", cpu_backend());
  ASSERT_EQ(cli::golden_update_command(a), cli::kExitPass);
  ASSERT_TRUE(fs::exists(golden));
  EXPECT_EQ(cli::golden_check_command(a), cli::kExitPass);
  const std::string recorded = read_all(golden.string());
  // Blind: default mode runs the invariant plans and shows one logit stream.
  a = args_for(scenario, box.golden_dir(), "", blind_backend(cpu_backend()));
  a.json = (box.dir / "blind.json").string();
  EXPECT_EQ(cli::golden_update_command(a), cli::kExitDiverged);
  EXPECT_EQ(read_all(golden.string()), recorded);  // nothing written
  EXPECT_EQ(cli::golden_check_command(a), cli::kExitDiverged);
  auto r = read_results_file(a.json);
  ASSERT_TRUE(r.ok()) << r.status();
  const ModeResult* d = r->find(Mode::kDefault);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->unique_logit_streams(), 1);
  register_backend(kBackendName, nullptr);
}

}  // namespace
}  // namespace samebits::testing
