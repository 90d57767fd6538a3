// The golden store: schema round trip, atomic writes, pass / mismatch (naming mode, sample and
// first differing step) / not comparable / none, and one-line errors for malformed files.
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "harness/golden/digest.h"
#include "harness/golden/golden_store.h"
#include "tests/golden/synthetic_results.h"

namespace samebits {
namespace {

namespace fs = std::filesystem;
using testing::synthetic_results;

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("samebits_golden_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(GoldenStore, RoundTripThroughFile) {
  const fs::path dir = temp_dir("roundtrip");
  RunResults r = synthetic_results(16, {{3, 6}, {11, 2}});
  Golden g = golden_from_results(r);
  const std::string path = golden_path(dir.string(), g.scenario, "cpu");
  EXPECT_EQ(path, (dir / "synthetic" / "cpu.json").string());
  ASSERT_TRUE(write_golden(g, path).ok());
  auto back = read_golden(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ(golden_to_json(**back).dump(), golden_to_json(g).dump());
  const GoldenMode* m = (*back)->find(Mode::kDefault);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->expected.size(), 3u);
  EXPECT_EQ(m->sample_digests.size(), 16u);
  EXPECT_EQ(m->forks.size(), 2u);
  EXPECT_EQ(m->main_completion_text.substr(0, 7), "Richard");
  fs::remove_all(dir);
}

TEST(GoldenStore, InvariantGoldenHoldsOneCompletionDigest) {
  RunResults r = synthetic_results(5, {}, Mode::kInvariant);
  nlohmann::json j = golden_to_json(golden_from_results(r));
  ASSERT_TRUE(j["modes"]["invariant"].contains("completion_digest"));
  EXPECT_EQ(j["modes"]["invariant"]["expected"].size(), 1u);
  EXPECT_EQ(j["modes"]["invariant"]["expected"][j["modes"]["invariant"]["completion_digest"].get<std::string>()], 5);
}

TEST(GoldenStore, WriteIsAtomicAndLeavesNoTemporaryFiles) {
  const fs::path dir = temp_dir("atomic");
  const std::string path = (dir / "s" / "cpu.json").string();
  ASSERT_TRUE(write_golden(golden_from_results(synthetic_results(4, {})), path).ok());
  ASSERT_TRUE(write_golden(golden_from_results(synthetic_results(4, {{1, 2}})), path).ok());
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir / "s")) {
    ++files;
    EXPECT_EQ(e.path().filename(), "cpu.json");
  }
  EXPECT_EQ(files, 1);
  auto back = read_golden(path);
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ((*back)->modes[0].expected.size(), 2u);  // the second write, whole

  // A write that cannot happen (the target is a folder) fails and leaves no temporary file.
  fs::create_directories(dir / "t" / "cpu.json");
  EXPECT_FALSE(write_golden(golden_from_results(synthetic_results(4, {})), (dir / "t" / "cpu.json").string()).ok());
  for (const auto& e : fs::directory_iterator(dir / "t")) EXPECT_EQ(e.path().filename(), "cpu.json");
  fs::remove_all(dir);
}

TEST(GoldenStore, SameRunPasses) {
  RunResults r = synthetic_results(8, {{2, 3}});
  std::optional<Golden> g = golden_from_results(r);
  EXPECT_TRUE(check_against_golden(g, &r));
  EXPECT_EQ(r.modes[0].golden.state, "pass");
}

TEST(GoldenStore, MismatchNamesModeSampleAndFirstDifferingStep) {
  std::optional<Golden> g = golden_from_results(synthetic_results(8, {{2, 3}}));
  RunResults run = synthetic_results(8, {{2, 3}, {5, 9}});
  EXPECT_FALSE(check_against_golden(g, &run));
  EXPECT_EQ(run.modes[0].golden.state, "mismatch");
  EXPECT_NE(run.modes[0].golden.detail.find("default: sample 5 first differs at step 9"), std::string::npos)
      << run.modes[0].golden.detail;
  EXPECT_NE(run.modes[0].golden.detail.find("1 of 8 samples differ"), std::string::npos);
}

// Default mode depends on the whole run identity; each differing field is named.
TEST(GoldenStore, DefaultModeDependsOnTheWholeIdentity) {
  const RunResults base = synthetic_results(6, {});
  std::optional<Golden> g = golden_from_results(base);
  struct Case {
    std::string name;
    void (*mutate)(RunResults*);
    std::string expect;
  };
  const Case cases[] = {
      {"weights", [](RunResults* r) { r->identity.model.weights_digest ^= 1; }, "model.weights_digest differs"},
      {"kernels", [](RunResults* r) { r->identity.backend.kernel_set_version += 1; },
       "backend.kernel_set_version differs (golden 1, run 2)"},
      {"backend", [](RunResults* r) { r->identity.backend.id = "cuda-sm100"; },
       "backend.id differs (golden 'cuda-sm90', run 'cuda-sm100')"},
      {"targets", [](RunResults* r) { r->identity.scenario.target_hash ^= 1; }, "scenario.target_hash differs"},
      {"scenario", [](RunResults* r) { r->identity.scenario.file_hash ^= 1; }, "scenario.file_hash differs"},
      {"gpu model", [](RunResults* r) { r->identity.backend.device.name = "NVIDIA H100 80GB HBM3"; },
       "backend.device.name differs (golden 'NVIDIA H200', run 'NVIDIA H100 80GB HBM3')"},
      {"sm count", [](RunResults* r) { r->identity.backend.device.sm_count = 114; },
       "backend.device.sm_count differs (golden 132, run 114)"},
      {"runtime", [](RunResults* r) { r->identity.backend.device.cuda_runtime = "13.1"; },
       "backend.device.cuda_runtime differs"},
      {"cublaslt", [](RunResults* r) { r->identity.backend.device.cublaslt = "13.2.0"; },
       "backend.device.cublaslt differs (golden '13.1.0', run '13.2.0')"},
      {"engine", [](RunResults* r) { r->identity.engine.parallel_units = 8; },
       "engine.parallel_units differs (golden 132, run 8)"},
      {"model spec", [](RunResults* r) { r->identity.model.spec = "other"; }, "model.spec differs"},
      {"schedule", [](RunResults* r) { r->modes[0].figures.schedule_digest ^= 1; }, "scheduled the seeded workload differently"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RunResults run = synthetic_results(6, {{1, 1}});  // would be a mismatch if comparable
    c.mutate(&run);
    EXPECT_TRUE(check_against_golden(g, &run));
    EXPECT_EQ(run.modes[0].golden.state, "not comparable");
    EXPECT_NE(run.modes[0].golden.detail.find(c.expect), std::string::npos) << run.modes[0].golden.detail;
  }
  // The inverse: names, descriptions and the thread count are not compared.
  RunResults same = synthetic_results(6, {});
  same.identity.scenario.file = "elsewhere/synthetic.yaml";
  same.identity.backend.description = "other words";
  same.identity.threads = 7;
  EXPECT_TRUE(check_against_golden(g, &same));
  EXPECT_EQ(same.modes[0].golden.state, "pass") << same.modes[0].golden.detail;
}

// Invariant mode depends only on what can change invariant bits: weights, kernel set, backend
// architecture, the target requests and their count.
TEST(GoldenStore, InvariantModeDependsOnlyOnWhatCanChangeInvariantBits) {
  std::optional<Golden> g = golden_from_results(synthetic_results(4, {}, Mode::kInvariant));
  RunResults other_machine = synthetic_results(4, {}, Mode::kInvariant);
  RunIdentity& id = other_machine.identity;
  id.backend.device = {"NVIDIA H100 80GB HBM3", 132, "13.1", "13.2.0"};
  id.scenario.file_hash ^= 1;  // e.g. other background traffic
  id.engine.block_size = 32;
  id.engine.parallel_units = 8;
  id.model.spec = "checkpoint/elsewhere";
  EXPECT_EQ(check_mode(g, other_machine, other_machine.modes[0]).state, "pass");
  RunResults bad = other_machine;
  bad.modes = synthetic_results(4, {{2, 1}}, Mode::kInvariant).modes;
  EXPECT_EQ(check_mode(g, bad, bad.modes[0]).state, "mismatch");
  for (auto mutate : std::vector<void (*)(RunIdentity*)>{
           [](RunIdentity* i) { i->model.weights_digest ^= 1; }, [](RunIdentity* i) { i->backend.kernel_set_version++; },
           [](RunIdentity* i) { i->backend.id = "cpu"; }, [](RunIdentity* i) { i->scenario.target_hash ^= 1; }}) {
    RunResults run = synthetic_results(4, {}, Mode::kInvariant);
    mutate(&run.identity);
    EXPECT_EQ(check_mode(g, run, run.modes[0]).state, "not comparable");
  }
}

TEST(GoldenStore, InvariantModeIsComparableUnderAnySchedule) {
  std::optional<Golden> g = golden_from_results(synthetic_results(4, {}, Mode::kInvariant));
  RunResults run = synthetic_results(4, {}, Mode::kInvariant);
  run.modes[0].figures.schedule_digest ^= 1;
  EXPECT_EQ(check_mode(g, run, run.modes[0]).state, "pass");
  RunResults bad = synthetic_results(4, {{2, 1}}, Mode::kInvariant);
  bad.modes[0].figures.schedule_digest ^= 1;
  EXPECT_EQ(check_mode(g, bad, bad.modes[0]).state, "mismatch");
}

TEST(GoldenStore, NoGoldenOrNoModeIsNone) {
  RunResults run = synthetic_results(3, {});
  EXPECT_EQ(check_mode(std::nullopt, run, run.modes[0]).state, "none");
  std::optional<Golden> other = golden_from_results(synthetic_results(3, {}, Mode::kInvariant));
  EXPECT_EQ(check_mode(other, run, run.modes[0]).state, "none");
}

TEST(GoldenStore, LiveInvariantRunIsCheckedAgainstTheOneDigest) {
  std::optional<Golden> g = golden_from_results(synthetic_results(4, {}, Mode::kInvariant));
  RunResults live = synthetic_results(4, {}, Mode::kInvariant);
  live.identity.live = true;
  EXPECT_EQ(check_mode(g, live, live.modes[0]).state, "pass");
  RunResults live_bad = synthetic_results(4, {{3, 5}}, Mode::kInvariant);
  live_bad.identity.live = true;
  GoldenStatus s = check_mode(g, live_bad, live_bad.modes[0]);
  EXPECT_EQ(s.state, "mismatch");
  EXPECT_NE(s.detail.find("invariant: sample 3 first differs at step 5"), std::string::npos) << s.detail;
}

struct MalformedCase {
  std::string name;
  void (*mutate)(nlohmann::json*);
  std::string expect;  // after "<file>: "
};

TEST(GoldenStore, MalformedFilesGiveOneLineNamingFileAndField) {
  const MalformedCase cases[] = {
      {"schema", [](nlohmann::json* j) { (*j)["samebits_golden"] = 99; }, "samebits_golden: 99 is not a known golden schema"},
      {"no identity", [](nlohmann::json* j) { j->erase("identity"); }, "identity: missing"},
      {"bad weights", [](nlohmann::json* j) { (*j)["identity"]["model"]["weights_digest"] = "xyz"; },
       "identity.model.weights_digest: 'xyz' is not a digest"},
      {"kernel type", [](nlohmann::json* j) { (*j)["identity"]["backend"]["kernel_set_version"] = "one"; },
       "identity.backend.kernel_set_version: \"one\" is not an integer"},
      {"no device", [](nlohmann::json* j) { (*j)["identity"]["backend"].erase("device"); },
       "identity.backend.device: missing"},
      {"sm count", [](nlohmann::json* j) { (*j)["identity"]["backend"]["device"]["sm_count"] = "many"; },
       "identity.backend.device.sm_count: \"many\" is not an integer"},
      {"bad mode", [](nlohmann::json* j) { (*j)["modes"]["fast"] = nlohmann::json::object(); }, "modes.fast: is not a mode"},
      {"count", [](nlohmann::json* j) { (*j)["modes"]["default"]["expected"].begin().value() = -2; },
       "modes.default.expected."},
      {"sample list", [](nlohmann::json* j) { (*j)["modes"]["default"]["sample_digests"] = "00"; },
       "modes.default.sample_digests: is not a list"},
      {"sample count", [](nlohmann::json* j) { (*j)["modes"]["default"]["samples"] = 7; },
       "modes.default.sample_digests: holds 6 digests for 7 samples"},
      {"forks", [](nlohmann::json* j) { (*j)["modes"]["default"]["fork_statistics"]["forks"] = 3; },
       "modes.default.fork_statistics.forks: 3 is not an array"},
  };
  const fs::path dir = temp_dir("malformed");
  const nlohmann::json good = golden_to_json(golden_from_results(synthetic_results(6, {{2, 2}})));
  for (const MalformedCase& c : cases) {
    SCOPED_TRACE(c.name);
    nlohmann::json j = good;
    c.mutate(&j);
    const std::string path = (dir / "bad.json").string();
    std::ofstream(path) << j.dump();
    auto g = read_golden(path);
    ASSERT_FALSE(g.ok());
    const std::string msg(g.status().message());
    EXPECT_EQ(msg.rfind(path + ": " + c.expect, 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  const std::string path = (dir / "syntax.json").string();
  std::ofstream(path) << "{\"samebits_golden\": 1,";
  auto g = read_golden(path);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find(path + ": (syntax): not valid JSON"), std::string::npos) << g.status();
  // An absent file is not an error: there is simply no golden.
  auto none = read_golden((dir / "absent.json").string());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace samebits
